"""The CLI backend against a real slurmctld (the local cluster). Run alone:
as root: ``slurm-scripts/local-cluster.sh up --accounting && .venv/bin/pytest -m slurm tests/slurm``."""

from __future__ import annotations

import time

import pytest

from asad.slurm.backend import (
    Dependency,
    DependencyType,
    JobRequest,
    JobState,
    SlurmUnavailable,
    SubmitRejected,
)
from asad.slurm.cli import SlurmCLI

from slurm_helpers import all_final, unique_tag, wait_until

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(300)]


def req(tag: str, command: str = "true", **kw) -> JobRequest:
    base = dict(name=tag, comment=f"{tag}:c", command=command, time_limit_s=300, mem_mb=200, output="/dev/null")
    base.update(kw)
    return JobRequest(**base)


def test_submit_poll_usage_find(slurm, accounting, tmp_path):
    tag = unique_tag("basic")
    out = tmp_path / "out.txt"
    job = slurm.submit(req(tag, 'echo "$GREETING"; sleep 2', output=str(out), env={"GREETING": "hello, world"}))
    final = wait_until(slurm, [job], all_final([job]))[job]
    assert final.state is JobState.COMPLETED and final.exit_code == 0
    assert final.name == tag and final.start_time is not None and final.end_time - final.start_time >= 2
    assert final.wait_s is not None and final.wait_s >= 0
    assert out.read_text() == "hello, world\n"  # a comma in a value survives --export
    use = slurm.usage([job])[job]
    assert use.elapsed_s >= 2 and use.peak_rss_mb is not None and use.req_mem_mb == 200
    found = slurm.find(tag)
    assert list(found) == [job] and found[job].state is JobState.COMPLETED


def test_poll_is_one_squeue_for_many_live_jobs(slurm):
    tag = unique_tag("batch")
    ids = [slurm.submit(req(f"{tag}-{i}", "sleep 30")) for i in range(6)]
    before = dict(slurm.calls)
    statuses = slurm.poll(ids)
    assert set(statuses) == set(ids)
    assert all(not s.state.is_final for s in statuses.values())
    assert slurm.calls["squeue"] - before.get("squeue", 0) == 1
    assert slurm.calls["sacct"] == before.get("sacct", 0)
    slurm.cancel(ids)
    assert slurm.calls["scancel"] == 1
    after = wait_until(slurm, ids, all_final(ids), timeout_s=60)
    assert {s.state for s in after.values()} == {JobState.CANCELLED}


def test_dependency_afterok(slurm):
    tag = unique_tag("dep")
    first = slurm.submit(req(f"{tag}-a", "sleep 4"))
    second = slurm.submit(req(f"{tag}-b", "true", dependency=Dependency(DependencyType.AFTEROK, (first,))))
    st = slurm.poll([second])[second]
    assert st.state is JobState.PENDING and st.reason == "Dependency" and st.eligible_time is None
    done = wait_until(slurm, [first, second], all_final([first, second]))
    assert done[second].state is JobState.COMPLETED
    assert done[second].start_time >= done[first].end_time
    # eligible when the dependency was met, so the learned wait excludes the predecessor's run
    assert done[second].eligible_time >= done[first].end_time


def test_a_begin_with_the_dependency_starts_the_age_clock_while_held(slurm, cluster):
    """The fact auto's aged-chain rule rests on (asad.slurm.priority_rules): Slurm sets a job's
    accrue time to a --begin still ahead at submission, and afterok does not clear it unless
    AccountingStorageEnforce has limits; a job with afterok alone has no accrue time until its
    dependency is met. Both stay held until the predecessor ends."""
    import subprocess

    if slurm.priority_rules().enforce_limits:
        pytest.skip("this cluster enforces accounting limits: a dependency resets the accrue time there")
    tag = unique_tag("accrue")
    first = slurm.submit(req(f"{tag}-a", "sleep 20"))
    aged = slurm.submit(req(f"{tag}-b", "true", begin=time.time() + 3,
                            dependency=Dependency(DependencyType.AFTEROK, (first,))))
    plain = slurm.submit(req(f"{tag}-c", "true", dependency=Dependency(DependencyType.AFTEROK, (first,))))

    def accrue(job_id: int) -> str:
        out = subprocess.run(["scontrol", "show", "job", str(job_id)], env=cluster.env(), capture_output=True,
                             text=True, timeout=20, check=True).stdout
        return next(f.split("=", 1)[1] for f in out.split() if f.startswith("AccrueTime="))

    time.sleep(8)  # past the --begin, and a scheduling pass or two
    held = slurm.poll([aged, plain])
    assert held[aged].state is JobState.PENDING and held[plain].state is JobState.PENDING
    assert held[aged].reason == "Dependency"
    assert accrue(aged) != "Unknown" and accrue(plain) == "Unknown"
    done = wait_until(slurm, [first, aged, plain], all_final([first, aged, plain]), timeout_s=90)
    assert done[aged].state is JobState.COMPLETED and done[aged].start_time >= done[first].end_time


def test_dependency_on_failed_job_never_satisfied(slurm):
    tag = unique_tag("depfail")
    first = slurm.submit(req(f"{tag}-a", "exit 3"))
    second = slurm.submit(req(f"{tag}-b", "true", dependency=Dependency(DependencyType.AFTEROK, (first,))))
    wait_until(slurm, [first], all_final([first]))
    st = wait_until(slurm, [second], lambda s: second in s and s[second].reason == "DependencyNeverSatisfied",
                    timeout_s=30)
    assert st[second].state is JobState.PENDING
    assert slurm.poll([first])[first].state is JobState.FAILED and slurm.poll([first])[first].exit_code == 3


