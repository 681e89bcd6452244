"""Issue 36, item 6: ``asad status`` right within seconds, and a workflow Slurm refuses never
vanishes. The real-Slurm halves are in tests/slurm/test_wake_real.py and test_gpus_real.py."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from asad.slurm.gres import gpus_in
from asad.core.model import JobPhase, JobRecord
from asad.slurm.backend import Dependency, DependencyType, JobRequest, JobState, PartitionInfo
from asad.slurm.slurm_text import SEP, parse_sinfo_partitions
from asad.spec.load import SpecError, parse_workflow
from asad.spec.cluster import check_against_cluster
from asad.daemon.wake import RELEASED_FOR_S, released_jobs


def _job(job_id: int, *, state=JobState.PENDING, dep=None, submitted=0.0, end=None, start=None,  # noqa: ANN001
         begin=None) -> JobRecord:
    return JobRecord(row_id=job_id, workflow_id=1, stage=f"s{job_id}", attempt=1, tag=f"t{job_id}",
                     phase=JobPhase.DONE if state.is_final else JobPhase.LIVE,
                     request=JobRequest(name="x", command="c", dependency=dep, begin=begin), geometry_key="k",
                     job_id=job_id, submitted_at=submitted, state=state, start_time=start, end_time=end)


def _runner(*jobs: JobRecord):  # noqa: ANN202
    return SimpleNamespace(active={1: SimpleNamespace(jobs=list(jobs))})


def test_a_job_whose_dependency_was_just_met_is_watched_closely_for_a_while():
    afterok = Dependency(DependencyType.AFTEROK, (1,))
    a_running = _job(1, state=JobState.RUNNING, start=90.0)
    b = _job(2, dep=afterok, submitted=50.0)
    assert released_jobs(_runner(a_running, b), now=100.0) == []  # a still runs: b waits on it
    a_done = _job(1, state=JobState.COMPLETED, start=90.0, end=100.0)
    assert released_jobs(_runner(a_done, b), now=101.0) == [2]
    assert released_jobs(_runner(a_done, b), now=100.0 + RELEASED_FOR_S + 1) == []  # not for ever
    # seen running a moment after its release: it may still fail before its wrapper writes a marker
    b_running = _job(2, state=JobState.RUNNING, dep=afterok, submitted=50.0, start=102.0)
    assert released_jobs(_runner(a_done, b_running), now=103.0) == [2]
    assert released_jobs(_runner(a_done, b_running), now=100.0 + RELEASED_FOR_S + 1) == []
    b_failed = _job(2, state=JobState.FAILED, dep=afterok, submitted=50.0, start=102.0, end=103.0)
    assert released_jobs(_runner(a_done, b_failed), now=104.0) == []  # Slurm has answered
    after = _job(3, dep=Dependency(DependencyType.AFTER, (1,), offset_min=1), submitted=0.0)
    assert released_jobs(_runner(a_running, after), now=140.0) == []
    assert released_jobs(_runner(a_running, after), now=151.0) == [3]  # start + 1 minute
    alone = _job(4, submitted=200.0)
    assert released_jobs(_runner(alone), now=201.0) == [4]  # no dependency: from its submission
    later = _job(5, submitted=200.0, begin=500.0)
    assert released_jobs(_runner(later), now=201.0) == [] and released_jobs(_runner(later), now=501.0) == [5]
    unknown = _job(6, dep=Dependency(DependencyType.AFTEROK, (99,)), submitted=0.0)
    assert released_jobs(_runner(unknown), now=1.0) == []


@pytest.mark.parametrize(("text", "gpus"), [
    ("gpu:2", 2), ("gpu:a100:2(S:0-1)", 2), ("gpu:a100:2,gpu:v100:1", 3), ("(null)", 0), ("mps:100", 0),
    ("gpu", 1), ("gpu:a100", 1), ("gpu:2,mps:50", 2), ("gpu:x:y", None), (None, None)])
def test_gpus_in_reads_stage_and_node_gres(text, gpus):
    assert gpus_in(text) == gpus


def test_sinfo_gives_each_partition_its_gpus_per_node():
    text = "main*|28|32000|3|infinite|gpu:2\nmain*|28|32000|1|infinite|gpu:a100:4(S:0)\nshort|28|32000|4|2:00:00|(null)\n"
    parts = {p.name: p for p in parse_sinfo_partitions(text.replace("|", SEP))}
    assert parts["main"].gpus_per_node == 4 and parts["main"].nodes == 4
    assert parts["short"].gpus_per_node == 0
    old = parse_sinfo_partitions("main*|28|32000|4|infinite\n".replace("|", SEP))  # recorded before %G was asked for
    assert old[0].gpus_per_node is None


GPU_NODES = [PartitionInfo("main", nodes=4, cpus_per_node=28, mem_per_node_mb=32000, default=True, gpus_per_node=2)]


@pytest.mark.parametrize(("stage", "field"), [("gpus: 4", "gpus"), ("gres: gpu:3", "gres"),
                                              ("gres: 'gpu:a100:3'", "gres"), ("{gpus: 6, nodes: 2}", "gpus")])
def test_a_stage_asking_more_gpus_than_any_node_has_is_refused_before_it_is_stored(stage, field):
    """The audit's `gpus: 4` on 2-GPU nodes: accepted with exit 0, refused by sbatch, then gone
    from `asad status`. Now refused by `asad submit` with the file, line and the nodes' GPUs."""
    body = stage.strip("{}").replace(", ", "\n    ")
    spec = parse_workflow(f"name: w\nstages:\n  - name: a\n    run: 'true'\n    {body}\n")
    with pytest.raises(SpecError) as err:
        check_against_cluster(spec, GPU_NODES)
    text = str(err.value)
    assert f"stages[0].{field}" in text and "partition 'main' has 2 GPUs per node" in text
    assert "2 GPUs" in text.split("—")[-1]  # the fix names what the nodes have


