"""The sizing bench: MAQ on a tiny hand-computed trace, and the anchor reproduced on the real traces."""

import csv
import gzip
from pathlib import Path

import pytest

from asad.bench.sizing import (DEFAULT_TRACES, Tally, load_trace, load_traces, play_attempt, replay_agent,
                               replay_anchor, replay_requests, run)
from asad.sizing.base import SizingError
from asad.sizing.registry import make_agent

MIB = 1024 * 1024
COLUMNS = ["task_id", "process", "status", "cpus", "memory", "time", "submit", "realtime", "%cpu", "peak_rss", "rchar"]


def write_trace(path: Path, rows: list[dict]) -> Path:
    with gzip.open(path, "wt", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=COLUMNS)
        w.writeheader()
        for r in rows:
            w.writerow(r)
    return path


def row(task_id, submit, peak_mib, realtime_s, mem_mib=1000, status="COMPLETED", process="P"):
    return {"task_id": task_id, "process": process, "status": status, "cpus": 2, "memory": mem_mib * MIB,
            "time": 3_600_000, "submit": submit, "realtime": int(realtime_s * 1000), "%cpu": 150.0,
            "peak_rss": peak_mib * MIB, "rchar": 1000}


@pytest.fixture
def tiny(tmp_path):
    # submission order: task 2 (peak 100, 10 s), task 1 (peak 300, 20 s), task 3 (peak 200, 10 s);
    # a FAILED row is not a sample and is dropped
    return load_trace(write_trace(tmp_path / "trace_tiny.csv.gz", [
        row(1, 200, 300, 20), row(2, 100, 100, 10), row(3, 300, 200, 10), row(4, 50, 999, 5, status="FAILED")]))


def test_load_keeps_completed_rows_in_submission_order(tiny):
    assert [t.task_id for t in tiny] == [2, 1, 3]
    assert tiny[0].peak_mb == 100 and tiny[0].realtime_s == 10 and tiny[0].cpu_usage == 1.5


def test_maq_of_the_requests_by_hand(tiny):
    s = replay_requests(tiny, 0.5).summary()
    # used = 100×10 + 300×20 + 200×10 = 9000 MB·s; allocated = 1000 × 40 s
    assert s["maq"] == pytest.approx(9000 / 40000)
    assert s["failed_pct"] == 0 and s["cpu_alloc_coreh"] == pytest.approx(2 * 40 / 3600)
    assert s["cpu_used_coreh"] == pytest.approx(1.5 * 40 / 3600)


def test_maq_of_the_anchor_by_hand(tiny):
    s = replay_anchor(tiny, 0.5).summary()
    # task 2 at the request: 1000×10. task 1 at 110 (100 × 1.1) < 300: killed at 10 s → 110×10 wasted,
    # then 220 < 300: killed → 220×10, then 440: 440×20. task 3 at 330 (300 × 1.1): 330×10.
    alloc = 1000 * 10 + 110 * 10 + 220 * 10 + 440 * 20 + 330 * 10
    assert s["maq"] == pytest.approx(9000 / alloc)
    assert s["oom"] == 2 and s["failed_pct"] == pytest.approx(200 / 3)
    assert replay_anchor(tiny, 0.1).summary()["maq"] == pytest.approx(
        9000 / (1000 * 10 + 110 * 2 + 220 * 2 + 440 * 20 + 330 * 10))


def test_a_kill_wastes_the_whole_allocation_and_cpus_stretch_run_time(tiny):
    from asad.sizing.base import Request

    tally = Tally()
    out = play_attempt(tally, tiny[1], Request(cpus=1, mem_mb=200, time_s=3600), ttf=0.5)
    # 1.5 busy cores on 1 CPU run 1.5× longer: 30 s; killed at half: 15 s
    assert out.state == "OUT_OF_MEMORY" and out.elapsed_s == pytest.approx(15.0)
    assert tally.alloc_mb_s == pytest.approx(200 * 15) and tally.used_mb_s == 0
    out = play_attempt(tally, tiny[1], Request(cpus=1, mem_mb=400, time_s=10), ttf=0.5)
    assert out.state == "TIMEOUT" and tally.timeouts == 1


