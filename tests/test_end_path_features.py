"""scripts/end_path_features.py (issue 37, r37e): the held-out check, the across-runs agreement
and the end-path label read from a kept slurmctld.log."""

from __future__ import annotations

import pytest

from tests.script_module import load_script


def _load():  # noqa: ANN202
    return load_script("end_path_features")


def _row(log: str, label: str, path: str, **features) -> dict:
    base = {name: 0 for name in ("nodes", "script_s")}
    base.update(log=log, label=label, path=path, batch_node="n1", **features)
    return base


def test_held_out_rule_scores_a_separating_feature_one_and_a_constant_one_half():
    mod = _load()
    data = []
    for log in ("a", "b", "c"):
        for i in range(4):  # long jobs take the epilog path in every log, short ones the reply
            data.append(_row(log, f"j{i}", "main" if i >= 2 else "backfill", script_s=10 + 20 * i, nodes=1))
    *_, separating = mod.leave_one_log_out(data, "script_s")
    *_, constant = mod.leave_one_log_out(data, "nodes")
    assert separating == 1.0
    assert constant == 0.5


def test_job_agreement_counts_jobs_on_one_path_in_every_run_against_a_coin():
    mod = _load()
    data = [_row("s", "x", "main"), _row("s.run2", "x", "main"),          # agrees
            _row("s", "y", "main"), _row("s.run2", "y", "backfill"),      # differs
            _row("s", "z", "backfill"), _row("s.run2", "z", "backfill"),  # agrees
            _row("s", "w", "backfill")]                                    # one run only: not counted
    agree, jobs, expected = mod.job_agreement(data)
    share = 3 / 7
    assert (agree, jobs) == (2, 3)
    assert expected == pytest.approx(3 * (share ** 2 + (1 - share) ** 2))


def test_ties_fifo_m1_end_is_decided_as_the_reply_in_every_log():
    """p37h, q37f: in all three ties-fifo logs m1's end brought no main pass, and the backfill
    thread started the jobs ~1.9 s later, though an immediate main pass would have started s11
    there; the label must read that as a decided reply."""
    mod = _load()
    from asad.bench.sim_vs_real import load_recordings
    from asad.bench.sim_vs_real_logs import log_path

    recs = [r for r in load_recordings(None) if r["scenario"] == "ties-fifo" and log_path(r) is not None]
    assert len(recs) == 3
    for rec in recs:
        m1 = next(r for r in mod.rows(rec) if r["label"] == "m1")
        assert m1["path"] == "backfill" and m1["gap"] >= mod.MAIN_WITHIN_S
        assert m1["epilog_would_start"] is True
