"""Every backfill pass of a recording made with slurmctld at debug (issue 37, b37p) beside the
``bf_poll`` replay's passes, and the main passes and updates in between.

At ``SlurmctldDebug=debug`` (22.05.8) ``_attempt_backfill`` logs "beginning" at each pass's start,
also for a pass that starts nothing, then "N jobs to backfill" or "no jobs to backfill"; ``_schedule``
logs "sched: Running job scheduler for full queue|default depth" at each main pass and a
"(per _failed_partition())" line for every job whose reason it turns to Priority there (the
unconditional ``last_job_update`` for a job already at Priority is debug2: not logged). No pass
end is logged without DebugFlags=Backfill; the next line's instant bounds it.

Prints, in seconds after the loop's start (the recording's ``timers.loop_start``): the log's
events (bf = backfill pass start with its queue count and the jobs it started; main/main-full =
main pass, with the failed-partition lines; submit; end) and the replay's backfill passes, then
both lists of pass instants side by side up to the first pass the two disagree on by 0.5 s or more.

Usage: python scripts/sim_bf_log_passes.py ID [--until S] [--from S]
"""

from __future__ import annotations

import argparse
import gzip
import re
from datetime import datetime, timezone

import asad.bench.sim_vs_real as svr
from asad.bench.sim_vs_real_logs import log_path
from asad.slurm.sim import controller_loop as cl_mod
from asad.slurm.sim import scheduler as sched_mod


def stamp(line: str) -> float:
    return datetime.fromisoformat(line[1:24]).replace(tzinfo=timezone.utc).timestamp()


def log_events(rec: dict) -> list[tuple[float, str, str]]:
    """(instant, kind, detail) from the kept slurmctld.log, from the loop's start on."""
    ls = rec["timers"]["loop_start"]
    out: list[tuple[float, str, str]] = []
    with gzip.open(log_path(rec), "rt", errors="replace") as fh:
        for line in fh:
            if not line.startswith("[20"):
                continue
            t = stamp(line) - ls
            if t < 0:
                continue
            if "_attempt_backfill: beginning" in line:
                out.append((t, "bf", ""))
            elif "jobs to backfill" in line and out and out[-1][1] == "bf":
                out[-1] = (out[-1][0], "bf", line.split("_attempt_backfill: ", 1)[1].strip())
            elif "_start_job: Started" in line:
                out.append((t, "bf-start", re.search(r"JobId=(\d+)", line).group(1)))
            elif "Running job scheduler" in line:
                out.append((t, "main-full" if "full queue" in line else "main", ""))
            elif "per _failed_partition()" in line:
                out.append((t, "failed-part", re.search(r"JobId=(\d+)", line).group(1)))
            elif "sched: Allocate" in line:
                out.append((t, "main-start", re.search(r"JobId=(\d+)", line).group(1)))
            elif "_slurm_rpc_submit_batch_job" in line:
                out.append((t, "submit", re.search(r"JobId=(\d+)", line).group(1)))
            elif "_job_complete: JobId" in line and line.rstrip().endswith(" done"):
                out.append((t, "end", re.search(r"JobId=(\d+)", line).group(1)))
    return out


def replay_passes(rec: dict) -> tuple[list[tuple[float, int, float, float]], list[tuple[float, str]], dict]:
    """The ``bf_poll`` replay's backfill passes (instant, jobs started, the last update it saw,
    the previous pass's end), its failed-partition updates, and the replay itself."""
    ls = rec["timers"]["loop_start"]
    passes: list[tuple[float, int, float, float]] = []
    updates: list[tuple[float, str]] = []
    orig_bf = sched_mod.Scheduler.backfill_pass
    orig_note = cl_mod.ControllerLoop._note_failed_partitions
    holder: dict = {}

    def spy_bf(self, now):  # noqa: ANN001, ANN202
        sim = holder.get("sim")
        last = sim._last_change_t - ls if sim is not None else float("nan")
        prev = sim._last_bf_end - ls if sim is not None else float("nan")
        started = orig_bf(self, now)
        passes.append((now - ls, started, last, prev))
        return started

    def spy_note(self, now):  # noqa: ANN001, ANN202
        holder["sim"] = self
        before = self._last_change_t
        orig_note(self, now)
        if self._last_change_t != before:
            updates.append((now - ls, "failed-partition update"))

    sched_mod.Scheduler.backfill_pass = spy_bf
    cl_mod.ControllerLoop._note_failed_partitions = spy_note
    try:
        out = svr.replay(rec, bf_poll=True, bf_plan_all=True)
    finally:
        sched_mod.Scheduler.backfill_pass = orig_bf
        cl_mod.ControllerLoop._note_failed_partitions = orig_note
    return passes, updates, out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("id")
    ap.add_argument("--from", dest="t_from", type=float, default=0.0)
    ap.add_argument("--until", type=float, default=1e9)
    ap.add_argument("--without-plan-rule", action="store_true",
                    help="replay without b37p's rule (a plan held back by a plan is work for the next look)")
    args = ap.parse_args()
    if args.without_plan_rule:
        cl_mod.ControllerLoop._plans_later = lambda self, now: False
    rec = next(r for r in svr.load_recordings(None) if r["id"] == args.id)
    events = log_events(rec)
    passes, updates, out = replay_passes(rec)
    lo, hi = args.t_from, args.until
    print(f"# {args.id}: log events ({len([e for e in events if e[1] == 'bf'])} backfill passes logged)")
    for t, kind, detail in events:
        if lo <= t <= hi:
            print(f"log {t:8.3f} {kind:11s} {detail}")
    print("# bf_poll replay: passes (instant, started, last update seen, previous pass end); failed-partition updates")
    for t, n, last, prev in passes:
        if lo <= t <= hi:
            print(f"sim {t:8.3f} bf          started {n} last-update {last:.3f} prev-end {prev:.3f}")
    for t, what in updates:
        if lo <= t <= hi:
            print(f"sim {t:8.3f} {what}")
    logged = [t for t, kind, _ in events if kind == "bf"]
    replayed = [t for t, *_ in passes]
    print("# pass instants side by side (log, replay)")
    for i in range(max(len(logged), len(replayed))):
        a = logged[i] if i < len(logged) else None
        b = replayed[i] if i < len(replayed) else None
        if a is not None and not lo <= a <= hi:
            continue
        mark = "" if a is not None and b is not None and abs(a - b) < 0.5 else "  <-- differs"
        print(f"pass {i:3d} log {a if a is None else round(a, 3)} replay {b if b is None else round(b, 3)}{mark}")
        if mark:
            break
    # where the thread skipped a look (a gap of 3 s or more between passes: the phase moves)
    def gaps(ts: list[float]) -> list[tuple[float, float]]:
        return [(round(a, 2), round(b - a, 2)) for a, b in zip(ts, ts[1:]) if b - a > 2.5 and lo <= a <= hi]
    print(f"# gaps > 2.5 s (pass before, gap): log {gaps(logged)}")
    print(f"#                                  replay {gaps(replayed)}")
    first = replayed[0] if replayed else 0.0
    seen = [a for a in logged if first - 0.5 <= a <= hi and a >= lo]
    hit = sum(1 for a in seen if any(abs(a - b) <= 0.5 for b in replayed))
    print(f"# logged passes from the replay's first on with a replay pass within 0.5 s (the same look): {hit} of {len(seen)}; "
          f"replay passes {sum(1 for b in replayed if lo <= b <= hi)}")
    c = svr.compare(rec, out)
    print(f"# bf_poll replay vs run: tau {c['kendall_tau']} median {c['median_abs_start_diff_s']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
