"""The Slurm CLI backend without a Slurm: captured outputs of a real 22.05 cluster
(tests/data/slurm/, made by slurm-scripts/local-cluster.sh), argument building, OOM rules,
retries, timeouts and garbage."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

import pytest

from asad.slurm.backend import (
    Dependency,
    DependencyType,
    JobRequest,
    JobState,
    JobStatus,
    SlurmUnavailable,
    SubmitRejected,
    UnknownJob,
    Usage,
)
from asad.slurm.cli import SlurmCLI, batch_script, format_time_limit, is_oom, parse_show_config, sbatch_args
from asad.slurm.runner import CommandResult, RetryPolicy, SlurmCommands, is_transient
from asad.slurm.slurm_text import (
    SEP,
    SlurmParseError,
    map_state,
    parse_clock_s,
    parse_exit_code,
    parse_mem_mb,
    parse_sacct,
    parse_sbatch_parsable,
    parse_scontrol_jobs,
    parse_sinfo_partitions,
    parse_squeue,
    parse_test_only,
    parse_time,
)

DATA = Path(__file__).parent / "data" / "slurm"
# Job ids in the captures: 14 ran 60 s, 15 afterok:14, 16 exit 3, 17 OOM (--mem=100M, 300 MB
# allocated), 18 timeout (-t 1), 19 --begin in 10 min (name "cap name|with bar"), 20 cancelled
# while running, 21 -N 2 -n 4 -c 2 --mem-per-cpu=200M with an srun step.


def read(name: str) -> str:
    return (DATA / name).read_text()


class FakeRunner:
    """Answers each command from a queue of results (or exceptions) and records every call."""

    def __init__(self, answers: dict[str, list]):
        self.answers = {k: list(v) for k, v in answers.items()}
        self.calls: list[tuple[tuple[str, ...], str | None, dict]] = []

    def __call__(self, argv, stdin, timeout_s, env):
        self.calls.append((tuple(argv), stdin, dict(env)))
        queue = self.answers.get(Path(argv[0]).name)
        if not queue:
            raise AssertionError(f"unexpected call: {argv}")
        answer = queue.pop(0) if len(queue) > 1 else queue[0]
        if isinstance(answer, BaseException):
            raise answer
        if isinstance(answer, tuple):
            rc, out, err = answer
            return CommandResult(tuple(argv), rc, out, err)
        return CommandResult(tuple(argv), 0, answer, "")

    def argv_of(self, command: str) -> list[tuple[str, ...]]:
        return [c[0] for c in self.calls if Path(c[0][0]).name == command]


def backend(answers: dict[str, list], accounting: bool | None = True, **kw) -> tuple[SlurmCLI, FakeRunner, list]:
    runner = FakeRunner(answers)
    sleeps: list[float] = []
    b = SlurmCLI(runner=runner, accounting=accounting, sleep=sleeps.append, **kw)
    return b, runner, sleeps


# ------------------------------------------------------------------ captured outputs -----------
def test_squeue_capture_live_jobs():
    jobs = parse_squeue(read("squeue_mixed.txt"))
    assert set(jobs) == set(range(14, 22))
    run, dep, begin = jobs[14], jobs[15], jobs[19]
    assert run.state is JobState.RUNNING and run.start_time == 1795262388 and run.end_time is None
    assert run.comment == "asad:wf=cap;stage=run;attempt=1" and run.nodelist == "n1" and run.alloc_cpus == 1
    assert run.time_limit_s == 300
    # pending on a dependency: no eligible time yet, no start, nothing allocated
    assert dep.state is JobState.PENDING and dep.reason == "Dependency"
    assert dep.eligible_time is None and dep.start_time is None and dep.alloc_cpus == 0
    # pending on --begin: eligible is the begin time; squeue's StartTime is a forecast, dropped
    assert begin.reason == "BeginTime" and begin.eligible_time == 1795262987 and begin.start_time is None
    assert begin.name == "cap name|with bar"  # a '|' in a name does not shift the columns
    assert jobs[16].state is JobState.FAILED and jobs[16].reason == "NonZeroExitCode"
    assert jobs[20].state is JobState.CANCELLED
    assert jobs[21].alloc_nodes == 2 and jobs[21].alloc_cpus == 8 and jobs[21].nodelist == "n[1-2]"
    assert jobs[14].wait_s == 1.0


def test_sacct_capture_states_usage_and_oom():
    recs = parse_sacct(read("sacct_mixed.txt"))
    assert set(recs) == set(range(14, 22))
    oom = recs[17]
    assert oom.status.state is JobState.FAILED and oom.status.signal == 9 and oom.status.exit_code == 0
    assert oom.usage.peak_rss_mb == pytest.approx(314.5)
    assert oom.req_mem_per_node_mb == 100
    assert is_oom(oom.status, oom.usage, oom.req_mem_per_node_mb)
    fail = recs[16]
    assert fail.status.exit_code == 3 and fail.status.signal is None
    assert not is_oom(fail.status, fail.usage, fail.req_mem_per_node_mb)
    assert recs[18].status.state is JobState.TIMEOUT
    assert recs[20].status.state is JobState.CANCELLED  # "CANCELLED by 0"
    pending = recs[19].status
    assert pending.state is JobState.PENDING and pending.start_time is None and pending.end_time is None
    assert pending.name == "cap name|with bar"
    big = recs[21]
    # ReqMem is the total (8 cpus x 200M over 2 nodes); MaxRSS the largest of the steps
    assert big.usage.req_mem_mb == 1600 and big.req_mem_per_node_mb == 800
    assert big.usage.peak_rss_mb == pytest.approx(10596 / 1024)
    assert big.usage.total_cpu_s == pytest.approx(0.028) and big.usage.elapsed_s == 2
    assert recs[14].usage.elapsed_s == 60 and recs[14].status.time_limit_s == 300
    # a dependency job's eligible time is when the dependency was met
    assert recs[15].status.eligible_time == 1795262449 and recs[15].status.wait_s == 0


def test_scontrol_capture():
    jobs = parse_scontrol_jobs(read("scontrol_jobs.txt"))
    assert {14, 15, 16, 17, 18, 19, 20, 21} <= set(jobs)
    assert jobs[16].exit_code == 3
    assert jobs[17].state is JobState.FAILED and jobs[17].signal == 9
    assert jobs[18].state is JobState.TIMEOUT
    assert jobs[14].comment == "asad:wf=cap;stage=run;attempt=1"


def test_sinfo_capture():
    parts = {p.name: p for p in parse_sinfo_partitions(read("sinfo.txt"))}
    assert parts["main"].default and not parts["short"].default
    assert parts["main"].nodes == 4 and parts["main"].cpus_per_node == 8 and parts["main"].mem_per_node_mb == 16000
    assert parts["main"].max_time_s is None and parts["short"].max_time_s == 7200


def test_sinfo_sums_nodes_over_states():
    text = f"main*{SEP}28{SEP}32000{SEP}3{SEP}infinite\nmain*{SEP}28+{SEP}16000+{SEP}1{SEP}infinite\n"
    (p,) = parse_sinfo_partitions(text)
    assert p.nodes == 4 and p.cpus_per_node == 28 and p.mem_per_node_mb == 16000 and p.total_cpus == 112


# ------------------------------------------------------------------ scalar parsers -------------
@pytest.mark.parametrize("text,expected", [("1795262388", 1795262388.0), ("Unknown", None), ("N/A", None),
                                           ("None", None), ("", None)])
def test_parse_time(text, expected):
    assert parse_time(text) == expected


def test_parse_time_iso_is_local_time():
    assert parse_time("2026-11-21T11:55:28") == time.mktime(time.strptime("2026-11-21T11:55:28", "%Y-%m-%dT%H:%M:%S"))
    with pytest.raises(ValueError):
        parse_time("yesterday")


@pytest.mark.parametrize("text,expected", [("00:00.004", 0.004), ("05:00", 300), ("1:00:00", 3600),
                                           ("2-03:04:05", 2 * 86400 + 3 * 3600 + 245), ("365-00:00:00", 365 * 86400),
                                           ("UNLIMITED", None), ("Partition_Limit", None), ("1-02", 93600)])
def test_parse_clock(text, expected):
    assert parse_clock_s(text) == pytest.approx(expected) if expected is not None else parse_clock_s(text) is None


@pytest.mark.parametrize("text,expected", [("262380K", 262380 / 1024), ("314.50M", 314.5), ("2G", 2048),
                                           ("0", 0.0), ("", None), ("16000Mn", 16000)])
def test_parse_mem(text, expected):
    assert parse_mem_mb(text) == (pytest.approx(expected) if expected is not None else None)


def test_parse_exit_code():
    assert parse_exit_code("0:9") == (0, 9)
    assert parse_exit_code("3:0") == (3, None)
    assert parse_exit_code("") == (None, None)


def test_map_state():
    assert map_state("CANCELLED by 1000") is JobState.CANCELLED
    assert map_state("OUT_OF_ME+") is JobState.OUT_OF_MEMORY
    assert map_state("COMPLETING") is JobState.RUNNING
    with pytest.raises(ValueError):
        map_state("EXPLODED")


def test_sbatch_parsable_and_test_only():
    assert parse_sbatch_parsable("123\n") == 123
    assert parse_sbatch_parsable("123;cluster\n") == 123
    with pytest.raises(SlurmParseError, match="sbatch"):
        parse_sbatch_parsable("Submitted batch job\n")
    line = "sbatch: Job 5 to start at 1795262234 using 2 processors on nodes n1 in partition main"
    assert parse_test_only(line) == 1795262234
    with pytest.raises(SlurmParseError, match="test-only"):
        parse_test_only("sbatch: nothing to say")


# ------------------------------------------------------------------ garbage ---------------------
def test_garbage_names_command_and_output():
    with pytest.raises(SlurmParseError) as err:
        parse_squeue("this is not squeue output\n", "squeue --jobs=1")
    assert "squeue --jobs=1" in str(err.value) and "this is not squeue output" in str(err.value)
    bad_state = read("squeue_mixed.txt").replace("RUNNING", "WIBBLE")
    with pytest.raises(SlurmParseError, match="WIBBLE"):
        parse_squeue(bad_state)
    with pytest.raises(SlurmParseError, match="sacct"):
        parse_sacct(f"1{SEP}2\n")
    with pytest.raises(SlurmParseError):
        parse_scontrol_jobs("Nonsense line without keys\n")
    assert isinstance(SlurmParseError("x", "y", "z"), SlurmUnavailable)  # transient: retried later


def test_poll_garbage_raises_slurm_unavailable_subclass():
    b, _, _ = backend({"squeue": ["<html>proxy error</html>\n"]})
    with pytest.raises(SlurmUnavailable, match="proxy error"):
        b.poll([1])


# ------------------------------------------------------------------ arguments -------------------
def full_request(**kw) -> JobRequest:
    base = dict(name="asad.wf7.mAdd.a2", command="echo hi", comment="asad:wf=7;stage=mAdd;attempt=2",
                partition="main,short", account="proj", qos="normal", nodes=2, ntasks=4, cpus_per_task=3,
                mem_mb=2048, time_limit_s=5400, dependency=Dependency(DependencyType.AFTEROK, (11, 12)),
                begin=time.mktime((2030, 1, 2, 3, 4, 5, 0, 0, -1)), workdir="/w", output="/w/o.log",
                error="/w/e.log", env={"B_VAR": "x,y z", "A_VAR": "1"})
    base.update(kw)
    return JobRequest(**base)


def test_sbatch_args_full():
    args = sbatch_args(full_request())
    assert args == [
        "--job-name=asad.wf7.mAdd.a2", "--comment=asad:wf=7;stage=mAdd;attempt=2", "--partition=main,short",
        "--account=proj", "--qos=normal", "--nodes=2", "--ntasks=4", "--cpus-per-task=3", "--mem=2048M",
        "--time=0-01:30:00", "--dependency=afterok:11:12", "--begin=2030-01-02T03:04:05", "--chdir=/w",
        "--output=/w/o.log", "--error=/w/e.log", "--export=ALL,A_VAR,B_VAR"]


def test_sbatch_args_mem_per_cpu_after_offset_and_minimal():
    args = sbatch_args(JobRequest(name="n", command="true", mem_per_cpu_mb=300,
                                  dependency=Dependency(DependencyType.AFTER, (5,), offset_min=7)))
    assert "--mem-per-cpu=300M" in args and "--dependency=after:5+7" in args
    assert not any(a.startswith(("--mem=", "--partition", "--comment", "--begin")) for a in args)
    assert args[-1] == "--export=ALL"
    with pytest.raises(SubmitRejected, match="only one"):
        sbatch_args(JobRequest(name="n", command="true", mem_mb=1, mem_per_cpu_mb=1))
    with pytest.raises(SubmitRejected, match="environment"):
        sbatch_args(JobRequest(name="n", command="true", env={"BAD NAME": "1"}))


def test_time_limit_format():
    assert format_time_limit(30) == "0-00:01:00"  # Slurm's granularity is a minute
    assert format_time_limit(90061) == "1-01:01:01"


def test_batch_script():
    assert batch_script(JobRequest(name="n", command="echo a; echo b")) == "#!/bin/bash\necho a; echo b\n"
    script = "#!/bin/sh\n#SBATCH --foo\necho x\n"
    assert batch_script(JobRequest(name="n", command=script)) == script


# ------------------------------------------------------------------ submit ----------------------
def test_submit_passes_script_on_stdin_and_env_in_process_env():
    b, runner, _ = backend({"sbatch": ["4242\n"]})
    assert b.submit(full_request()) == 4242
    argv, stdin, env = runner.calls[0]
    assert argv[:2] == ("sbatch", "--parsable") and stdin == "#!/bin/bash\necho hi\n"
    assert env["B_VAR"] == "x,y z" and env["SLURM_TIME_FORMAT"] == "%s"
    assert b.calls["sbatch"] == 1


def test_submit_rejected_keeps_slurm_message_verbatim():
    err = ("sbatch: error: invalid partition specified: nope\n"
           "sbatch: error: Batch job submission failed: Invalid partition name specified\n")
    b, runner, _ = backend({"sbatch": [(1, "", err)]})
    with pytest.raises(SubmitRejected) as exc:
        b.submit(JobRequest(name="n", command="true", partition="nope"))
    assert exc.value.slurm_message == err.strip()
    assert "Invalid partition name specified" in str(exc.value)
    assert len(runner.calls) == 1  # a refusal is not retried


def test_dependency_problem_is_unknown_job():
    b, _, _ = backend({"sbatch": [(1, "", "sbatch: error: Batch job submission failed: Job dependency problem\n")]})
    with pytest.raises(UnknownJob, match="dependency"):
        b.submit(JobRequest(name="n", command="true", dependency=Dependency(DependencyType.AFTEROK, (9,))))


def test_submit_retries_socket_timeout_with_backoff_then_succeeds():
    timeout = (1, "", "sbatch: error: Batch job submission failed: Socket timed out on send/recv operation\n")
    b, runner, sleeps = backend({"sbatch": [timeout, timeout, "77\n"], "squeue": [""]})
    assert b.submit(JobRequest(name="n", command="true", comment="tag")) == 77
    assert sleeps == [1.0, 2.0]
    assert b.calls["sbatch"] == 3 and b.calls["squeue"] == 2  # looked for a half-made job before each retry


def test_submit_retry_finds_job_the_timed_out_call_created():
    timeout = (1, "", "sbatch: error: Batch job submission failed: Socket timed out on send/recv operation\n")
    now = time.time()
    line = SEP.join(["88", "PENDING", "Priority", "n", "tag", "main", str(int(now)), str(int(now)), "N/A", "N/A",
                     "1", "1", "", "1:00:00"]) + SEP + "\n"
    b, runner, _ = backend({"sbatch": [timeout, "99\n"], "squeue": [line]})
    assert b.submit(JobRequest(name="n", command="true", comment="tag")) == 88
    assert b.calls["sbatch"] == 1  # not sent twice
    assert any("--name=n" in a for a in runner.argv_of("squeue")[0])


def test_unavailable_after_retries():
    down = (1, "", "slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n")
    b, runner, sleeps = backend({"squeue": [down]}, retries=3, backoff_s=0.5, backoff_max_s=1.5)
    with pytest.raises(SlurmUnavailable, match="Unable to contact slurm controller"):
        b.poll([1, 2])
    assert b.calls["squeue"] == 4 and sleeps == [0.5, 1.0, 1.5]


def test_timeout_is_retried_then_unavailable():
    b, _, sleeps = backend({"sacct": [subprocess.TimeoutExpired("sacct", 30)]}, retries=2)
    with pytest.raises(SlurmUnavailable, match="no answer within 30 s"):
        b.find("asad-tag")
    assert b.calls["sacct"] == 3 and len(sleeps) == 2


def test_missing_binary_is_unavailable_without_retry():
    b, _, sleeps = backend({"squeue": [FileNotFoundError(2, "No such file", "squeue")]})
    with pytest.raises(SlurmUnavailable, match="not found"):
        b.poll([1])
    assert sleeps == []


@pytest.mark.parametrize("text", ["Socket timed out on send/recv operation", "Connection refused",
                                  "sacct: error: Problem talking to the database: Connection refused",
                                  "Zero Bytes were transmitted or received"])
def test_transient_patterns(text):
    assert is_transient(text)


def test_permanent_is_not_transient():
    assert not is_transient("Batch job submission failed: Invalid account or account/partition combination")


# ------------------------------------------------------------------ poll ------------------------
def _squeue_lines(*ids: int, name: str = "squeue_ended.txt") -> str:
    keep = [ln for ln in read(name).splitlines() if ln.split(SEP)[0] in {str(i) for i in ids}]
    return "\n".join(keep) + "\n"


def test_poll_live_jobs_costs_one_squeue():
    b, runner, _ = backend({"squeue": [_squeue_lines(14, 15, name="squeue_mixed.txt")]})
    out = b.poll([15, 14, 14])
    assert set(out) == {14, 15} and out[14].state is JobState.RUNNING
    assert dict(b.calls) == {"squeue": 1}
    argv = runner.argv_of("squeue")[0]
    assert "--jobs=14,15" in argv and "--states=all" in argv


def test_poll_finished_jobs_use_one_sacct_and_map_oom():
    b, runner, _ = backend({"squeue": [_squeue_lines(14, 16, 17)], "sacct": [read("sacct_mixed.txt")]})
    out = b.poll([14, 16, 17])
    assert out[17].state is JobState.OUT_OF_MEMORY and out[17].signal == 9
    assert out[16].state is JobState.FAILED and out[16].exit_code == 3
    assert out[14].state is JobState.COMPLETED and out[14].exit_code == 0
    assert dict(b.calls) == {"squeue": 1, "sacct": 1}
    assert "--jobs=14,16,17" in runner.argv_of("sacct")[0]



def test_usage_right_after_the_poll_that_saw_the_ends_reads_its_sacct():
    """The runner asks for the usage of the jobs a poll saw end: the records that poll fetched
    serve, so a poll stays one squeue and one sacct. Records older than a few seconds, or of other
    jobs, are fetched again."""
    now = [1_795_262_500.0]
    b, _, _ = backend({"squeue": [_squeue_lines(14, 16, 17)] * 2, "sacct": [read("sacct_mixed.txt")] * 3},
                      clock=lambda: now[0])
    b.poll([14, 16, 17])
    use = b.usage([14, 17])
    assert dict(b.calls) == {"squeue": 1, "sacct": 1}
    assert use[17].peak_rss_mb and use[14].elapsed_s is not None
    now[0] += 60.0
    assert b.usage([14, 17]) == use
    assert b.calls["sacct"] == 2
    b.poll([14, 16, 17])
    b.usage([14, 99])  # 99 was not in that poll's sacct
    assert b.calls["sacct"] == 4

def test_poll_forgotten_ids_go_to_sacct():
    b, _, _ = backend({"squeue": [(1, "", "slurm_load_jobs error: Invalid job id specified\n")],
                       "sacct": [read("sacct_mixed.txt")]})
    out = b.poll([18, 99999])
    assert set(out) == {18} and out[18].state is JobState.TIMEOUT


def test_poll_without_accounting_uses_scontrol():
    b, _, _ = backend({"squeue": [_squeue_lines(16, 17)], "scontrol": [read("scontrol_jobs.txt")]},
                      accounting=False)
    out = b.poll([16, 17])
    assert out[16].exit_code == 3 and out[17].signal == 9
    assert out[17].state is JobState.FAILED  # no MaxRSS without accounting: never guessed as OOM
    assert dict(b.calls) == {"squeue": 1, "scontrol": 1}
    assert any("MaxRSS" in note for note in b.limitations)



def test_poll_while_slurmdbd_is_down_takes_the_ends_from_scontrol():
    """sacct failing while squeue answers is slurmdbd down, not Slurm down: the ends slurmctld
    still knows come from scontrol, the run times too, and a signal-9 death waits for sacct to
    tell OOM from any other kill (however long), instead of every workflow stalling."""
    down = (1, "", "sacct: error: Problem talking to the database: Connection refused\n")
    b, runner, _ = backend({"squeue": [_squeue_lines(16, 17)], "scontrol": [read("scontrol_jobs.txt")],
                            "sacct": [down]}, clock=lambda: 1_795_262_500.0 + 3600)
    out = b.poll([16, 17])
    assert out[16].state is JobState.FAILED and out[16].exit_code == 3
    assert out[17].state is JobState.RUNNING and out[17].reason == "AccountingPending"  # an hour after its end
    use = b.usage([16])
    assert use[16].elapsed_s is not None and use[16].peak_rss_mb is None
    assert b.calls["sacct"] == 5 + 1  # retried in the first poll; once known down, one attempt
    runner.answers["sacct"] = [read("sacct_mixed.txt")]
    assert b.poll([16, 17])[17].state is JobState.OUT_OF_MEMORY  # slurmdbd back: the verdict

def test_accounting_detected_from_scontrol_show_config():
    b, _, _ = backend({"scontrol": ["AccountingStorageType   = accounting_storage/slurmdbd\n"]}, accounting=None)
    assert b.accounting and b.limitations == ()
    b2, _, _ = backend({"scontrol": ["AccountingStorageType   = accounting_storage/none\n"]}, accounting=None)
    assert not b2.accounting


def test_sacct_starttime_from_submission_time():
    b, runner, _ = backend({"sbatch": ["14\n"], "squeue": [_squeue_lines(14)], "sacct": [read("sacct_mixed.txt")]},
                           clock=lambda: 1795262387.0)
    b.submit(JobRequest(name="n", command="true"))
    b.poll([14])
    start_arg = [a for a in runner.argv_of("sacct")[0] if a.startswith("--starttime=")][0]
    expected = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(1795262387.0 - 300))
    assert start_arg == f"--starttime={expected}"


def test_sacct_starttime_unknown_job_uses_window():
    b, runner, _ = backend({"sacct": [read("sacct_mixed.txt")]}, clock=lambda: 2_000_000_000.0,
                           sacct_window_s=86400)
    b.usage([16])
    start_arg = [a for a in runner.argv_of("sacct")[0] if a.startswith("--starttime=")][0]
    assert start_arg.endswith(time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(2_000_000_000 - 86400)))


def test_reused_job_id_latest_submission_wins():
    old = read("sacct_mixed.txt").splitlines()[4]  # job 16, FAILED 3:0
    newer = old.replace("FAILED", "COMPLETED").replace("3:0", "0:0").replace("1795262387", "1795999999")
    recs = parse_sacct(newer + "\n" + old + "\n")
    assert recs[16].status.state is JobState.COMPLETED


def test_find_filters_by_tag_in_name_or_comment():
    b, runner, _ = backend({"sacct": [read("sacct_mixed.txt")], "squeue": [read("squeue_ended.txt")]}, user="alice")
    found = b.find("wf=cap")
    assert set(found) == {14, 15}
    assert any("--user=alice" in a for a in runner.argv_of("squeue")[0])
    assert set(b.find("cap-oom")) == {17} and b.find("cap-oom")[17].state is JobState.OUT_OF_MEMORY


def test_cancel_one_call_for_many_ids():
    b, runner, _ = backend({"scancel": [""]})
    b.cancel([3, 1, 2, 3])
    assert runner.argv_of("scancel") == [("scancel", "1", "2", "3")]
    b.cancel([])
    assert b.calls["scancel"] == 1


def test_estimate_start_and_refusal():
    out = (0, "", "sbatch: Job 5 to start at 1795262234 using 2 processors on nodes n1 in partition main\n")
    b, runner, _ = backend({"sbatch": [out]})
    assert b.estimate_start(JobRequest(name="n", command="true")) == 1795262234
    assert runner.argv_of("sbatch")[0][1] == "--test-only"
    b2, _, _ = backend({"sbatch": [(1, "", "allocation failure: Requested node configuration is not available\n")]})
    with pytest.raises(SubmitRejected, match="Requested node configuration is not available"):
        b2.estimate_start(JobRequest(name="n", command="true", cpus_per_task=999))


def test_partitions_with_max_nodes():
    b, _, _ = backend({"sinfo": [read("sinfo.txt")], "scontrol": [read("scontrol_partitions.txt")]})
    parts = {p.name: p for p in b.partitions()}
    assert parts["main"].max_nodes is None and parts["short"].max_time_s == 7200


# ------------------------------------------------------------------ OOM rules -------------------
def _st(state: JobState, signal: int | None = None, exit_code: int | None = 0, reason: str = "None") -> JobStatus:
    return JobStatus(job_id=1, state=state, signal=signal, exit_code=exit_code, reason=reason)


def _use(peak: float | None) -> Usage:
    return Usage(job_id=1, peak_rss_mb=peak, total_cpu_s=1, elapsed_s=1)


def test_is_oom_rules():
    assert is_oom(_st(JobState.OUT_OF_MEMORY), None, None)
    assert is_oom(_st(JobState.FAILED, signal=9), _use(150), 100)
    assert not is_oom(_st(JobState.FAILED, signal=9), _use(90), 100)  # killed -9 for another reason
    assert not is_oom(_st(JobState.FAILED, exit_code=137), _use(150), 100)  # exit code alone never
    assert not is_oom(_st(JobState.FAILED, signal=9), _use(None), 100)
    assert not is_oom(_st(JobState.FAILED, signal=9), None, 100)
    assert not is_oom(_st(JobState.CANCELLED, signal=9), _use(150), 100)
    assert not is_oom(_st(JobState.COMPLETED), _use(150), 100)


def test_an_over_memory_kill_reported_as_a_launch_failure_is_oom():
    """Seen in CI (2026-11-28): slurmstepd logged "exceeded memory limit (331513856 > 104857600),
    being killed" for a merged job's batch step and sacct said FAILED, JobLaunchFailure, exit 0:0
    with MaxRSS 316 MB against --mem 100M; the stage was failed instead of retried."""
    assert is_oom(_st(JobState.FAILED, reason="JobLaunchFailure"), _use(316), 100)
    assert not is_oom(_st(JobState.FAILED, reason="JobLaunchFailure"), _use(90), 100)  # not memory
    assert not is_oom(_st(JobState.FAILED, reason="JobLaunchFailure"), None, 100)
    assert not is_oom(_st(JobState.FAILED, reason="NonZeroExitCode"), _use(316), 100)


def test_placeholder_sacct_record_does_not_override_squeue():
    """slurmdbd briefly holds a placeholder (name "allocation", ReqMem "16?", no eligible time)
    when a step's report beats the job's start record; squeue's view of the job wins."""
    placeholder = SEP.join(["3", "allocation", "COMPLETED", "0:0", "", "16?", "4", "00:00.004", "1795262692",
                            "Unknown", "1795262692", "1795262696", "tag:c", "", "1", "1", "n1", "", "None"])
    step = SEP.join(["3.batch", "batch", "COMPLETED", "0:0", "4680K", "", "4", "00:00.004", "1795262692",
                     "1795262692", "1795262692", "1795262696", "", "", "1", "1", "n1", "", ""])
    live = SEP.join(["3", "COMPLETED", "None", "tag", "tag:c", "main", "1795262691", "1795262691", "1795262692",
                     "1795262696", "1", "1", "n1", "5:00"]) + SEP
    recs = parse_sacct(placeholder + "\n" + step + "\n")
    assert recs[3].usage.req_mem_mb is None and recs[3].usage.peak_rss_mb == pytest.approx(4680 / 1024)
    b, _, _ = backend({"squeue": [live + "\n"], "sacct": [placeholder + "\n" + step + "\n"]})
    st = b.poll([3])[3]
    assert st.name == "tag" and st.partition == "main" and st.eligible_time == 1795262691 and st.exit_code == 0


