"""scripts/sim_end_paths.py: the log side (how an end's freed nodes were first used) and the
replay side (each end's path, forced paths) of branch p37h's diagnosis of ties-fifo run 3."""

from __future__ import annotations

import pytest

from asad.bench.sim_vs_real import compare, load_recordings, replay
from asad.slurm.sim import simulator as simulator_module

from tests.script_module import load_script


def _script():  # noqa: ANN202
    return load_script("sim_end_paths")


def _recording(rid: str) -> dict:
    return next(r for r in load_recordings(None) if r["id"] == rid)


def test_node_lists_expand_as_slurm_writes_them() -> None:
    expand = _script().expand
    assert expand("n4") == {"n4"}
    assert expand("n[4-5]") == {"n4", "n5"}
    assert expand("n[1-2,4]") == {"n1", "n2", "n4"}


@pytest.mark.parametrize("rid, gap", [("ties-fifo", 1.94), ("ties-fifo.run2", 1.89), ("ties-fifo.run3", 1.95)])
def test_m1s_nodes_went_to_the_backfill_thread_in_every_ties_fifo_log(rid: str, gap: float) -> None:
    # Slurm ran no main pass at m1's end although s11 fitted on its nodes: the reply path
    verdict, seen = _script().log_reuse(_recording(rid))["m1"]
    assert verdict == "backfill"
    assert seen == pytest.approx(gap, abs=0.01)


def test_an_end_followed_by_a_pass_at_once_reads_as_main() -> None:
    # ties-fifo run 3: s01 ends at 80.054 s, "sched: Allocate" of s10 on its node at 80.508 s
    verdict, seen = _script().log_reuse(_recording("ties-fifo.run3"))["s01"]
    assert verdict == "main"
    assert seen == pytest.approx(0.45, abs=0.01)


def test_the_trace_leaves_the_replay_as_it_was_and_forcing_a_path_changes_only_that_end() -> None:
    script = _script()
    rec = _recording("ties-fifo.run3")
    # main's fixed sequence before f37m (12 of 18 ends by the reply, the message 0.4 s after the
    # end) sent m1 by the message; the fixed replay now sends every racing end by the reply
    old = {"already_complete_share": 12 / 18, "epilog_s": 0.4}
    plain, trace = script.traced_replay(rec, set(), **old)
    assert plain == replay(rec, **old)  # tracing changes nothing
    path = {label: p for _, label, _, p in trace}
    assert path["m1"] == "epilog"
    assert sum(p == "reply" for p in path.values()) > sum(p == "epilog" for p in path.values())
    _, now = script.traced_replay(rec, set())
    assert {label: p for _, label, _, p in now}["m1"] == "reply"
    forced, forced_trace = script.traced_replay(rec, {"m1"}, **old)
    assert {label: p for _, label, _, p in forced_trace}["m1"] == "reply"
    # no pass at m1's end: the order after it comes out as Slurm's (0.932 -> 0.9997, sim.md)
    assert compare(rec, forced)["kendall_tau"] > compare(rec, plain)["kendall_tau"] + 0.05
    # the simulator's methods are restored
    assert simulator_module.Simulator._finish.__name__ == "_finish"
    assert simulator_module.Simulator._reply_release.__name__ == "_reply_release"
