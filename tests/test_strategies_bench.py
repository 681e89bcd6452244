"""``asad bench strategies``' arithmetic: the issue-11 targets computed from rows of known values
(the simulation itself is exercised by tests/test_core_sim.py and tests/test_strategy_auto.py)."""

from __future__ import annotations

import pytest

from asad.bench.strategies import aggregate, markdown, variant_setup


def _row(seed: int, variant: str, makespan: float, core_h: float, interstage: float, cores: int = 28) -> dict:
    return {"preset": "hpc2n", "priority": "multifactor", "seed": seed, "measured": seed > 0,
            "workflow": "montage", "cores": cores, "variant": variant, "state": "COMPLETED",
            "makespan_s": makespan, "total_wait_s": interstage, "interstage_wait_s": interstage,
            "queue_wait_s": 0.0, "real_wait_s": 0.0, "core_hours": core_h, "overhead_core_hours": 0.0,
            "hit_ratio": None, "jobs": 9, "resubmissions": 0}


def test_targets_compare_the_default_with_the_best_variant_within_the_core_hour_budget():
    rows = []
    for seed, auto_ms in ((0, 1.0), (1, 900.0), (2, 1100.0)):  # seed 0 trains: not counted
        rows += [_row(seed, "per-stage", 1200.0, 10.0, 400.0),
                 _row(seed, "chain", 1000.0, 10.05, 200.0),
                 # faster, but 5% more core-hours: not a fair competitor for the target
                 _row(seed, "asa-naive", 800.0, 10.5, 0.0),
                 _row(seed, "auto", auto_ms, 10.1, 100.0)]
    agg = aggregate(rows)
    t = agg["targets"]["multifactor"]
    # cell means over seeds 1-2: auto 1000 s vs chain 1000 s (asa-naive is over the +1% budget)
    assert t["makespan_vs_best_cheap"] == pytest.approx(1.0)
    assert t["core_hours_vs_per_stage"] == pytest.approx(0.01)
    assert t["hidden_interstage_wait"] == pytest.approx(0.75)
    per_seed = agg["targets_per_seed"]
    assert sorted(per_seed) == [1, 2]
    # seed 1: auto is itself the best cheap variant; seed 2: chain's 1000 s beats its 1100 s
    assert per_seed[1]["multifactor"]["makespan_vs_best_cheap"] == pytest.approx(1.0)
    assert per_seed[2]["multifactor"]["makespan_vs_best_cheap"] == pytest.approx(1.1)
    assert per_seed[2]["multifactor"]["cells_worse"] == ["montage/hpc2n/28"]
    text = markdown({**agg, "wall_s": 1.0})
    assert "seed 2: multifactor 1.100" in text and "| multifactor | 1.000, 1.000 | 0 of 1 |" in text


def test_variant_names():
    assert variant_setup("auto") == ("auto", "dependency", "daemon", None)
    assert variant_setup("auto@0.1")[3] == 0.1
    with pytest.raises(SystemExit, match="unknown variant"):
        variant_setup("chain@0.1")
    with pytest.raises(SystemExit, match="must be a number"):
        variant_setup("auto@cheap")


def test_pooling_runs_judges_the_default_over_all_their_seeds(tmp_path):
    import json
    import subprocess
    import sys

    from tests.conftest import ROOT as REPO

    def row(seed, variant, makespan, core_h):  # noqa: ANN001, ANN202
        return {"priority": "multifactor", "measured": True, "state": "COMPLETED", "seed": seed,
                "variant": variant, "workflow": "w", "preset": "p", "cores": 28, "makespan_s": makespan,
                "total_wait_s": 0.0, "real_wait_s": 0.0, "core_hours": core_h, "overhead_core_hours": 0.0,
                "interstage_wait_s": 100.0 if variant == "per-stage" else 50.0, "hit_ratio": None,
                "resubmissions": 0}
    for name, seeds, extra in (("a", (1, 2), "asa-naive"), ("b", (3,), "auto@0.2")):
        rows = [row(s, v, m, c) for s in seeds for v, m, c in
                (("per-stage", 1000.0, 10.0), ("chain", 900.0, 10.0), ("auto", 810.0 + s * 10, 10.3), (extra, 1.0, 99.0))]
        (tmp_path / name).mkdir()
        (tmp_path / name / "strategies.json").write_text(json.dumps({"rows": rows}))
    out = subprocess.run([sys.executable, str(REPO / "scripts" / "strategies_pool.py"), str(tmp_path / "a"),
                          str(tmp_path / "b"), "--resamples", "50"], capture_output=True, text=True, check=True).stdout
    assert "over 3 measured seeds (1..3); variants compared: auto, chain, per-stage" in out  # only what all have
    assert "makespan_vs_best_cheap     0.922" in out  # mean of 820, 830, 840 over chain's 900
    assert "core_hours_vs_per_stage    0.030" in out and "hidden_interstage_wait     0.500" in out
    # --variants narrows the comparison: without chain the best cheap variant is per-stage's 1000
    out = subprocess.run([sys.executable, str(REPO / "scripts" / "strategies_pool.py"), str(tmp_path / "a"),
                          "--variants", "per-stage,auto", "--resamples", "50"],
                         capture_output=True, text=True, check=True).stdout
    assert "over 2 measured seeds (1..2); variants compared: auto, per-stage" in out
    assert "makespan_vs_best_cheap     0.825" in out  # mean of 820, 830 over per-stage's 1000
    out = subprocess.run([sys.executable, str(REPO / "scripts" / "strategies_pool.py"), str(tmp_path / "a"),
                          str(tmp_path / "b"), "--seeds", "2,3", "--resamples", "50"],
                         capture_output=True, text=True, check=True).stdout
    assert "over 2 measured seeds (2..3)" in out and "makespan_vs_best_cheap     0.928" in out  # 835 / 900


