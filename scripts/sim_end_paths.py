"""Which path each job end takes in a replay, beside what the recording's slurmctld.log shows
(issue 37, branch p37h): how a replay's fixed sequence of slurmd's ALREADY_COMPLETE replies
(``already_complete_share``: the nodes come back and a pass is only queued) and epilog-complete
messages (the nodes come back ``epilog_s`` later and ``schedule()`` runs at once) meets Slurm's.

Per end, in the replay's order: its index k, label, node count, the replay's end (s after the
loop's start), the replay's path, and the log's first reuse of the freed nodes: ``main`` (a
"sched: Allocate" on them within 0.75 s: a pass at once, the epilog message's signature),
``backfill`` (the backfill thread started a job on them first), ``late`` (a main pass after
0.75 s) or ``none`` (nothing within 3 s). ``backfill`` after an ``epilog`` replay path is the
disagreement to look at, when the top pending job fitted on the freed nodes (not checked here:
a FIFO-blocked queue leaves the nodes to backfill whatever the path).

``--force-reply LABEL ...`` replays with those jobs' ends sent down the reply path instead, a
diagnosis only (it takes the path from the log), and prints the tau with and without.

Usage: python scripts/sim_end_paths.py [--bf-poll] [--force-reply m1 ...] [RECORDING_ID ...]
"""

from __future__ import annotations

import argparse
import gzip
import re
from datetime import datetime

from asad.bench.sim_vs_real import compare, load_recordings, replay
from asad.bench.sim_vs_real_logs import log_path
from asad.slurm.sim import simulator as simulator_module

_LINE = re.compile(r"^\[(\S+)\] (.*)$")
_END = re.compile(r"_job_complete: JobId=(\d+) done")
_MAIN = re.compile(r"sched: Allocate JobId=(\d+) NodeList=(\S+)")
_BF = re.compile(r"_start_job: Started JobId=(\d+) in \S+ on (\S+)")
MAIN_WITHIN_S = 0.75  # the epilog message's pass: 0.13-0.65 s after the end in the logs measured
LOOK_S = 3.0


def expand(nodelist: str) -> set[str]:
    """n[1-3,5] -> {n1, n2, n3, n5}; n4 -> {n4}."""
    m = re.match(r"^(\w+?)\[(.*)\]$", nodelist)
    if not m:
        return {nodelist}
    prefix, out = m.group(1), set()
    for part in m.group(2).split(","):
        lo, _, hi = part.partition("-")
        out |= {f"{prefix}{i}" for i in range(int(lo), int(hi or lo) + 1)}
    return out


PATTERNS = (("end", _END), ("main", _MAIN), ("backfill", _BF))


def log_events(rec: dict, patterns: tuple[tuple[str, re.Pattern], ...] = PATTERNS
               ) -> list[tuple[float, str, str, set[str] | None]]:
    """(t after the loop's start, kind, job id, nodes) for the lines of the recording's jobs that
    match one of ``patterns`` (first match wins); nodes for the allocations ("main", "backfill")."""
    origin = rec["timers"]["loop_start"]
    ids = {str(j["job_id"]) for j in rec["jobs"]}
    out = []
    with gzip.open(log_path(rec), "rt", errors="replace") as fh:
        for line in fh:
            m = _LINE.match(line)
            if not m:
                continue
            t = datetime.fromisoformat(m.group(1)).timestamp() - origin
            if t < 0:
                continue
            for kind, pattern in patterns:
                hit = pattern.search(m.group(2))
                if hit and hit.group(1) in ids:
                    nodes = expand(hit.group(2)) if kind in ("main", "backfill") else None
                    out.append((t, kind, hit.group(1), nodes))
                    break
    return out


def log_reuse(rec: dict) -> dict[str, tuple[str, float | None]]:
    """Per label: how the log's freed nodes were first used after the job's end."""
    jobs = {str(j["job_id"]): j for j in rec["jobs"]}
    events = log_events(rec)
    out = {}
    for t, kind, jid, _ in events:
        if kind != "end":
            continue
        freed = expand(jobs[jid]["nodelist"])
        nxt = next(((t2 - t, k2) for t2, k2, _, n2 in events if k2 != "end" and t2 > t and n2 & freed), None)
        if nxt is None or nxt[0] > LOOK_S:
            out[jobs[jid]["label"]] = ("none", None)
        elif nxt[1] == "main":
            out[jobs[jid]["label"]] = ("main" if nxt[0] < MAIN_WITHIN_S else "late", nxt[0])
        else:
            out[jobs[jid]["label"]] = ("backfill", nxt[0])
    return out


def traced_replay(rec: dict, force_reply: set[str], **overrides) -> tuple[dict, list[tuple]]:
    """The replay, with each end's (k, label, end instant, path); ``force_reply``'s ends take the
    reply. Wraps the simulator's two methods for the call's duration only."""
    sim_cls = simulator_module.Simulator
    finish, reply = sim_cls._finish, sim_cls._reply_release
    current: dict = {}
    trace: list[tuple] = []

    def traced_finish(self, job, state, t):  # noqa: ANN001 -- the simulator's own signature
        current["job"] = (job.name, t)
        return finish(self, job, state, t)

    def traced_reply(self, drawn):  # noqa: ANN001
        took = reply(self, drawn) or current["job"][0] in force_reply
        trace.append((self._ends_seen - 1, *current["job"], "reply" if took else "epilog"))
        return took

    sim_cls._finish, sim_cls._reply_release = traced_finish, traced_reply
    try:
        return replay(rec, **overrides), trace
    finally:
        sim_cls._finish, sim_cls._reply_release = finish, reply


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("ids", nargs="*", help="recording ids (default: every one with a kept log)")
    ap.add_argument("--bf-poll", action="store_true", help="replay with bf_poll and bf_plan_all")
    ap.add_argument("--force-reply", nargs="*", default=[], metavar="LABEL")
    args = ap.parse_args()
    overrides = {"bf_poll": True, "bf_plan_all": True} if args.bf_poll else {}
    for rec in load_recordings(None):
        if log_path(rec) is None or (args.ids and rec["id"] not in args.ids):
            continue
        origin = rec["timers"]["loop_start"]
        nodes = {j["label"]: j["nodes"] for j in rec["jobs"]}
        seen = log_reuse(rec)
        sim, trace = traced_replay(rec, set(), **overrides)
        print(f"== {rec['id']}: tau {compare(rec, sim)['kendall_tau']:.4f}")
        print("k | job | nodes | replay end s | replay path | log: first reuse (s after the end)")
        tally: dict[tuple[str, str], int] = {}
        for k, label, t, path in trace:
            verdict, gap = seen.get(label, ("-", None))
            tally[(path, verdict)] = tally.get((path, verdict), 0) + 1
            where = verdict if gap is None else f"{verdict} ({gap:.2f})"
            print(f"{k} | {label} | {nodes.get(label, '?')} | {t - origin:.3f} | {path} | {where}")
        print("replay path / log: " + ", ".join(f"{p} / {v} {n}" for (p, v), n in sorted(tally.items())))
        if args.force_reply:
            forced, _ = traced_replay(rec, set(args.force_reply), **overrides)
            print(f"with {', '.join(args.force_reply)} by the reply: tau "
                  f"{compare(rec, forced)['kendall_tau']:.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