def test_oom_uses_the_submitted_request_when_sacct_lacks_reqmem():
    oom = SEP.join(["5", "n", "FAILED", "0:9", "", "16?", "1", "00:00.002", "1795262387", "1795262387",
                    "1795262388", "1795262389", "", "main", "1", "1", "n1", "5", "None"])
    step = SEP.join(["5.batch", "batch", "CANCELLED by 0", "0:9", "314.50M", "", "1", "00:00.002", "1795262388",
                     "1795262388", "1795262388", "1795262389", "", "", "1", "1", "n1", "", ""])
    b, _, _ = backend({"sbatch": ["5\n"], "squeue": [(1, "", "slurm_load_jobs error: Invalid job id specified\n")],
                       "sacct": [oom + "\n" + step + "\n"]})
    b.submit(JobRequest(name="n", command="true", mem_mb=100))
    assert b.poll([5])[5].state is JobState.OUT_OF_MEMORY


def test_a_restarted_daemon_waits_for_reqmem_before_its_oom_verdict():
    """Issue 36's kill bench: the daemon that read the end had not submitted the job (its
    submitter was killed), so the request was not in memory, and slurmdbd's placeholder record read
    ReqMem ``16?``: the OOM kill was taken for a plain FAILED, the workflow failed with no retry. The
    end stays pending until sacct has the limit, then it is OUT_OF_MEMORY."""
    def lines(req_mem: str) -> str:
        oom = SEP.join(["5", "n", "FAILED", "0:9", "", req_mem, "1", "00:00.002", "1795262387", "1795262387",
                        "1795262388", "1795262389", "", "main", "1", "1", "n1", "5", "None"])
        step = SEP.join(["5.batch", "batch", "CANCELLED by 0", "0:9", "314.50M", "", "1", "00:00.002",
                         "1795262388", "1795262388", "1795262388", "1795262389", "", "", "1", "1", "n1", "", ""])
        return oom + "\n" + step + "\n"

    gone = (1, "", "slurm_load_jobs error: Invalid job id specified\n")
    b, _, _ = backend({"squeue": [gone, gone], "sacct": [lines("16?"), lines("100M")]},
                      clock=lambda: 1795262391.0)
    first = b.poll([5])[5]
    assert not first.state.is_final and first.reason == "AccountingPending"
    assert b.poll([5])[5].state is JobState.OUT_OF_MEMORY

