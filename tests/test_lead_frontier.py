"""scripts/lead_frontier_report.py: the hindsight choice of a lead per group and the wait-weighted sums."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "lead_frontier_report.py"


def _report():
    spec = importlib.util.spec_from_file_location("lead_frontier_report", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_choice_per_group_weighs_wait_against_idle_over_the_whole_group() -> None:
    rep = _report()
    # two boundaries of one group: a lead of 600 hides a's 1000-s wait for 100 idle core-s and
    # costs b 5000 idle core-s for 50 s of wait
    per_b = {("s", "c", "a"): {0.0: (1000.0, 0.0), 600.0: (0.0, 100.0)},
             ("s", "c", "b"): {0.0: (50.0, 0.0), 600.0: (0.0, 5000.0)}}
    one_group = lambda b: "g"  # noqa: E731
    choice, wait, idle = rep.choose(per_b, one_group, [0.0, 600.0], lam=0.1)
    assert choice == {"g": 600.0} and (wait, idle) == (0.0, 5100.0)  # 0 + 0.1 * 5100 < 1050
    choice, wait, idle = rep.choose(per_b, one_group, [0.0, 600.0], lam=1.0)
    assert choice == {"g": 0.0} and (wait, idle) == (1050.0, 0.0)  # 5100 > 1050
    # per boundary the oracle takes each one's best: a led, b not
    choice, wait, idle = rep.choose(per_b, lambda b: b[2], [0.0, 600.0], lam=1.0)
    assert choice == {"a": 600.0, "b": 0.0} and (wait, idle) == (50.0, 100.0)


def test_totals_sum_waits_of_later_stages_and_each_cell_once() -> None:
    rep = _report()
    row = dict(seed=1, variant="v", cell="c", cell_core_hours=10.0, makespan_s=100.0)
    rows = [dict(row, stage="first", after=[], perceived_wait_s=500.0),
            dict(row, stage="second", after=["first"], perceived_wait_s=30.0),
            dict(row, stage="third", after=["second"], perceived_wait_s=None),
            dict(row, cell="d", stage="x", after=["w"], perceived_wait_s=70.0, cell_core_hours=5.0)]
    wait, core, makespans = rep.totals(rows, "v")
    assert (wait, core) == (100.0, 15.0)  # the first stage's wait is no inter-stage wait
    assert makespans == {(1, "c"): 100.0, (1, "d"): 100.0}
    assert rep.totals(rows, "other")[:2] == (0.0, 0.0)


def test_groups_by_key_and_by_predecessor_width() -> None:
    rep = _report()
    specs = rep.stage_specs()
    # montage's mDiffFit follows the as-wide mProjectPP, mBackground the 1-core mBgModel
    assert rep.boundary_group(specs, "montage-56", "mDiffFit", "feature").endswith("|wide-pred")
    assert rep.boundary_group(specs, "montage-56", "mBackground", "feature").endswith("|narrow-pred")
    assert rep.boundary_group(specs, "statistics-56", "aggregate", "feature").endswith("|narrow-pred")
    assert rep.boundary_group(specs, "statistics-56", "load", "key") is None  # a first stage
    assert rep.boundary_group(specs, "statistics-56", "reduce", "key") is None  # narrow: afterok
    assert "cpus=56" in rep.boundary_group(specs, "statistics-56", "statistics", "key")