def test_agents_replay_on_the_tiny_trace(tiny):
    s = replay_agent(tiny, 0.5, lambda seed: make_agent("pc95", seed=seed)).summary()
    assert s["tasks"] == 3 and 0 < s["maq"] <= 1
    res = run({"tiny": tiny}, [0.5], ["pc95", "sizey-like"])
    assert set(res["ttf"]["0.5"]["totals"]) == {"requests", "anchor-maxpeak×1.1", "ceiling-hindsight",
                                                "ceiling-cold-start", "pc95", "sizey-like"}


@pytest.mark.skipif(not DEFAULT_TRACES.is_dir(), reason=f"nf-core traces not present at {DEFAULT_TRACES}")
def test_anchor_reproduces_the_measured_79_percent():
    traces = load_traces(DEFAULT_TRACES)
    assert len(traces) == 6
    anchor = [replay_anchor(t, 0.5).summary() for t in traces.values()]
    own = [replay_requests(t, 0.5).summary() for t in traces.values()]
    assert sum(a["maq"] for a in anchor) / 6 == pytest.approx(0.790, abs=0.0005)
    assert sum(a["failed_pct"] for a in anchor) / 6 == pytest.approx(1.5, abs=0.05)
    assert sum(o["maq"] for o in own) / 6 == pytest.approx(0.417, abs=0.0005)
    assert anchor[list(traces).index("mag")]["maq"] == pytest.approx(0.546, abs=0.0005)


def test_parallel_replay_gives_the_same_numbers(tiny):
    one = run({"tiny": tiny, "again": tiny}, [0.5, 0.9], ["pc95", "bandit"], jobs=1)
    two = run({"tiny": tiny, "again": tiny}, [0.5, 0.9], ["pc95", "bandit"], jobs=2)
    assert one == two


def test_delayed_learning_sees_only_tasks_completed_before_a_submission(tmp_path):
    # all three submitted at once (t = 100..102 ms) and completed much later: with --delayed no
    # agent has seen anything, so every task runs at the user's request
    rows = [dict(row(i, 100 + i, peak, 10), complete=10_000 + i) for i, peak in ((1, 300), (2, 100), (3, 200))]
    path = tmp_path / "trace_burst.csv.gz"
    with gzip.open(path, "wt", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=COLUMNS + ["complete"])
        w.writeheader()
        for r in rows:
            w.writerow(r)
    tasks = load_trace(path)
    own = replay_requests(tasks, 0.5).summary()["maq"]
    assert replay_anchor(tasks, 0.5, delayed=True).summary()["maq"] == pytest.approx(own)
    delayed = replay_agent(tasks, 0.5, lambda s: make_agent("pc95", seed=s), delayed=True).summary()
    assert delayed["maq"] == pytest.approx(own) and delayed["oom"] == 0
    at_once = replay_agent(tasks, 0.5, lambda s: make_agent("pc95", seed=s)).summary()
    assert at_once["maq"] != pytest.approx(own)


def test_the_input_feature_is_only_what_was_known_at_submission(tmp_path):
    from asad.bench.sizing import load_trace

    cols = COLUMNS + ["complete", "tag", "wchar"]
    # sample A: task 1 ends at 5 s writing 700 B; task 2 (submitted at 6 s) sees 700 B; task 3
    # (submitted at 2 s, before task 1 ended) sees nothing; sample B's task 4 sees nothing either
    rows = [dict(row(1, 1000, 100, 4), complete=5000, tag="A", wchar=700),
            dict(row(2, 6000, 100, 4), complete=10_000, tag="A", wchar=50),
            dict(row(3, 2000, 100, 4), complete=9000, tag="A", wchar=10),
            dict(row(4, 7000, 100, 4), complete=12_000, tag="B", wchar=10)]
    path = tmp_path / "trace_up.csv.gz"
    with gzip.open(path, "wt", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=cols)
        w.writeheader()
        for r in rows:
            w.writerow(r)
    up = {t.task_id: t.input_bytes for t in load_trace(path)}
    assert up == {1: None, 3: None, 2: 700.0, 4: None}
    assert all(t.input_bytes is None for t in load_trace(path, "none"))
    assert {t.input_bytes for t in load_trace(path, "rchar")} == {1000.0}  # the task's own reads
    with pytest.raises(ValueError):
        load_trace(path, "future")


