"""The kill-and-fault bench's counting (asad/bench/faults_verdict.py): lost, doubled, stray and
mismatched from given store rows and Slurm records, no cluster needed."""

from __future__ import annotations

from asad.bench.faults_verdict import SlurmJob, StoredJob, StoredStage, StoredWorkflow, judge, parse_tag

P = "asad:abc123"


def _clean():
    """Workflow 1: stage a OOM-killed once then completed on attempt 2; stage b completed."""
    wfs = [StoredWorkflow(1, "COMPLETED", ("a", "b"))]
    jobs = [StoredJob(1, "a", 1, f"{P}:1:a:1", "DONE", 10), StoredJob(1, "a", 2, f"{P}:1:a:2", "DONE", 11),
            StoredJob(1, "b", 1, f"{P}:1:b:1", "DONE", 12)]
    stages = [StoredStage(1, "a", 11), StoredStage(1, "b", 12)]
    slurm = [SlurmJob(10, f"{P}:1:a:1", "OUT_OF_MEMORY", True), SlurmJob(11, f"{P}:1:a:2", "COMPLETED", True),
             SlurmJob(12, f"{P}:1:b:1", "COMPLETED", True)]
    return wfs, jobs, stages, slurm


def test_a_clean_run_with_a_retry_counts_nothing():
    v = judge(*_clean())
    assert (v.stages, v.lost, v.doubled, v.stray, v.mismatched) == (2, 0, 0, 0, 0) and v.clean


def test_a_stage_without_a_completed_job_is_lost():
    wfs, jobs, stages, slurm = _clean()
    slurm[2] = SlurmJob(12, f"{P}:1:b:1", "FAILED", True)
    v = judge([StoredWorkflow(1, "FAILED", ("a", "b"))], jobs, stages, slurm)
    assert v.lost == 1 and v.workflows_not_completed == 1 and "stage b" in " ".join(v.details)


def test_an_intent_landed_twice_is_doubled_and_the_unknown_job_stray():
    wfs, jobs, stages, slurm = _clean()
    # the killed daemon's slow sbatch landed attempt 1 of b a second time, nobody knows job 13
    slurm.append(SlurmJob(13, f"{P}:1:b:1", "COMPLETED", True))
    v = judge(wfs, jobs, stages, slurm)
    assert v.doubled == 1 and v.stray == 1 and not v.clean


def test_two_completed_attempts_of_one_stage_are_doubled():
    wfs, jobs, stages, slurm = _clean()
    jobs.append(StoredJob(1, "b", 2, f"{P}:1:b:2", "DONE", 14))
    slurm.append(SlurmJob(14, f"{P}:1:b:2", "COMPLETED", True))
    v = judge(wfs, jobs, stages, slurm)
    assert v.doubled == 1 and v.stray == 0


def test_a_late_job_cancelled_before_it_started_is_neither_doubled_nor_stray():
    wfs, jobs, stages, slurm = _clean()
    # an abandoned intent's job landed late; asad recorded and cancelled it before it started
    jobs.append(StoredJob(1, "b", 0, f"{P}:1:b:0", "ABANDONED", 15))
    slurm.append(SlurmJob(15, f"{P}:1:b:0", "CANCELLED", False))
    assert judge(wfs, jobs, stages, slurm).clean


def test_a_job_still_pending_after_its_workflow_ended_is_stray():
    wfs, jobs, stages, slurm = _clean()
    jobs.append(StoredJob(1, "b", 3, f"{P}:1:b:3", "LIVE", 16))
    slurm.append(SlurmJob(16, f"{P}:1:b:3", "PENDING", False))
    v = judge(wfs, jobs, stages, slurm)
    assert v.stray == 1 and v.doubled == 0


def test_the_store_naming_another_job_than_slurm_completed_is_a_mismatch():
    wfs, jobs, stages, _slurm = _clean()
    v = judge(wfs, jobs, [StoredStage(1, "a", 10), stages[1]], _clean()[3])
    assert v.mismatched == 1


def test_tags_with_colons_in_the_stage_name_parse():
    assert parse_tag(f"{P}:7:x:y:3") == (7, "x:y", 3)
    assert parse_tag("other:1:2") is None


def test_the_slurm_bench_without_a_cluster_says_how_to_start_one(monkeypatch, capsys):
    from asad.cli.main import main

    monkeypatch.delenv("SLURM_CONF", raising=False)
    assert main(["bench", "faults", "--backend", "slurm", "--kills", "1"]) == 2
    err = capsys.readouterr().err
    assert "SLURM_CONF is not set" in err and "local-cluster.sh up" in err