def test_retry_budget_stops_new_attempts():
    """A controller that is down makes each attempt slow: no new attempt after the budget."""
    down = (1, "", "slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n")
    clock = [0.0]

    def slow_runner(argv, stdin, timeout_s, env):
        if tuple(argv[1:]) == ("ping",):  # a ping that cannot tell (an unreachable host): retries go on
            raise subprocess.TimeoutExpired(argv, timeout_s)
        clock[0] += 18.0  # what one squeue took against a stopped slurmctld here
        return CommandResult(tuple(argv), *down)

    b = SlurmCLI(runner=slow_runner, accounting=True, sleep=lambda s: clock.__setitem__(0, clock[0] + s),
                 retry_budget_s=30)
    b.cmd.monotonic = lambda: clock[0]
    with pytest.raises(SlurmUnavailable, match="failed 2 times"):
        b.poll([1])
    assert b.calls["squeue"] == 2


DOWN = (1, "Slurmctld(primary) at vm is DOWN\n*****\n** RESTORE SLURMCTLD DAEMON TO SERVICE **\n", "")
NO_CONTACT = (1, "", "slurm_load_partitions: Unable to contact slurm controller (connect failure)\n")


def _pinging_runner(ping: tuple, answer: tuple, takes_s: float, calls: list,
                    gate: threading.Event | None = None):  # noqa: ANN202
    """A query that takes ``takes_s`` (a real sleep; with ``gate``, until the test opens it) and a
    ``scontrol ping`` that answers at once. ``calls`` gets each command, and "returned" once a
    query has answered."""

    def runner(argv, stdin, timeout_s, env):
        calls.append(tuple(argv[1:2]))
        if tuple(argv[1:]) == ("ping",):
            return CommandResult(tuple(argv), *ping)
        if gate is not None:
            gate.wait(timeout=60)
        time.sleep(takes_s)
        calls.append("returned")
        return CommandResult(tuple(argv), *answer)

    return runner


