"""Sizing on the real local cluster: a ``cpus: 28`` stage keeps its 28 CPUs over runs (the
agent sees them idle, but the stage did not opt in to fewer), and a stage that timed out
once does not time out on the next run of the workflow (the learned limit sticks).

Run alone: ``slurm-scripts/local-cluster.sh up --accounting && .venv/bin/pytest -m slurm tests/slurm/test_sizing_real.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from asad.slurm.backend import JobState
from asad.slurm.cli import SlurmCLI

from test_workflows_real import asad, asad_env, store_id, write_workflow

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(900)]

CPU_WORKFLOW = """\
name: threads
strategy: per-stage
sizing: sizey-like
stages:
  - name: omp
    cpus: {cpus}
    mem: 200M
    time: 5m
    run: "sleep 2"
"""


def _run(env, wf, timeout=400):
    res = asad(env, "run", str(wf), "--backend", "slurm", "--json", timeout=timeout)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout)


def test_a_28_cpu_stage_keeps_28_cpus_over_runs(cluster, tmp_path):
    cpus = min(28, cluster.cpus_per_node)
    if cpus < 2:
        pytest.skip("needs nodes with at least 2 CPUs")
    wf = write_workflow(tmp_path / "threads.yaml", CPU_WORKFLOW.format(cpus=cpus))
    state = tmp_path / "state"
    env = asad_env(cluster, state)
    runs = [_run(env, wf) for _ in range(2)]
    assert [r["state"] for r in runs] == ["COMPLETED", "COMPLETED"]
    # sleep keeps no core busy: an agent free to shrink would have asked for 1 CPU the second time
    backend = SlurmCLI(slurm_conf=cluster.slurm_conf)
    for r in runs:
        (stage,) = r["stages"]
        assert stage["cpus"] == cpus, stage
        found = backend.find(f"asad:{store_id(state)}:{r['id']}:omp:")
        assert [st.state for st in found.values()] == [JobState.COMPLETED]
    why = asad(env, "explain", str(runs[1]["id"]), "omp")
    assert why.returncode == 0, why.stderr
    assert f"CPUs kept at the file's {cpus}" in why.stdout, why.stdout


TIMEOUT_WORKFLOW = """\
name: slowone
strategy: per-stage
sizing: sizey-like
stages:
  - name: slow
    cpus: 1
    mem: 200M
    time: 1m
    run: "echo attempt in job $SLURM_JOB_ID; sleep 90"
"""


def test_a_stage_that_timed_out_once_does_not_time_out_on_the_next_run(cluster, tmp_path):
    wf = write_workflow(tmp_path / "slow.yaml", TIMEOUT_WORKFLOW)
    state = tmp_path / "state"
    env = asad_env(cluster, state)
    first = _run(env, wf)
    second = _run(env, wf)
    backend = SlurmCLI(slurm_conf=cluster.slurm_conf)
    states = []
    for r in (first, second):
        assert r["state"] == "COMPLETED", r["message"]
        found = backend.find(f"asad:{store_id(state)}:{r['id']}:slow:")
        states.append([found[j].state for j in sorted(found)])
    # the first run: Slurm ends the 1 min attempt with TIMEOUT, the 2 min retry completes
    assert states[0] == [JobState.TIMEOUT, JobState.COMPLETED], states
    # the next run starts with the raised limit and does not time out again
    assert states[1] == [JobState.COMPLETED], states
    assert second["stages"][0]["attempts"] == 1
    # the retry is visible: why it happened and with what limit
    tries = first["stages"][0]["attempt_list"]
    assert [t["state"] for t in tries] == ["TIMEOUT", "COMPLETED"]
    assert tries[1]["why"] == "after TIMEOUT at 1:00" and tries[1]["time_s"] == 120
    show = asad(env, "show", str(first["id"]))
    assert "attempt 2 (after TIMEOUT at 1:00)" in show.stdout, show.stdout
    # the timed-out attempt's own log is kept beside the retry's, and show names it
    timed_out = tries[0]["job_id"]
    kept = next(w for line in show.stdout.splitlines() if "attempt 1" in line
                for w in line.split() if w.endswith(f"slow.log.{timed_out}"))
    assert Path(kept).read_text() == f"attempt in job {timed_out}\n"
    why = asad(env, "explain", str(second["id"]), "slow")
    assert "timed out at 60 s" in why.stdout, why.stdout


GROWING_WORKFLOW = """\
name: grows
strategy: per-stage
sizing: sizey-like
stages:
  - name: load
    cpus: 1
    mem: 2G
    time: 5m
    inputs: [data.bin]
    # holds its whole input in memory for a few seconds: the peak grows with the input's size
    run: "python3 -c \\"import time; b = open('data.bin', 'rb').read(); time.sleep(4); print(len(b))\\""
"""


def test_a_stage_whose_memory_grows_with_its_input_is_sized_without_a_kill(cluster, tmp_path):
    """issue 39: three runs with inputs of 100, 300 and 600 MB. The second is cut no deeper than one
    run allows (twice its peak scaled to the larger input, never below the file's 2G / 4), the third
    is sized from the runs' peaks scaled to its larger input, and none is killed for memory (the
    cluster kills on memory by sampling: JobAcctGatherParams=OverMemoryKill every second)."""
    from asad.sizing.base import Outcome, Request
    from asad.sizing.best import BestAgent

    wf = write_workflow(tmp_path / "grows.yaml", GROWING_WORKFLOW)
    state = tmp_path / "state"
    env = asad_env(cluster, state)
    backend = SlurmCLI(slurm_conf=cluster.slurm_conf)
    runs, jobs = [], []
    for mb in (100, 300, 600):
        (tmp_path / "data.bin").write_bytes(b"\1" * (mb * 1024 * 1024))
        r = _run(env, wf)
        assert r["state"] == "COMPLETED", r["message"]
        found = backend.find(f"asad:{store_id(state)}:{r['id']}:load:")
        jobs.append([found[j] for j in sorted(found)])
        runs.append(r)
    assert [[j.state for j in js] for js in jobs] == [[JobState.COMPLETED]] * 3  # no OOM retry
    mems = [r["stages"][0]["mem_mb"] for r in runs]
    peaks = [r["stages"][0]["attempt_list"][-1]["peak_mem_mb"] for r in runs]
    print(f"inputs 100/300/600 MB: --mem {mems} MB, peaks {peaks} MB")
    assert mems[0] == 2048 and peaks[1] < mems[1] < 2048, (mems, peaks)
    assert runs[1]["stages"][0]["sized_below"] == f"sized below the file: mem {mems[1]}M (file 2G)"
    why = asad(env, "explain", str(runs[1]["id"]), "load").stdout
    assert "a deeper cut waits for" in why and "scaled to this input" in why, why
    assert peaks[2] > 600 and peaks[2] < mems[2] < 2048, (mems, peaks)
    assert runs[2]["stages"][0]["sized_below"] == f"sized below the file: mem {mems[2]}M (file 2G)"
    why = asad(env, "explain", str(runs[2]["id"]), "load").stdout
    assert "scaled to this input" in why, why
    # without this rules (a cut from one run, no scaling) the second run would have been
    # killed: the first run's peak × 1.1 is below the second's peak
    old = BestAgent(confident_runs=1, scaled=False)
    old.observe(Outcome(Request(1, 2048, 300), peaks[0], None, 5.0, 100 * 1024 * 1024, "COMPLETED"))
    assert old.propose(Request(1, 2048, 300), 300 * 1024 * 1024).request.mem_mb < peaks[1]
