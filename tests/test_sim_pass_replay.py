"""scripts/sim_pass_replay.py: recorded pass-kernel calls replay to the recorded run's outputs."""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

import pytest

from asad.slurm.sim import backfill, make_simulator

from tests.script_module import load_script


def _script():  # noqa: ANN202
    return load_script("sim_pass_replay")


@pytest.mark.skipif(backfill.pass_kernel.backfill_pass is None, reason="needs numba")
def test_a_replay_gives_the_recorded_runs_digest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture) -> None:
    sim = make_simulator("hpc2n", load=5.0, seed=3, warmup_s=0.0)
    sim.run_until(sim.now() + 0.3 * 86400)  # ~400 jobs queued: the passes plan as well as start
    snap, calls = tmp_path / "snap.pkl", tmp_path / "calls.pkl"
    snap.write_bytes(pickle.dumps(sim))
    script = _script()
    monkeypatch.setattr(sys, "argv", ["x", "capture", str(snap), "--days", "0.01", "--out", str(calls)])
    assert script.main() == 0
    recorded = pickle.loads(calls.read_bytes())
    assert len(recorded["calls"]) > 5
    monkeypatch.setattr(sys, "argv", ["x", "bench", str(calls), "--reps", "1"])
    assert script.main() == 0
    assert "(the recorded run's)" in capsys.readouterr().out
    # a replay of other inputs is told apart: the last pass dropped changes the digest
    recorded["calls"].pop()
    calls.write_bytes(pickle.dumps(recorded))
    assert script.main() == 1
    assert "NOT the recorded run's" in capsys.readouterr().out
