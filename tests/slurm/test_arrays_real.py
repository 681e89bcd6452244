"""Job arrays on the real cluster: a throttled 5-task array writes one file per task id and its
dependant sees them all; an array with indices at and above MaxArraySize goes as several array jobs
whose tasks still see their global ids; a failed task fails the stage."""

from __future__ import annotations

import json
import re
import sqlite3

import pytest

from asad.slurm.cli import SlurmCLI
from test_workflows_real import asad, asad_env, write_workflow

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(300)]


def _max_overlap(spans: list[tuple[float, float]]) -> int:
    events = sorted([(a, 1) for a, _ in spans] + [(b, -1) for _, b in spans])
    running = peak = 0
    for _, delta in events:
        running += delta
        peak = max(peak, running)
    return peak


def test_throttled_array_and_its_dependant(cluster, tmp_path):
    env = asad_env(cluster, tmp_path / "state")
    out = tmp_path / "out"
    out.mkdir()
    wf = write_workflow(tmp_path / "a.yaml", f"""\
name: fan
strategy: chain
defaults: {{time: 5m, mem: 100M, cpus: 1}}
stages:
  - name: fan
    array: 0-4%2
    run: |
      s=$(date +%s.%N); sleep 2; echo "task $SLURM_ARRAY_TASK_ID" > {out}/part.$SLURM_ARRAY_TASK_ID
      echo "$s $(date +%s.%N)" > {out}/span.$SLURM_ARRAY_TASK_ID
  - name: gather
    run: ls {out} | grep -c '^part\\.' > {tmp_path}/count; cat {out}/part.* > {tmp_path}/all
""")
    res = asad(env, "run", str(wf), "--backend", "slurm", "--json", timeout=240)
    assert res.returncode == 0, res.stdout + res.stderr
    summary = json.loads(res.stdout)
    assert summary["state"] == "COMPLETED"
    assert [s["name"] for s in summary["stages"]] == ["fan", "gather"]  # one stage for the array
    assert summary["stages"][0]["array_tasks"] == {"CD": 5}
    assert (tmp_path / "count").read_text().strip() == "5"
    assert sorted((tmp_path / "all").read_text().split("\n")[:-1]) == [f"task {i}" for i in range(5)]
    spans = [tuple(map(float, (out / f"span.{i}").read_text().split())) for i in range(5)]
    assert _max_overlap(spans) <= 2  # the %2 throttle
    assert summary["stages"][1]["start"] >= max(b for _, b in spans) - 1
    logs = sorted(p.name for p in (tmp_path / "state" / "runs" / "1").glob("fan.*.log"))
    assert logs == [f"fan.{i}.log" for i in range(5)]  # each task its own log


def test_indices_beyond_max_array_size_go_as_chunks_with_global_ids(cluster, tmp_path):
    config = SlurmCLI(slurm_conf=cluster.slurm_conf).cmd.run("scontrol", ["show", "config"]).stdout
    m = int(re.search(r"^MaxArraySize\s*=\s*(\d+)", config, re.M).group(1))
    env = asad_env(cluster, tmp_path / "state")
    out = tmp_path / "out"
    out.mkdir()
    wanted = [0, 1, m, m + 1]  # an index >= MaxArraySize: Slurm refuses it in one array job
    wf = write_workflow(tmp_path / "c.yaml", f"""\
name: chunks
defaults: {{time: 5m, mem: 100M, cpus: 1}}
stages:
  - {{name: fan, array: "{','.join(map(str, wanted))}", run: "touch {out}/part.$SLURM_ARRAY_TASK_ID"}}
  - {{name: gather, run: "ls {out} > {tmp_path}/seen"}}
""")
    res = asad(env, "run", str(wf), "--backend", "slurm", "--json", timeout=240)
    assert res.returncode == 0, res.stdout + res.stderr
    assert json.loads(res.stdout)["stages"][0]["array_tasks"] == {"CD": 4}
    assert sorted((tmp_path / "seen").read_text().split()) == sorted(f"part.{i}" for i in wanted)
    with sqlite3.connect(tmp_path / "state" / "asad.db") as db:
        chunks = db.execute("select tag, request from jobs where stage = 'fan' order by id").fetchall()
    arrays = [(json.loads(r)["array"], json.loads(r)["array_offset"]) for _, r in chunks]
    assert arrays == [("0-1", 0), ("0-1", m)]