def test_a_stopped_slurmctld_is_reported_within_seconds_not_after_the_retries():
    """Audit 5, finding 11: with slurmctld stopped each sinfo waits out its client's connect retries
    (~MessageTimeout) before failing, and three attempts made ``asad submit`` refuse after 31.7 s.
    A query with no answer after ``probe_after_s`` asks ``scontrol ping``, which says DOWN at once."""
    calls: list = []
    sleeps: list = []
    gate = threading.Event()  # the hanging sinfo answers only when the test opens it
    hung: list = []
    cmd = SlurmCommands(runner=_pinging_runner(DOWN, NO_CONTACT, 0.0, hung, gate), sleep=sleeps.append,
                        policy=RetryPolicy(probe_after_s=0.2))
    with pytest.raises(SlurmUnavailable, match="is DOWN"):
        cmd.run("sinfo", ["--noheader"])
    # reported while the sinfo still hung (had it been waited for, "returned" would be there)
    assert hung == [("--noheader",), ("ping",)] and not sleeps
    gate.set()
    # a call that failed at once with a transient error: no more attempts while slurmctld is down
    cmd = SlurmCommands(runner=_pinging_runner(DOWN, NO_CONTACT, 0.0, calls), sleep=sleeps.append)
    with pytest.raises(SlurmUnavailable, match="is DOWN"):
        cmd.run("squeue", ["--noheader"])
    assert calls == [("--noheader",), "returned", ("ping",)] and not sleeps


