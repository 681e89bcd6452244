"""scripts/lead_frontier_report.py: the hindsight choice of a lead per group and the wait-weighted sums."""

from __future__ import annotations

from tests.script_module import load_script


def _report():  # noqa: ANN202
    return load_script("lead_frontier_report")


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


def test_the_knapsack_within_a_budget_is_the_brute_force_optimum() -> None:
    """The bound's figure is choose_within's: on small random cases it must equal the best of every
    assignment of a lead per group whose idle (rounded up to the unit per group) fits the budget."""
    import itertools
    import random

    rep = _report()
    leads = [0.0, 300.0, 900.0]
    rng = random.Random(7)
    for case in range(40):
        per_b = {}
        for b in range(rng.randint(1, 5)):
            per_b[("s", "c", f"st{b}")] = {L: (rng.choice([0.0, 30.0, 500.0, 2000.0]) if L else 2000.0,
                                              0.0 if not L else float(rng.randint(0, 20) * 60))
                                           for L in leads}
        group = (lambda b: b[2]) if case % 2 else (lambda b: "g" + str(int(b[2][2:]) % 2))
        budget = float(rng.randint(0, 30) * 60)
        choice, wait, idle = rep.choose_within(per_b, group, leads, budget)
        groups = sorted({group(b) for b in per_b})
        best = min(
            sum(per_b[b][pick[groups.index(group(b))]][0] for b in per_b)
            for pick in itertools.product(leads, repeat=len(groups))
            if sum(-(-sum(per_b[b][pick[i]][1] for b in per_b if group(b) == g) // 60)
                   for i, g in enumerate(groups)) * 60 <= budget)
        assert wait == best and idle <= budget
        assert wait == sum(per_b[b][choice[group(b)]][0] for b in per_b)


def test_the_frontier_script_patches_the_engine_and_puts_it_back() -> None:
    """scripts/lead_frontier.py replaces four engine functions by name: a rename breaks its import,
    and switching the family off must restore asad's own rule."""
    import asad.core.context as context_mod
    import asad.core.engine as engine_mod
    import asad.slurm.priority_rules as rules_mod
    import asad.strategies.auto as auto_mod

    mod = load_script("lead_frontier")
    own = (context_mod.Context.quantile_begin, engine_mod.release_early, auto_mod.lead_cap, rules_mod.rules_of)
    try:
        mod.fixed_leads(True)
        assert context_mod.Context.quantile_begin is mod._fixed_lead_begin
        assert engine_mod.release_early() == (False, "") and auto_mod.lead_cap() is None
    finally:
        mod.fixed_leads(False)
    assert (context_mod.Context.quantile_begin, engine_mod.release_early, auto_mod.lead_cap,
            rules_mod.rules_of) == own
