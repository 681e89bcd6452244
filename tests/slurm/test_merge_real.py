"""A merged job on the real local cluster (``share_jobs = "cost"``, issue 35): stages of different
CPUs in one Slurm job sized to the largest, each stage still with its own markers, log, status row
and OOM handling, and ``asad status``/``explain`` saying that they share a job and why.

Run alone, as root: ``slurm-scripts/local-cluster.sh up --accounting && .venv/bin/pytest -m slurm tests/slurm``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from asad.slurm.backend import JobState
from asad.slurm.cli import SlurmCLI

from test_workflows_real import asad, asad_env, store_id, two_runs_on_busy_nodes, write_workflow

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(900)]

# Idle cores priced at almost nothing: once each stage's run time and wait are learned (run 1, on a
# busy cluster) the cost rule merges the three. c asks for 100M and uses 300M: the merged job (the
# largest request, 100M) is killed in c, and c alone is retried with more memory.
MERGE_WORKFLOW = """\
name: merge
strategy: auto
idle_price: 0.000001
sizing: "off"
defaults: {{time: 5m, mem: 100M}}
stages:
  - {{name: a, cpus: {half}, run: "sleep 3; echo a ran"}}
  - {{name: b, cpus: {full}, after: [a], run: "sleep 3; echo b ran"}}
  - name: c
    cpus: {half}
    after: [b]
    run: python3 -c "import time; x = bytearray(300 * 1024 * 1024); time.sleep(3); print('c ran')"
"""


def test_stages_of_different_sizes_merge_and_each_keeps_its_own_markers_log_and_oom_retry(cluster, tmp_path):
    if not cluster.accounting:
        pytest.skip("needs accounting (MaxRSS) to see OverMemoryKill's kill of the merged job")
    full = cluster.cpus_per_node
    wf = write_workflow(tmp_path / "merge.yaml", MERGE_WORKFLOW.format(half=max(1, full // 2), full=full))
    state = tmp_path / "state"
    env = asad_env(cluster, state)
    env.update(ASAD_SHARE_JOBS="cost", ASAD_PREDICTOR="median-all")  # a positive wait after one busy run
    backend = SlurmCLI(slurm_conf=cluster.slurm_conf)
    run1, run2 = two_runs_on_busy_nodes(env, wf, backend, full, timeout=400)
    assert run1["state"] == run2["state"] == "COMPLETED", (run1["message"], run2["message"])
    assert len({s["job_id"] for s in run1["stages"]}) == 3  # nothing learned yet: a job per stage
    st = {s["name"]: s for s in run2["stages"]}
    run_dir = Path(env["ASAD_STATE_DIR"]) / "runs" / str(run2["id"])
    found = backend.find(f"asad:{store_id(state)}:{run2['id']}:")
    # which stages merged depends on the waits learned in run 1 (a wait of 0 s after afterok
    # leaves nothing to win); c, the OOM one, is in a merged job or alone, and retried either way
    first_jobs = {}
    for name in ("a", "b", "c"):
        first_jobs.setdefault(int((run_dir / f"{name}.start").read_text().split()[2])
                              if name != "c" else _first_job_of_c(found, first_jobs), []).append(name)
    merged = {j: names for j, names in first_jobs.items() if len(names) > 1}
    assert merged, f"nothing merged: {first_jobs}"
    (merged_id, names), = merged.items()
    assert found[merged_id].alloc_cpus == full  # sized to the largest stage
    for name in names:
        if name != "c":  # its own start and end markers in the merged job, and its own log
            assert (run_dir / f"{name}.start").read_text().split()[2] == str(merged_id)
            assert (run_dir / f"{name}.end").read_text().split()[0] == "0"
            assert (run_dir / f"{name}.log").read_text().strip() == f"{name} ran"
    # c asks for 100M and uses 300M: killed for memory (in the merged job or its own), retried alone
    # with more. Once or twice: OverMemoryKill samples once a second, so the kill may catch c's
    # peak part way (seen: 222 of 316 MB), and asad's retry rule (the cheaper of double the request
    # and the largest peak seen, at least 1.25 x the killed peak: asad/sizing/retry.py) may then
    # be killed again before it asks for enough.
    assert 2 <= st["c"]["attempts"] <= 3 and st["c"]["mem_mb"] > 100 and st["c"]["job_id"] != merged_id
    assert found[_first_job_of_c(found, first_jobs)].state is JobState.OUT_OF_MEMORY
    assert st["c"]["start"] >= st["b"]["end"]
    explain = asad(env, "explain", str(run2["id"]))
    assert explain.returncode == 0, explain.stderr
    assert f"shared job: one job ({merged_id}) runs {', '.join(names)} in turn" in explain.stdout
    assert f"cost rule: {names[1]} rides: in one job of {full} CPUs" in explain.stdout
    assert f"merged, sized to the largest: {full} CPUs" in explain.stdout
    status = asad(env, "status", str(run2["id"]), "--json", "--all")
    assert status.returncode == 0 and {r["stage"] for r in json.loads(status.stdout)["stages"]} >= {"a", "b", "c"}


def _own_jobs_of_c(found: dict) -> dict[int, int]:
    """c's own jobs by attempt: those whose --comment (asad's tag, ``...:c:<attempt>``) names c; a
    merged job carries the tag of its first stage."""
    return {int(status.comment.rsplit(":", 1)[1]): jid for jid, status in found.items() if ":c:" in status.comment}


def _first_job_of_c(found: dict, first_jobs: dict[int, list[str]]) -> int:
    """The job c's first attempt ran in: its own job of attempt 1, or else the merged job it rode
    in, b's (merged stages are adjacent, so c rides in b's job)."""
    own = _own_jobs_of_c(found)
    if 1 in own:
        return own[1]
    (b_job,) = [jid for jid, names in first_jobs.items() if "b" in names]
    return b_job