def test_a_slow_but_alive_slurmctld_is_waited_for():
    """The ping answers UP (or cannot tell): the slow query is waited for, and retried as before."""
    up = (0, "Slurmctld(primary) at vm is UP\n", "")
    calls: list = []
    cmd = SlurmCommands(runner=_pinging_runner(up, (0, "main*|...\n", ""), 0.5, calls),
                        policy=RetryPolicy(probe_after_s=0.1))
    assert cmd.run("sinfo", ["--noheader"]).stdout == "main*|...\n"
    assert calls == [("--noheader",), ("ping",), "returned"]
    sleeps: list = []
    cmd = SlurmCommands(runner=_pinging_runner(up, NO_CONTACT, 0.0, []), sleep=sleeps.append,
                        policy=RetryPolicy(retries=2))
    with pytest.raises(SlurmUnavailable, match="failed 3 times"):
        cmd.run("sinfo", ["--noheader"])
    assert sleeps == [1.0, 2.0]


def test_signal_9_without_maxrss_yet_is_held_then_reported():
    """slurmdbd records the steps' MaxRSS a moment after the job's end: until then (at most 60 s)
    a signal-9 death is reported as still ending, since OOM or not cannot be told yet."""
    job_only = SEP.join(["5", "n", "FAILED", "0:9", "", "100M", "1", "00:00.002", "1795262387", "1795262387",
                         "1795262388", "1795262389", "", "main", "1", "1", "n1", "5", "None"])
    gone = (1, "", "slurm_load_jobs error: Invalid job id specified\n")
    now = [1795262389.0 + 5]
    b, _, _ = backend({"squeue": [gone], "sacct": [job_only + "\n"]}, clock=lambda: now[0])
    st = b.poll([5])[5]
    assert st.state is JobState.RUNNING and st.reason == "AccountingPending"
    now[0] = 1795262389.0 + 61
    assert b.poll([5])[5].state is JobState.FAILED


