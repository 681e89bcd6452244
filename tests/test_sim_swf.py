"""SWF parsing and replay."""

from __future__ import annotations

from importlib import resources

import pytest

from asad.slurm.backend import JobState
from asad.slurm.sim import DEFAULT_START_TIME as T0
from asad.slurm.sim import make_simulator
from asad.slurm.sim.swf import SwfError, parse_swf, replay


def line(num, submit, run, procs, req_time, mem_kb=-1, part=1):
    return f"{num} {submit} -1 {run} {procs} -1 -1 {procs} {req_time} {mem_kb} 1 -1 -1 -1 -1 {part} -1 -1"


def test_replay_hand_written_trace_exactly(tmp_path):
    text = "\n".join(["; Computer: test", line(1, 0, 100, 112, 200), line(2, 10, 50, 1, 60),
                      line(3, 20, 500, 28, 300)]) + "\n"
    trace = parse_swf(text)
    assert trace.header == {"Computer": "test"} and len(trace.jobs) == 3
    sim = make_simulator("small", load=0.0)
    assert replay(sim, trace) == {"added": 3, "skipped": 0}
    sim.run_until(T0 + 86400)
    ids = [sim.trace_ids[n] for n in (1, 2, 3)]
    got = sim.poll(ids)
    whole, small, capped = (got[i] for i in ids)
    assert whole.start_time == T0 and whole.alloc_nodes == 4  # 112 procs packed on 4 nodes
    assert small.submit_time == T0 + 10 and small.start_time == T0 + 100
    # killed at the first 30-second time-limit check at or after the limit
    assert capped.state is JobState.TIMEOUT and 300 <= capped.end_time - capped.start_time < 330


def test_packaged_sample_replays_completely():
    text = (resources.files("asad") / "data" / "sample-small.swf").read_text()
    trace = parse_swf(text)
    assert len(trace.jobs) > 40
    sim = make_simulator("small", load=0.0)
    result = replay(sim, trace)
    assert result["added"] == len(trace.jobs)
    sim.run_until(T0 + 30 * 86400)
    states = {s.state for s in sim.poll(list(sim.trace_ids.values())).values()}
    assert states <= {JobState.COMPLETED, JobState.TIMEOUT}
    assert sim.stats()["jobs_finished"] == len(trace.jobs)


def test_swf_from_config(tmp_path):
    path = tmp_path / "t.swf"
    path.write_text(line(1, 5, 10, 2, 60) + "\n")
    sim = make_simulator("small", load=0.0, swf=str(path))
    sim.run_until(T0 + 100)
    st = sim.poll([sim.trace_ids[1]])[sim.trace_ids[1]]
    assert st.state is JobState.COMPLETED and st.start_time == T0 + 5


def test_too_big_jobs_are_skipped():
    sim = make_simulator("small", load=0.0)
    result = replay(sim, parse_swf(line(1, 0, 10, 500, 60) + "\n" + line(2, 0, -1, 1, 60)))
    assert result == {"added": 0, "skipped": 2}


@pytest.mark.parametrize("text, message", [
    ("1 2 3\n", "t.swf:1: expected 18 fields, found 3"),
    ("; ok\n" + line(1, 0, 10, 1, 60).replace("10", "ten", 1) + "\n", "t.swf:2: field 4 is not a number"),
    (line(1, -5, 10, 1, 60) + "\n", "submit time"),
])
def test_bad_swf_names_file_and_line(text, message):
    with pytest.raises(SwfError, match=message):
        parse_swf(text, "t.swf")


def test_sample_generator_writes_the_shipped_sample(tmp_path):
    """`python -m asad.slurm.sim.swf_sample` still draws the jobs of asad/data/sample-small.swf
    (it unpacked a 7-field arrival after arrivals grew to 11 fields)."""
    from pathlib import Path

    from asad.slurm.sim.swf_sample import generate_sample

    out = tmp_path / "sample.swf"
    assert generate_sample(out) == 61
    shipped = Path(__file__).resolve().parent.parent / "asad" / "data" / "sample-small.swf"
    jobs = [line for line in out.read_text().splitlines() if not line.startswith(";")]
    assert jobs == [line for line in shipped.read_text().splitlines() if not line.startswith(";")]
