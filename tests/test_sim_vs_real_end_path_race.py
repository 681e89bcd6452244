"""The replays' end paths (issue 37, f37m; the lead's decision in docs/results/sim.md): the fixed
replay sends every racing end (clean exit, OOM kill, clean exit past the limit) by slurmd's
ALREADY_COMPLETE reply, its most likely path in slurmd's logs; the 20-seed draws race each end
independently at the measured share (407 of 424); a time-limit kill takes the epilog message in
both."""

from __future__ import annotations

import pytest

from asad.bench.sim_vs_real import load_recordings, replay
from asad.bench.sim_vs_real_pairs import latency_draws
from asad.slurm.backend import JobState
from asad.slurm.sim import simulator as simulator_module
from asad.slurm.sim.job_end import kill_time

RECORDINGS = {r["id"]: r for r in load_recordings(["timeouts-oom", "ends-deps"])}
# runs with clean ends, OOM kills and time-limit kills alike
RUNS = [i for i in ("timeouts-oom.run4", "timeouts-oom.run5", "ends-deps.run4") if i in RECORDINGS]


def _releases(monkeypatch: pytest.MonkeyPatch, rec: dict, **overrides) -> list[dict]:
    """Every node release the replay schedules: the ended job's state, whether it was killed at its
    time-limit check, the path (the event's token: 1 = the reply, 0 = the epilog message) and the
    delay from the end."""
    got: list[dict] = []
    push = simulator_module.Simulator._push

    def spy(self, t, kind, obj, token, extra=None):  # noqa: ANN001, ANN202
        if kind == simulator_module.EV_RELEASE:
            got.append({"job": obj, "cfg": self.config, "path": "reply" if token else "epilog", "at": t})
        return push(self, t, kind, obj, token, extra)

    monkeypatch.setattr(simulator_module.Simulator, "_push", spy)
    replay(rec, **overrides)
    for r in got:  # the job's end is recorded right after its release is scheduled
        job = r.pop("job")
        r["state"] = job.state
        r["killed"] = job.state is JobState.TIMEOUT and job.end_time >= kill_time(job, r.pop("cfg")) - 1e-9
        r["delay_s"] = r.pop("at") - job.end_time
    return got


@pytest.mark.skipif(not RUNS, reason="no slurmd-logged timeouts-oom / ends-deps runs")
def test_the_fixed_replay_sends_no_racing_end_by_the_epilog_message(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = [r for run in RUNS for r in _releases(monkeypatch, RECORDINGS[run])]
    racing = [r for r in rows if not r["killed"]]
    assert len(racing) >= 50 and any(r["state"] is JobState.OUT_OF_MEMORY for r in racing)
    assert [r for r in racing if r["path"] != "reply"] == []
    kills = [r for r in rows if r["killed"]]
    assert kills and all(r["path"] == "epilog" for r in kills)  # _rpc_timelimit: never the reply


@pytest.mark.skipif(not RUNS, reason="no slurmd-logged timeouts-oom / ends-deps runs")
def test_the_drawn_replays_race_each_end_at_the_measured_share(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = []
    for run in RUNS:
        rec = RECORDINGS[run]
        for seed in range(6):
            rows += _releases(monkeypatch, rec, **latency_draws(rec), latency_seed=seed)
    racing = [r for r in rows if not r["killed"]]
    replies = sum(r["path"] == "reply" for r in racing)
    # 407 / 424 = 0.960; over ~400 drawn ends the binomial's sd is ~0.01
    assert len(racing) >= 300
    assert replies / len(racing) == pytest.approx(407 / 424, abs=0.035)
    by_message = [r["delay_s"] for r in racing if r["path"] == "epilog"]
    assert by_message, "some racing ends take the epilog message"
    assert all(0.004 - 1e-9 <= d <= 0.033 + 1e-9 for d in by_message)  # slurmd.logs: 4-33 ms
    kills = [r for r in rows if r["killed"]]
    assert kills and all(r["path"] == "epilog" for r in kills)