def test_signal_9_with_a_zero_maxrss_is_held_like_a_missing_one():
    """A step record closed before its usage report reads MaxRSS 0: not a measurement, so the
    OOM verdict waits for the report (the real peak) instead of calling the job a plain FAILED."""
    job = SEP.join(["5", "n", "FAILED", "0:9", "", "100M", "1", "00:00.002", "1795262387", "1795262387",
                    "1795262388", "1795262389", "", "main", "1", "1", "n1", "5", "None"])

    def step(rss):
        return SEP.join(["5.batch", "batch", "CANCELLED by 0", "0:9", rss, "", "1", "00:00.002", "1795262388",
                         "1795262388", "1795262388", "1795262389", "", "", "1", "1", "n1", "", ""])
    gone = (1, "", "slurm_load_jobs error: Invalid job id specified\n")
    now = [1795262389.0 + 2]
    b, _, _ = backend({"squeue": [gone, gone], "sacct": [f"{job}\n{step('0')}\n", f"{job}\n{step('424660K')}\n"]},
                      clock=lambda: now[0])
    assert b.poll([5])[5].reason == "AccountingPending"
    now[0] += 1
    assert b.poll([5])[5].state is JobState.OUT_OF_MEMORY


def test_show_config_with_an_empty_value_keeps_the_next_key():
    # As Slurm 22.05 prints it when no PriorityFlags are set: the empty value must not take the
    # next line (PriorityMaxAge was lost, and its text read as a flag).
    out = ("PriorityFavorSmall      = No\nPriorityFlags           = \nPriorityMaxAge          = 00:10:00\n"
           "PriorityType            = priority/multifactor\n")
    from asad.slurm.priority_rules import rules_from_scontrol

    config = parse_show_config(out)
    assert config["PriorityFlags"] == "" and config["PriorityMaxAge"] == "00:10:00"
    rules = rules_from_scontrol(config)
    assert rules.max_age_s == 600 and not rules.accrue_always