def test_result_row_counts_only_the_waits_of_stages_that_follow_another():
    from asad.bench.strategies import EXAMPLES, result_row
    from asad.spec.load import load_workflow

    spec = load_workflow(EXAMPLES / "montage.yaml")
    first, second = spec.stages[0].name, next(st.name for st in spec.stages if spec.predecessors(st.name))
    stages = [{"name": first, "wait_s": 100.0, "perceived_wait_s": 100.0, "attempts": 1},
              {"name": second, "wait_s": 40.0, "perceived_wait_s": 30.0, "attempts": 3}]
    s = {"state": "COMPLETED", "makespan_s": 500.0, "total_wait_s": 130.0, "queue_wait_s": 140.0,
         "core_hours": 2.0, "overhead_core_hours": 0.1, "hit_ratio": None, "jobs": 4, "stages": stages}
    row = result_row(s, spec, seed=7, variant="auto")
    assert row["seed"] == 7 and row["variant"] == "auto" and row["makespan_s"] == 500.0
    assert row["interstage_wait_s"] == 30.0  # the first stage's wait cannot be hidden
    assert row["real_wait_s"] == 70.0 and row["resubmissions"] == 2


def test_the_real_bench_counts_the_wait_after_the_first_stage_apart():
    from asad.bench.real_strategies import perceived_waits
    from asad.core.model import StageRun, WorkflowRun
    from asad.spec.load import parse_workflow

    spec = parse_workflow("name: w\nstages:\n  - {name: a, run: 'true', time: 1m}\n"
                          "  - {name: b, run: 'true', time: 1m, after: [a]}\n")
    wf = WorkflowRun(id=1, spec=spec, strategy="auto", mode="dependency")
    wf.stages = {"a": StageRun(1, "a", start_time=130.0, end_time=200.0),
                 "b": StageRun(1, "b", start_time=245.0, end_time=300.0)}
    assert perceived_waits(wf, t0=100.0) == (75.0, 45.0)


def test_the_default_is_also_judged_against_per_stage_by_hand():
    rows = []
    for seed in (1, 2):
        rows += [_row(seed, "per-stage", 1000.0, 10.0, 300.0),  # asad's per-stage, learned limits
                 _row(seed, "per-stage-user", 1200.0, 10.0, 400.0),  # the file's limits
                 _row(seed, "auto", 900.0, 10.0, 200.0)]
    t = aggregate(rows)["targets"]["multifactor"]
    assert t["hidden_interstage_wait"] == pytest.approx(1 - 200 / 300)
    assert t["hidden_vs_by_hand"] == pytest.approx(0.5)
    assert "| 50% |" in markdown({**aggregate(rows), "wall_s": 1.0})


def test_learned_limits_are_what_the_time_learner_proposes_and_never_above_the_files():
    from asad.bench.strategies import EXAMPLES, learned_limits, scale_spec
    from asad.spec.load import load_workflow

    spec = scale_spec(load_workflow(EXAMPLES / "montage.yaml"), 28, 28, 1.0)
    by_default, tight = learned_limits(spec), learned_limits(spec, margin=1.5, slack_s=60)
    for user, learned, tight_stage in zip(spec.stages, by_default.stages, tight.stages, strict=True):
        run_s = user.simulate.runtime_s
        assert learned.time_s == min(user.time_s, 60 * -(-(2 * run_s + 600) // 60))
        assert tight_stage.time_s == min(user.time_s, max(60, 60 * -(-(1.5 * run_s + 60) // 60)))
    assert sum(s.time_s for s in tight.stages) < sum(s.time_s for s in spec.stages)
