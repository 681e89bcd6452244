"""The fixed replay of each slurmd-logged recording with every end on the path slurmd logged for
it (issue 37, t37f): what the measured end-path values give when the race's outcome is known,
apart from which ends a fixed sequence at that share happens to send the other way.

Three replays per recording (tests/data/sim_vs_real/ with logs/ID.slurmd-nK.log.gz), one process:
  A  the module's constants (since f37m every racing end by the reply, FIXED_REPLY_SHARE 1.0;
     before it 12/18 with the message 0.4 s after the end: the loop's tick)
  B  the direct share and delay (0.946, 0.007) as an evenly spread sequence (sim_vs_real_variant.py's
     "measured" row)
  O  the direct delay (0.007 s) with each end's own path from its batch host's slurmd.log
     (scripts/end_path_direct.py); a job the logs do not label takes the reply.
Per replay: tau and median |start - Slurm's| against the recording itself, jobs in Slurm's second.

Usage: python scripts/sim_oracle_paths.py [ID ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

import asad.bench.sim_vs_real as svr
from asad.bench.sim_vs_real import compare, load_recordings, replay
from asad.slurm.sim import simulator as sim_mod

sys.path.insert(0, str(Path(__file__).resolve().parent))
from end_path_direct import ends, slurmd_logs  # noqa: E402

# the fixed replay's share and the message's delay (its median, EPILOG_MESSAGE_DIST_S[1]) as s37f measured
MEASURED = {"FIXED_REPLY_SHARE": 0.946, "EPILOG_MESSAGE_DIST_S": (0.004, 0.007, 0.024)}


def _with(consts: dict, fn):  # noqa: ANN001, ANN202
    saved = {k: getattr(svr, k) for k in consts}
    for k, v in consts.items():
        setattr(svr, k, v)
    try:
        return fn()
    finally:
        for k, v in saved.items():
            setattr(svr, k, v)


def oracle_replay(rec: dict, paths: dict[str, str]) -> dict:
    """The replay with MEASURED's delay and each job's logged path (by its name, the label)."""
    original_finish = sim_mod.Simulator._finish
    original_reply = sim_mod.Simulator._reply_release
    current: list[str] = []

    def finish(self, job, state, t):  # noqa: ANN001, ANN202
        current.append(job.name)
        try:
            return original_finish(self, job, state, t)
        finally:
            current.pop()

    def reply_release(self, drawn):  # noqa: ANN001, ANN202
        original_reply(self, drawn)  # keeps the end count (and any draw) as in the other replays
        return paths.get(current[-1], "reply") == "reply"

    sim_mod.Simulator._finish, sim_mod.Simulator._reply_release = finish, reply_release
    try:
        return _with(MEASURED, lambda: replay(rec))
    finally:
        sim_mod.Simulator._finish, sim_mod.Simulator._reply_release = original_finish, original_reply


def row(rec: dict, sim: dict) -> str:
    c = compare(rec, sim)
    same = sum(sim[j["label"]]["start"] == j["start"] for j in rec["jobs"] if j["start"] is not None)
    return f"{c['kendall_tau']:.3f} / {c['median_abs_start_diff_s']:g} s / {same}"


def main(argv: list[str]) -> int:
    print("recording | ends reply / epilog (direct) | A: tau / median / jobs in Slurm's second | B | O")
    print("|".join(["---"] * 5))
    for rec in load_recordings(None):
        if not slurmd_logs(rec) or (argv and rec["id"] not in argv):
            continue
        rows = ends(rec)
        paths = {r["label"]: r["path"] for r in rows}
        n_reply = sum(p == "reply" for p in paths.values())
        a = replay(rec)
        b = _with(MEASURED, lambda: replay(rec))  # noqa: B023
        o = oracle_replay(rec, paths)
        print(f"{rec['id']} | {n_reply} / {len(paths) - n_reply} | {row(rec, a)} | {row(rec, b)} | {row(rec, o)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
