"""Issue 36, item 2, on the real cluster: a stage's ``env:`` value reaches the job byte-exact
(commas, quotes, newlines, 100 kB) through the job's environment, and slurmctld's copy of the
batch script (``scontrol write batch_script``, what ``sacct --batch-script`` would store) holds
none of it. For one job per stage and for the big-job strategy (one job, a value per stage)."""

from __future__ import annotations

import json
import subprocess

import pytest

from test_workflows_real import asad, asad_env, write_workflow

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(400)]

SECRET = "s3cr3t,a=b,'q' \"dq\" $(false) `x` ; \\n ✓\nline two,\n" + "z" * 100_000
OTHER = "other,value\nwith 'quotes'"


def _workflow(strategy: str) -> str:
    return (f"name: env-{strategy}\nstrategy: {strategy}\ndefaults: {{time: 5m, mem: 200M, cpus: 1}}\nstages:\n"
            f"  - name: a\n    run: \"printf '%s' \\\"$TOKEN\\\" > a-{strategy}.out\"\n"
            f"    env: {{TOKEN: {json.dumps(SECRET)}}}\n"
            f"  - name: b\n    after: [a]\n    run: \"printf '%s' \\\"$TOKEN\\\" > b-{strategy}.out\"\n"
            f"    env: {{TOKEN: {json.dumps(OTHER)}}}\n")


def _batch_script(env: dict[str, str], job_id: int) -> str:
    res = subprocess.run(["scontrol", "write", "batch_script", str(job_id), "-"], env=env, capture_output=True,
                         text=True, timeout=30, check=False)
    assert res.returncode == 0, res.stderr
    return res.stdout


@pytest.mark.parametrize("strategy", ["per-stage", "big-job"])
def test_env_values_reach_the_job_and_never_its_script(cluster, tmp_path, strategy):
    env = asad_env(cluster, tmp_path / "state")
    wf = write_workflow(tmp_path / "env.yaml", _workflow(strategy))
    res = asad(env, "run", str(wf), "--backend", "slurm", "--json", timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    summary = json.loads(res.stdout)
    assert summary["state"] == "COMPLETED", summary["message"]
    assert (tmp_path / f"a-{strategy}.out").read_bytes() == SECRET.encode()
    assert (tmp_path / f"b-{strategy}.out").read_bytes() == OTHER.encode()
    job_ids = {s["job_id"] for s in summary["stages"]}
    assert len(job_ids) == (1 if strategy == "big-job" else 2)
    for job_id in job_ids:
        script = _batch_script(env, job_id)
        assert "asad-stage-" in script  # it is the job's script
        assert "s3cr3t" not in script and "zzzz" not in script and "other,value" not in script
