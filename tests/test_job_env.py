"""A stage's ``env:`` values reach its job only through the job's environment, never its batch
script (issue 36, item 2; asad/core/job_env.py). The real-Slurm half is tests/slurm/test_job_env_real.py."""

from __future__ import annotations

import os
import subprocess
from dataclasses import replace

from asad.daemon.wiring import CommandBuilder
from asad.common.config import Settings
from asad.core.context import BIG_JOB_STAGE, Context
from asad.core.engine import EngineConfig
from asad.core.job_env import big_job_env
from asad.core.learned import Learned
from asad.spec.load import load_workflow, parse_workflow
from asad.store.repo import Store
from tests.conftest import EXAMPLES

ODD = "a,b=c 'q' \"dq\" $(false) `x`\nsecond line ✓ " + "z" * 100_000


def _store_workflow(tmp_path, spec, strategy="per-stage"):  # noqa: ANN001, ANN202
    store = Store(f"sqlite:///{tmp_path / 'a.db'}")
    wf = store.add_workflow(spec, 0.0, strategy=strategy)
    store.close()
    return wf


def _stub(tmp_path):  # noqa: ANN001, ANN202
    stub = tmp_path / "stub-wrapper.sh"
    stub.write_text('#!/bin/bash\nprintf "%s=%s\\n" "$ASAD_STAGE" "$TOKEN" >> "$OUT"\n')
    stub.chmod(0o755)
    return stub


def test_a_stage_job_script_holds_no_env_value_and_the_request_carries_it(tmp_path):
    spec = parse_workflow("name: w\nstages:\n  - name: s\n    run: 'true'\n    env: {TOKEN: x}\n")
    spec = replace(spec, stages=[replace(spec.stages[0], env={"TOKEN": ODD})])
    wf = _store_workflow(tmp_path, spec)
    ctx = Context(EngineConfig(store_id="abc"), Learned(lambda *_: None, "last"), [])
    req = ctx.request_for(wf, "s")
    assert req.env == {"TOKEN": ODD}
    script = CommandBuilder(tmp_path / "runs")(wf, "s", req)
    assert "TOKEN" not in script and "zzzz" not in script and "a,b=c" not in script


def test_a_big_job_gives_each_stage_its_own_value_without_writing_one(tmp_path, monkeypatch):
    """Every stage runs in one allocation: each value travels under ASAD_ENV_<k>_NAME and the
    script names only the variable. Run with a stand-in srun that runs the wrapper in place."""
    import asad.daemon.wiring

    spec = parse_workflow("name: w\nstages:\n  - name: a\n    run: 'true'\n    env: {TOKEN: one}\n"
                          "  - name: b\n    run: 'true'\n    after: [a]\n    env: {TOKEN: x}\n"
                          "  - name: c\n    run: 'true'\n    after: [b]\n")
    spec = replace(spec, stages=[spec.stages[0], replace(spec.stages[1], env={"TOKEN": ODD}), spec.stages[2]])
    monkeypatch.setattr(asad.daemon.wiring, "WRAPPER", _stub(tmp_path))
    wf = _store_workflow(tmp_path, spec, strategy="big-job")
    ctx = Context(EngineConfig(store_id="abc"), Learned(lambda *_: None, "last"), [])
    req = ctx.big_job_request(wf)
    assert req.env == big_job_env(spec) == {"ASAD_ENV_0_TOKEN": "one", "ASAD_ENV_1_TOKEN": ODD}
    script = CommandBuilder(tmp_path / "runs")(wf, BIG_JOB_STAGE, req)
    assert "one" not in script and "zzzz" not in script and "a,b=c" not in script
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "srun").write_text('#!/bin/bash\nexec "${@: -1}"\n')
    (bin_dir / "srun").chmod(0o755)
    path = tmp_path / "job.sh"
    path.write_text(script)
    out = tmp_path / "out.txt"
    env = {**os.environ, **req.env, "PATH": f"{bin_dir}:{os.environ['PATH']}", "OUT": str(out)}
    subprocess.run(["bash", str(path)], check=True, env=env, timeout=60)
    assert out.read_text() == f"a=one\nb={ODD}\nc=\n"


def test_stages_with_different_env_values_never_share_a_job(tmp_path):
    """A shared job has one environment: a stage whose env: differs from its head's gets its own job."""
    from tests.test_share_jobs import MONTAGE_GROUPS, _run

    spec = load_workflow(EXAMPLES / "montage.yaml")
    stages = [replace(s, env={"TOKEN": "own"}) if s.name == "mDiffFit" else s for s in spec.stages]
    _, summary, wf = _run(f"sqlite:///{tmp_path / 'b.db'}", spec=replace(spec, stages=stages),
                          settings=Settings(share_jobs="on"))
    assert summary["state"] == "COMPLETED", summary["message"]
    groups = [j.stages for j in wf.jobs]
    assert ("mProjectPP",) in groups and ("mDiffFit",) in groups
    assert groups != MONTAGE_GROUPS and all(g in groups for g in MONTAGE_GROUPS[1:])
    same = [replace(s, env={"TOKEN": "all"}) for s in spec.stages]  # one env for all: still shared
    _, _, wf_same = _run(f"sqlite:///{tmp_path / 'c.db'}", spec=replace(spec, stages=same),
                         settings=Settings(share_jobs="on"))
    assert [j.stages for j in wf_same.jobs] == MONTAGE_GROUPS