@pytest.mark.parametrize("stage", ["gpus: 2", "gres: gpu:2", "{gpus: 4, nodes: 2}", "cpus: 2"])
def test_a_stage_within_the_nodes_gpus_is_accepted(stage):
    body = stage.strip("{}").replace(", ", "\n    ")
    spec = parse_workflow(f"name: w\nstages:\n  - name: a\n    run: 'true'\n    {body}\n")
    check_against_cluster(spec, GPU_NODES)
    unknown = [PartitionInfo("main", nodes=4, cpus_per_node=28, mem_per_node_mb=32000, default=True)]
    check_against_cluster(parse_workflow("name: w\nstages:\n  - name: a\n    run: 'true'\n    gpus: 64\n"),
                          unknown)  # GPUs not known: never a refusal on a guess


def test_a_workflow_slurm_refused_stays_in_the_default_status_for_a_while(db_url, capsys):
    """The default `asad status` lists active workflows only: a workflow Slurm refused at once was
    accepted by `submit` and then gone without a word. It is now named, with Slurm's reason, in the
    notes for RECENT_FAILURE_S after it failed."""
    import json
    import time

    import structlog

    from asad.daemon.wiring import make_runner, run_to_completion
    from asad.cli.main import main
    from asad.common.config import Settings
    from asad.slurm.sim import make_simulator
    from asad.view.status import RECENT_FAILURE_S, status_rows
    from asad.store.repo import Store

    spec = parse_workflow("name: refused\nstages:\n"
                          "  - {name: a, cpus: 2, time: 10m, partition: gpu, run: 'true', simulate: {runtime: 5m}}\n")
    sim = make_simulator("small", load=0.0, seed=1)
    store = Store(db_url)
    try:
        runner = make_runner(Settings(), store, sim)
        wf = store.add_workflow(spec, sim.now(), strategy="per-stage")
        runner.load()
        run_to_completion(runner, sim, [wf.id])
        (row,) = store.workflow_rows([wf.id])
        assert row.state == "FAILED" and "Invalid partition" in row.message
        store.set_status("clock", {"now": sim.now(), "wall": time.time(), "speed": 1.0})  # as the daemon does
        store.commit()
        rows, notes = status_rows(store)
        assert rows == []  # not active: no row
        (note,) = [n for n in notes if n.startswith(f"workflow {wf.id} (refused) FAILED")]
        assert "Invalid partition" in note and f"asad show {wf.id}" in note
        store.set_status("clock", {"now": row.ended_at + RECENT_FAILURE_S + 5, "wall": time.time(), "speed": 1.0})
        store.commit()
        assert not any(n.startswith(f"workflow {wf.id} ") for n in status_rows(store)[1])  # long ago: gone
    finally:
        store.close()
    capsys.readouterr()
    try:
        assert main(["status", "--json", "--db", db_url]) == 0
        assert json.loads(capsys.readouterr().out)["stages"] == []  # the note is gone too (above), no row
    finally:
        structlog.reset_defaults()