def test_a_failed_task_fails_the_stage(cluster, tmp_path):
    env = asad_env(cluster, tmp_path / "state")
    wf = write_workflow(tmp_path / "f.yaml", f"""\
name: failing
defaults: {{time: 5m, mem: 100M, cpus: 1}}
stages:
  - {{name: fan, array: 3, run: "echo task $SLURM_ARRAY_TASK_ID; test $SLURM_ARRAY_TASK_ID != 1"}}
  - {{name: gather, run: "touch {tmp_path}/gathered"}}
""")
    res = asad(env, "run", str(wf), "--backend", "slurm", "--json", timeout=240)
    assert res.returncode == 1, res.stdout + res.stderr
    summary = json.loads(res.stdout)
    assert summary["state"] == "FAILED" and "stage fan failed" in summary["message"]
    assert summary["stages"][0]["array_tasks"] == {"CD": 2, "F": 1}
    assert not (tmp_path / "gathered").exists()
    res = asad(env, "show", "1")
    assert "array 0-2: tasks CD 2, F 1" in res.stdout
    # status points at the tasks' logs (it said the stage failed before writing any output)
    res = asad(env, "status", "--all")
    assert f"stage fan failed: its output is in {tmp_path}/state/runs/1/fan.*.log" in res.stdout, res.stdout
    assert (tmp_path / "state" / "runs" / "1" / "fan.1.log").read_text() == "task 1\n"


def test_status_follows_task_markers_between_polls_and_a_cancel_keeps_slurms_counts(cluster, tmp_path):
    """Audit 5, findings 3 and 4: an array not polled since its submission showed `PD (None)` while its
    tasks ran and ended; and once cancelled, `show` kept the last poll's `R 2, PD 6, CD 2` forever,
    where sacct had recorded the tasks COMPLETED or CANCELLED."""
    import time

    from asad.daemon.wiring import make_runner
    from asad.common.config import Settings
    from asad.core.metrics import summarize
    from asad.core.model import JobPhase
    from asad.slurm.backend import JobState
    from asad.spec.load import load_workflow
    from asad.view.status import status_rows
    from asad.store.repo import Store

    settings = Settings(state_dir=tmp_path / "state", backend="slurm")
    settings.state_dir.mkdir()
    store = Store(settings.database_url)
    path = write_workflow(tmp_path / "arrc.yaml", """\
name: arrc
defaults: {time: 5m, mem: 100M}
stages:
  - {name: w, array: 0-7%2, run: sleep 4}
""")
    wf = store.add_workflow(load_workflow(str(path)), time.time(), strategy="per-stage")
    runner = make_runner(settings, store, SlurmCLI(slurm_conf=cluster.slurm_conf))
    runner.tick()  # submitted; the daemon would poll it again only ~30 s later
    folder = settings.run_dir / str(wf.id)
    deadline = time.time() + 40
    while not ((folder / "w.1.end").exists() and (folder / "w.2.alloc").exists()) and time.time() < deadline:
        time.sleep(0.2)
    (row,), _ = status_rows(store, wf.id)
    job = store.load_workflows([wf.id])[0].jobs[0]
    assert job.array_tasks is None  # not polled since the submission
    assert row["st"] == "R" and "(None)" not in row["reason"], row
    tasks = row["array_tasks"]
    assert sum(tasks.values()) == 8 and tasks.get("CD", 0) >= 2 and tasks.get("PD", 0) >= 2, tasks

    store.request_cancel(wf.id)
    runner.tick()  # the cancel (asad cancel, carried out by the daemon)
    ended = store.load_workflows([wf.id])[0]
    assert ended.state.value == "CANCELLED"
    counts = summarize(ended)["stages"][0]["array_tasks"]
    assert sum(counts.values()) == 8 and not {"R", "PD"} & set(counts), counts  # nothing of it runs or waits
    deadline = time.time() + 30
    while time.time() < deadline:  # the daemon's next polls take Slurm's word on the cancelled job
        time.sleep(2)
        runner.tick()
        job = store.load_workflows([wf.id])[0].jobs[0]
        if job.phase is JobPhase.DONE:
            break
    assert job.phase is JobPhase.DONE and job.state is JobState.CANCELLED, job
    sacct = runner.backend.cmd.run("sacct", ["-X", "-n", "-P", "-o", "JobID,State", "-j", str(job.job_id)]).stdout
    completed = sum(1 for line in sacct.splitlines() if line.endswith("|COMPLETED"))
    assert completed >= 2 and job.array_tasks == {"CD": completed, "CA": 8 - completed}, (job.array_tasks, sacct)
    res = asad(asad_env(cluster, settings.state_dir), "show", str(wf.id))
    assert f"array 0-7%2: tasks CD {completed}, CA {8 - completed}" in res.stdout, res.stdout
    store.close()