def test_the_account_and_qos_slurm_charged():
    """Captured from Slurm 22.05 (local cluster, jobs that named no account or QOS): squeue and sacct
    say which ones the job got, for asad status's %a and %q; outputs captured before lack them."""
    for statuses in (parse_squeue(read("squeue_charged.txt")),
                     {jid: rec.status for jid, rec in parse_sacct(read("sacct_charged.txt")).items()}):
        assert {jid: (st.account, st.qos) for jid, st in statuses.items()} == {390: ("root", "normal"),
                                                                              391: ("root", "normal")}
    assert {st.account for st in parse_squeue(read("squeue_mixed.txt")).values()} == {""}


def test_an_over_memory_kill_whose_job_record_lags_its_step_s_is_oom():
    """Seen in CI again (2026-11-29, the merge test's run 1): slurmdbd had the batch step's record
    ("CANCELLED by 0", MaxRSS 316 MB) while the job's own record still read RUNNING, so the end came
    from scontrol (FAILED, JobLaunchFailure, 0:9) and was taken as a plain failure: the peak was
    known, so the verdict was not waited for, but scontrol's status never met the OOM test. The
    stage failed instead of being retried with more memory."""
    running = SEP.join(["17", "cap-oom", "RUNNING", "0:0", "", "100M", "1", "00:00.002", "1795262387",
                        "1795262387", "1795262388", "Unknown", "", "main", "1", "1", "n1", "5", "None"])
    step = SEP.join(["17.batch", "batch", "CANCELLED by 0", "0:9", "323748K", "", "1", "00:00.002",
                     "1795262388", "1795262388", "1795262388", "1795262389", "", "", "1", "1", "n1", "", ""])
    b, _, _ = backend({"squeue": [_squeue_lines(17)], "sacct": [running + "\n" + step + "\n"],
                       "scontrol": [read("scontrol_jobs.txt")]}, clock=lambda: 1795262391.0)
    got = b.poll([17])[17]
    assert got.state is JobState.OUT_OF_MEMORY and got.signal == 9


