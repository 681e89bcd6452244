"""scripts/sim_plan_certificate.py: the incremental-planning certificate copies only answers the full
search gives again, and the check that says so fails when the certificate is weakened."""

from __future__ import annotations

import json
import pickle
import sys
from pathlib import Path

import pytest

from asad.slurm.sim import backfill, make_simulator

from tests.script_module import load_script

KINDS = ("clock", "earlier plans", "nodes", "running jobs", "search ended at the horizon")


def _script(name: str):  # noqa: ANN202
    return load_script(name)


@pytest.mark.slow
@pytest.mark.skipif(backfill.pass_kernel.backfill_pass is None, reason="needs numba")
def test_certified_copies_equal_the_search_and_a_weakened_certificate_is_caught(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sim = make_simulator("hpc2n", load=5.0, seed=3, warmup_s=0.0)
    sim.run_until(sim.now() + 0.3 * 86400)  # ~400 jobs queued: the passes plan as well as start
    snap, calls, out = tmp_path / "snap.pkl", tmp_path / "calls.pkl", tmp_path / "fig.json"
    snap.write_bytes(pickle.dumps(sim))
    monkeypatch.setattr(sys, "argv", ["x", "capture", str(snap), "--days", "0.0012", "--out", str(calls)])
    assert _script("sim_pass_replay").main() == 0
    cert = _script("sim_plan_certificate")
    copies, every = tmp_path / "copies.pkl", tmp_path / "all.pkl"
    monkeypatch.setattr(sys, "argv", ["x", str(calls), "--json", str(out), "--copies", str(copies),
                                      "--copies-all", str(every)])
    assert cert.main() == 0  # the recorded digest, the compiled search's answers, no wrong copy
    fig = json.loads(out.read_text())
    assert fig["digest_is_recorded"] is True
    assert fig["certified"] > 0 and fig["certified_but_different"] == 0
    assert fig["answer_equal_to_previous"] < fig["searches_in_passes_after_the_first"]  # answers do move
    # every kind of difference ignored: the answers that moved are copied, and the check says so
    monkeypatch.setattr(sys, "argv", ["x", str(calls), "--json", str(out)]
                        + [a for kind in KINDS for a in ("--weaken", kind)])
    assert cert.main() == 1
    assert json.loads(out.read_text())["certified_but_different"] > 0

    # the ceiling's kernel answers the copied searches from the copies and still returns the
    # recorded digest; a copy that is not the search's answer is caught by that digest
    ceiling = _script("sim_plan_reuse_ceiling")
    monkeypatch.setattr(sys, "argv", ["x", str(calls), "--copies", f"cert={copies}", "--copies", f"all={every}",
                                      "--rounds", "1", "--json", str(out)])
    assert ceiling.main() == 0
    assert json.loads(out.read_text())["variants"]["copied: all"]["digest_ok"] is True
    answers = pickle.loads(every.read_bytes())
    p, entries = next((p, e) for p, e in sorted(answers.items()) if any(s > -1e300 for _, s, _ in e))
    i = next(i for i, (_, s, _) in enumerate(entries) if s > -1e300)
    jid, start, nodes = entries[i]
    entries[i] = (jid, start + 3600.0, nodes)  # a planned start an hour late
    every.write_bytes(pickle.dumps(answers))
    assert ceiling.main() == 1
    assert json.loads(out.read_text())["variants"]["copied: all"]["digest_ok"] is False