def test_paper_retry_rules():
    from asad.bench.sizing import paper_retry, paper_rule
    from asad.sizing.base import Caps, Outcome, Request

    caps = Caps(max_cpus=8, max_mem_mb=10_000, max_time_s=None)
    killed = Outcome(request=Request(1, 1000, 600), peak_mem_mb=1000.0, cpu_s=1.0, elapsed_s=5.0,
                     input_bytes=None, state="OUT_OF_MEMORY")
    assert paper_rule("pc95") == "witt" and paper_rule("tovar-min-waste") == "tovar"
    assert paper_rule("sizey-like") == "smallest" and paper_rule("bandit") == "zunker"
    assert paper_retry("witt", killed, 1, 5000.0, caps).mem_mb == 2000  # doubling, not the largest peak
    assert paper_retry("tovar", killed, 1, 5000.0, caps).mem_mb == 5000  # the largest peak seen (a_m)
    user = Request(1, 3000, 600)
    assert paper_retry("tovar", killed, 2, 5000.0, caps, default=user).mem_mb == 3000  # the user's maximum
    assert paper_retry("tovar", killed, 1, 800.0, caps, default=user).mem_mb == 3000  # a_m no bigger
    assert paper_retry("tovar", killed, 2, 5000.0, caps).mem_mb == 10_000  # then the whole node
    timed_out = Outcome(request=Request(1, 1000, 600), peak_mem_mb=None, cpu_s=1.0, elapsed_s=600.0,
                        input_bytes=None, state="TIMEOUT")
    assert paper_retry("witt", timed_out, 1, None, caps).time_s == 1200


def test_zunker_retry_rule_must_grow():
    from asad.bench.sizing import paper_retry
    from asad.sizing.base import Caps, Outcome, Request

    caps = Caps(max_cpus=8, max_mem_mb=10_000, max_time_s=None)
    killed = Outcome(request=Request(1, 1000, 600), peak_mem_mb=1000.0, cpu_s=1.0, elapsed_s=5.0,
                     input_bytes=None, state="OUT_OF_MEMORY")
    user = Request(1, 3000, 600)

    def retry(pick_mb, default=user):
        return paper_retry("zunker", killed, 1, 9000.0, caps, default=default,
                           agent_pick=Request(1, pick_mb, 600)).mem_mb

    assert retry(1500) == 1500  # the agent's own larger pick stands (not the largest peak seen)
    assert retry(700) == 1400  # a smaller pick is doubled
    assert retry(400) == 3000  # doubled still too small: the user's value
    assert retry(400, default=Request(1, 900, 600)) == 2000  # thesis silent: double the failed
    with pytest.raises(SizingError):
        paper_retry("zunker", Outcome(request=Request(1, 10_000, 600), peak_mem_mb=10_000.0, cpu_s=1.0,
                                      elapsed_s=5.0, input_bytes=None, state="OUT_OF_MEMORY"),
                    1, None, caps, default=user, agent_pick=Request(1, 500, 600))


def test_qlearn_withdraw_restores_state():
    from asad.sizing.base import Request
    from asad.sizing.qlearn import QLearningAgent

    agent = QLearningAgent(seed=1)
    default = Request(2, 4000, 600)
    agent.propose(default)
    before = (agent.state, list(agent.pending))
    agent.propose(default)
    agent.withdraw()
    assert (agent.state, agent.pending) == before