def test_an_over_memory_kill_that_only_squeue_still_ends_is_judged_with_the_step_s_peak():
    """The same lag as above, with slurmctld's record gone from scontrol by the time it is asked
    (squeue's answer was the last it gave): squeue's end is the status, and it meets the one OOM
    test every end meets, with the batch step's MaxRSS from sacct."""
    running = SEP.join(["17", "cap-oom", "RUNNING", "0:0", "", "100M", "1", "00:00.002", "1795262387",
                        "1795262387", "1795262388", "Unknown", "", "main", "1", "1", "n1", "5", "None"])
    step = SEP.join(["17.batch", "batch", "CANCELLED by 0", "0:9", "323748K", "", "1", "00:00.002",
                     "1795262388", "1795262388", "1795262388", "1795262389", "", "", "1", "1", "n1", "", ""])
    no_17 = "\n".join(ln for ln in read("scontrol_jobs.txt").splitlines() if not ln.startswith("JobId=17 ")) + "\n"
    b, _, _ = backend({"squeue": [_squeue_lines(17)], "sacct": [running + "\n" + step + "\n"],
                       "scontrol": [no_17]}, clock=lambda: 1795262391.0)
    got = b.poll([17])[17]
    assert got.state is JobState.OUT_OF_MEMORY and got.reason == "OutOfMemory"