def test_begin_time(slurm):
    tag = unique_tag("begin")
    begin = time.time() + 8
    job = slurm.submit(req(tag, "true", begin=begin))
    st = slurm.poll([job])[job]
    assert st.state is JobState.PENDING and st.reason == "BeginTime"
    done = wait_until(slurm, [job], all_final([job]), timeout_s=60)[job]
    assert done.state is JobState.COMPLETED and done.start_time >= int(begin)


def test_multi_partition(slurm, cluster):
    names = [p.name for p in slurm.partitions()]
    if len(names) < 2:
        pytest.skip("needs two partitions (local-cluster.sh makes main and short)")
    tag = unique_tag("multi")
    job = slurm.submit(req(tag, "true", partition=",".join(names[:2])))
    done = wait_until(slurm, [job], all_final([job]))[job]
    assert done.state is JobState.COMPLETED and done.partition in names[:2]


def test_partitions_match_cluster(slurm, cluster):
    parts = {p.name: p for p in slurm.partitions()}
    default = [p for p in parts.values() if p.default]
    assert len(default) == 1
    assert default[0].nodes == cluster.nodes and default[0].cpus_per_node == cluster.cpus_per_node


def test_submit_rejected_verbatim(slurm, cluster):
    with pytest.raises(SubmitRejected) as err:
        slurm.submit(req(unique_tag("bad"), partition="no-such-partition"))
    assert "Invalid partition name specified" in err.value.slurm_message
    with pytest.raises(SubmitRejected, match="Requested node configuration is not available"):
        # one CPU more than a node has (Slurm 22.05 accepts far larger counts and leaves them
        # pending with reason PartitionConfig, so asad checks sizes against partitions itself)
        slurm.submit(req(unique_tag("huge"), cpus_per_task=cluster.cpus_per_node + 1))


def test_out_of_memory_detected(slurm, accounting):
    tag = unique_tag("oom")
    hog = "python3 -c 'import time; x = bytearray(400 * 1024 * 1024); time.sleep(5)'"
    job = slurm.submit(req(tag, hog, mem_mb=100))
    done = wait_until(slurm, [job], all_final([job]), timeout_s=90)[job]
    # On a miss, what slurmdbd held (the job and step lines) is the evidence to read.
    assert done.state is JobState.OUT_OF_MEMORY, (done, slurm.cmd.run("sacct", [
        f"--jobs={job}", "--parsable2", "--format=JobID,State,Reason,ExitCode,MaxRSS,ReqMem"]).stdout)
    use = slurm.usage([job])[job]
    assert use.peak_rss_mb > 100


def test_exit_code_alone_is_not_oom(slurm, accounting):
    job = slurm.submit(req(unique_tag("exit137"), "exit 137"))
    done = wait_until(slurm, [job], all_final([job]))[job]
    # 137 = 128 + 9 looks like a kill -9 to a shell, but no signal ended the job and MaxRSS is
    # tiny: FAILED, not OUT_OF_MEMORY. (sacct of Slurm 22.05 stores 137 as "9:0", scontrol as
    # "137:0"; either way the signal field is empty.)
    assert done.state is JobState.FAILED and done.signal is None and done.exit_code in (137, 9)


def test_busy_cluster_waits_and_estimate(slurm, cluster):
    """Fill every core; a new job waits (non-zero learned wait) and sbatch --test-only says so."""
    tag = unique_tag("busy")
    fill_s = 8
    fillers = [slurm.submit(req(f"{tag}-fill{i}", f"sleep {fill_s}", cpus_per_task=cluster.cpus_per_node,
                                time_limit_s=120)) for i in range(cluster.nodes)]
    wait_until(slurm, fillers, lambda s: all(s[j].state is JobState.RUNNING for j in fillers), timeout_s=60)
    estimate = slurm.estimate_start(req(f"{tag}-probe", "true"))
    assert estimate is not None and estimate > time.time()  # nothing is free now
    job = slurm.submit(req(f"{tag}-late", "true"))
    pending = slurm.poll([job])[job]
    assert pending.state is JobState.PENDING and pending.reason in ("Resources", "Priority", "None")
    done = wait_until(slurm, [job], all_final([job]), timeout_s=90)[job]
    assert done.wait_s is not None and done.wait_s >= fill_s - 3


def test_slurmctld_stopped_then_restarted(cluster):
    """slurmctld goes away: calls raise SlurmUnavailable (no crash, no hang); it comes back with
    its state and the same job is polled again."""
    if not cluster.cluster_dir:
        pytest.skip("needs a cluster started by local-cluster.sh (to stop and restart slurmctld)")
    backend = SlurmCLI(slurm_conf=cluster.slurm_conf, timeout_s=30, retries=0)
    tag = unique_tag("restart")
    job = backend.submit(req(tag, "sleep 20"))
    try:
        res = cluster.script("stop-controller")
        assert res.returncode == 0, res.stderr
        t0 = time.monotonic()
        with pytest.raises(SlurmUnavailable, match="Unable to contact slurm controller|no answer"):
            backend.poll([job])
        assert time.monotonic() - t0 < 60
    finally:
        res = cluster.script("up")
        assert res.returncode == 0, res.stderr
    st = backend.poll([job])[job]
    assert st.state in (JobState.RUNNING, JobState.COMPLETED, JobState.PENDING)
    backend.cancel([job])
