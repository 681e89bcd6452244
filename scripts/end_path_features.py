"""Does anything predict which path a job's end takes (issue 37, branch r37e)?

Every job end in the kept slurmctld.logs, with the log's first reuse of its freed nodes
(``sim_end_paths.log_reuse``: ``main`` = a main-pass "sched: Allocate" on them within 0.75 s, the
epilog message's signature; ``backfill`` = the backfill thread started a job on them first, the
reply's signature when a main pass would have started something there) and candidate features
from the recording and the log. Prints, per feature, the contingency table of main / backfill
ends by the feature's bins, and a leave-one-log-out check: a one-feature threshold rule fitted on
nine logs, scored on the tenth, beside the majority class of the nine (what a share predicts per
end at best).

Caveat: ``backfill`` is only the reply's *likely* signature: an epilog-path end whose main pass
found nothing that fitted (a FIFO-blocked queue) also leaves the nodes to the backfill thread,
and a backfill start sooner than 0.75 s may beat the epilog message's pass. So the tables are
printed three times: every main/backfill end; the "decided" ends (a replay with every end by the
epilog message starts a job on the freed nodes at the end's release, and the log shows a main
pass within 0.75 s or the backfill thread only after 0.75 s); and, in the FIFO logs, the ends
whose backfilled job was the top pending one. It also counts how often one job's end takes the
same path in two runs of its scenario, against a coin at the pooled share (docs/results/sim.md,
"Eighth session, end paths").

Usage: python scripts/end_path_features.py [--rows]
"""

from __future__ import annotations

import argparse
import re
from collections import defaultdict

from asad.bench.sim_vs_real import LOOP_TICK_S, load_recordings, replay
from asad.bench.sim_vs_real_logs import log_path
from asad.slurm.sim import scheduler as scheduler_module
from asad.slurm.sim import simulator as simulator_module

from sim_end_paths import MAIN_WITHIN_S, PATTERNS, expand, log_reuse  # scripts/ is on sys.path when run as a script
from sim_end_paths import log_events as end_path_log_events

_SUBMIT = re.compile(r"_slurm_rpc_submit_batch_job: JobId=(\d+)")


def log_events(rec: dict) -> list[tuple[float, str, str, set[str] | None]]:
    """(t after the loop's start, end/main/backfill/submit, job id, nodes) for the recording's jobs."""
    return end_path_log_events(rec, (*PATTERNS, ("submit", _SUBMIT)))


def epilog_would_start(rec: dict) -> dict[str, bool]:
    """Per label: in a replay where every end takes the epilog-message path
    (``already_complete_share`` 0), did the main pass at the end's release start a job on the
    freed nodes? True means the reply path is the only way the log can show the backfill thread
    first on those nodes (so far as the replay's queue matches Slurm's there); False means even
    the epilog path's pass would have left them to backfill, and the end says nothing."""
    sim_cls, sched_cls = simulator_module.Simulator, scheduler_module.Scheduler
    finish, start, main_pass = sim_cls._finish, sim_cls._start_job, sched_cls.main_pass
    ends: list[tuple[str, float, set[int]]] = []
    starts: list[tuple[float, set[int], bool]] = []
    in_main = [False]

    def traced_finish(self, job, state, t):  # noqa: ANN001 -- the simulator's own signature
        ends.append((job.name, t, set(job.alloc_nodes)))
        return finish(self, job, state, t)

    def traced_start(self, job, part, nodes):  # noqa: ANN001
        starts.append((self._now, set(nodes), in_main[0]))
        return start(self, job, part, nodes)

    def traced_main(self, depth):  # noqa: ANN001
        in_main[0] = True
        try:
            return main_pass(self, depth)
        finally:
            in_main[0] = False

    sim_cls._finish, sim_cls._start_job, sched_cls.main_pass = traced_finish, traced_start, traced_main
    try:
        replay(rec, already_complete_share=0.0)
    finally:
        sim_cls._finish, sim_cls._start_job, sched_cls.main_pass = finish, start, main_pass
    # the release comes epilog_s (0.4 s) after the end; a few ms of slack for the pass itself
    return {label: any(main and t < ts <= t + 0.45 and nodes & freed for ts, nodes, main in starts)
            for label, t, freed in ends}


def rows(rec: dict) -> list[dict]:
    """One row per job end in the log: its features and the log's verdict."""
    jobs = {str(j["job_id"]): j for j in rec["jobs"]}
    events = log_events(rec)
    verdict = log_reuse(rec)
    would = epilog_would_start(rec)
    starts = {jid: (t, kind) for t, kind, jid, _ in events if kind in ("main", "backfill")}
    submits = [t for t, kind, _, _ in events if kind == "submit"]
    ends = [(t, jid) for t, kind, jid, _ in events if kind == "end"]
    out = []
    for order, (t, jid) in enumerate(ends):
        job = jobs[jid]
        freed = expand(job["nodelist"])
        batch = sorted(freed, key=lambda n: int(re.sub(r"\D", "", n) or 0))[0]
        start_t, start_kind = starts.get(jid, (None, None))

        def ended_before(window: float, same: bool) -> int:
            return sum(1 for t2, j2 in ends if j2 != jid and t - window <= t2 <= t
                       and (not same or expand(jobs[j2]["nodelist"]) & freed))

        node_starts = [t2 for t2, k2, _, n2 in events if n2 is not None and t2 <= t and batch in n2]
        running_on = sum(1 for j2, (s2, _) in starts.items() if j2 != jid and s2 <= t
                         and batch in expand(jobs[j2]["nodelist"])
                         and next((t3 for t3, j3 in ends if j3 == j2), 1e18) > t)
        running = sum(1 for j2, (s2, _) in starts.items() if j2 != jid and s2 <= t
                      and next((t3 for t3, j3 in ends if j3 == j2), 1e18) > t)
        bf_before = [t2 for t2, k2, _, _ in events if k2 == "backfill" and t2 <= t]
        main_before = [t2 for t2, k2, _, _ in events if k2 == "main" and t2 <= t]
        v, gap = verdict.get(job["label"], ("-", None))
        top = None
        if rec["priority"] == "basic":  # FIFO: the main pass would start the top pending job first
            pending = [j2 for j2 in jobs if j2 != jid and j2 in starts and starts[j2][0] > t
                       and jobs[j2]["eligible"] - rec["timers"]["loop_start"] <= t]
            top = min(pending, key=int) if pending else None
        reuse = next((j2 for t2, k2, j2, n2 in events if n2 is not None and t2 > t and n2 & freed), None)
        out.append({
            "log": rec["id"], "label": job["label"], "order": order, "path": v, "gap": gap, "end_t": t,
            "nodes": job["nodes"], "batch_node": batch, "cpus": job["nodes"] * job["cpus_per_node"],
            "mem_mb": job["mem_mb"], "script_s": job["runtime_s"], "limit_s": job["limit_s"],
            "state": job["state"], "exit_code": job["exit_code"],
            "oom": job["oom_after_s"] is not None,
            "ran_s": (t - start_t) if start_t is not None else None,
            "at_limit": start_t is not None and t - start_t >= job["limit_s"] - 0.5,
            "started_by": start_kind,
            "ends_0.1": ended_before(0.1, False), "ends_0.5": ended_before(0.5, False),
            "ends_1": ended_before(1.0, False), "same_node_ends_1": ended_before(1.0, True),
            "since_node_start_s": (t - node_starts[-1]) if node_starts else None,
            "running_on_node": running_on, "running": running,
            # the controller's other work at the instant (RPCs, launches): it recurs across runs
            "submits_1": sum(1 for t2 in submits if abs(t2 - t) <= 1.0),
            "starts_0.5": sum(1 for s2, _ in starts.values() if t - 0.5 <= s2 < t),
            "tick_phase": (t / LOOP_TICK_S) % 1.0,
            "sec_frac": (rec["timers"]["loop_start"] + t) % 1.0,
            "since_bf_start_s": (t - bf_before[-1]) if bf_before else None,
            "since_main_alloc_s": (t - main_before[-1]) if main_before else None,
            # FIFO logs only: the backfill thread started the top pending job on the freed nodes,
            # which a main pass at the end (the epilog path) would have started: the reply's mark
            "top_backfilled": None if top is None else (v == "backfill" and reuse == top),
            # any log: the replay's epilog-path pass would have used the freed nodes
            "epilog_would_start": would.get(job["label"]),
        })
    return out


NUMERIC = ["nodes", "cpus", "mem_mb", "script_s", "limit_s", "ran_s", "ends_0.1", "ends_0.5", "ends_1",
           "same_node_ends_1", "submits_1", "starts_0.5", "since_node_start_s", "running_on_node", "running", "tick_phase",
           "sec_frac", "since_bf_start_s", "since_main_alloc_s", "order", "exit_code"]
CATEGORICAL = ["batch_node", "state", "oom", "at_limit", "started_by"]


def bins(values: list[float]) -> list[float]:
    """Quartile edges of a numeric feature (deduplicated)."""
    vs = sorted(v for v in values if v is not None)
    return sorted({vs[int(len(vs) * q)] for q in (0.25, 0.5, 0.75)})


def table(data: list[dict], feature: str) -> list[tuple[str, int, int]]:
    """(bin, main count, backfill count) per bin of ``feature``."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    distinct = {r[feature] for r in data if r[feature] is not None}
    if feature in NUMERIC and len(distinct) <= 6:  # a few integer values: one bin each
        for r in data:
            counts[str(r[feature])][0 if r["path"] == "main" else 1] += 1
    elif feature in NUMERIC:
        edges = bins([r[feature] for r in data])
        for r in data:
            v = r[feature]
            if v is None:
                key = "n/a"
            else:
                i = sum(v >= e for e in edges)
                lo = "-inf" if i == 0 else f"{edges[i - 1]:.3g}"
                hi = "inf" if i == len(edges) else f"{edges[i]:.3g}"
                key = f"[{lo}, {hi})"
            counts[key][0 if r["path"] == "main" else 1] += 1
    else:
        for r in data:
            counts[str(r[feature])][0 if r["path"] == "main" else 1] += 1
    def order(key: str) -> tuple:
        head = key.strip("[").split(",")[0]
        try:
            return (0, float(head), key)
        except ValueError:
            return (1, 0.0, key)
    return [(k, m, b) for k, (m, b) in sorted(counts.items(), key=lambda kv: order(kv[0]))]


def same_job_agreement(data: list[dict]) -> tuple[int, int, float]:
    """Over pairs of runs of one scenario, the ends of one job label present in both: (pairs with the
    same path, pairs, the agreement a coin with the pooled share would give). If the path were a
    property of the job (its script, size, node, place in the schedule), the same job would take the
    same path across runs more often than the coin."""
    by_scenario: dict[str, dict[str, dict[str, str]]] = defaultdict(lambda: defaultdict(dict))
    for r in data:
        by_scenario[r["log"].split(".")[0]][r["log"]][r["label"]] = r["path"]
    same = pairs = 0
    for runs in by_scenario.values():
        logs = sorted(runs)
        for i, a in enumerate(logs):
            for b in logs[i + 1:]:
                for label in runs[a].keys() & runs[b].keys():
                    pairs += 1
                    same += runs[a][label] == runs[b][label]
    share = sum(r["path"] == "main" for r in data) / len(data)
    return same, pairs, share ** 2 + (1 - share) ** 2


def best_rule(train: list[dict], feature: str):
    """The one-feature rule with the best balanced accuracy on ``train`` (so the rarer class is not
    ignored): a threshold and a side (numeric) or, per value, main when that value's main rate is
    above the overall rate (categorical)."""
    n_main = max(1, sum(r["path"] == "main" for r in train))
    n_bf = max(1, len(train) - n_main)
    rate = n_main / len(train)
    if feature in CATEGORICAL:
        per: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for r in train:
            per[str(r[feature])][r["path"] == "main"] += 1
        rule = {k: (m / (m + b) > rate) for k, (b, m) in per.items()}
        return lambda r: rule.get(str(r[feature]), False)
    vals = sorted({r[feature] for r in train if r[feature] is not None})
    best, best_score = None, -1
    for thr in vals:
        for main_above in (True, False):
            said = [(r[feature] is not None and r[feature] >= thr) == main_above for r in train]
            score = (sum(p for p, r in zip(said, train) if r["path"] == "main") / n_main
                     + sum(not p for p, r in zip(said, train) if r["path"] != "main") / n_bf)
            if score > best_score:
                best, best_score = (thr, main_above), score
    thr, main_above = best
    return lambda r: r[feature] is not None and (r[feature] >= thr) == main_above


def leave_one_log_out(data: list[dict], feature: str) -> tuple[int, int, int, float]:
    """(right by the rule, right by the majority class, ends, balanced accuracy: the mean of the
    two classes' recall, 0.5 for any constant) over held-out logs."""
    right = base = 0
    hit = {True: 0, False: 0}
    for log in sorted({r["log"] for r in data}):
        train = [r for r in data if r["log"] != log]
        test = [r for r in data if r["log"] == log]
        rule = best_rule(train, feature)
        major_main = sum(r["path"] == "main" for r in train) * 2 > len(train)
        right += sum(rule(r) == (r["path"] == "main") for r in test)
        base += sum(major_main == (r["path"] == "main") for r in test)
        for r in test:
            hit[r["path"] == "main"] += rule(r) == (r["path"] == "main")
    n_main = sum(r["path"] == "main" for r in data)
    balanced = 0.5 * (hit[True] / n_main + hit[False] / (len(data) - n_main))
    return right, base, len(data), balanced


def job_agreement(data: list[dict]) -> tuple[int, int, float]:
    """Per job label seen in two or more runs of a scenario: (jobs whose every run took one path,
    such jobs, the number a coin at the pooled share would give: p^k + (1 - p)^k summed)."""
    paths: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for r in data:
        paths[(r["log"].split(".")[0], r["label"])].append(r["path"] == "main")
    share = sum(r["path"] == "main" for r in data) / len(data)
    multi = [v for v in paths.values() if len(v) >= 2]
    agree = sum(all(v) or not any(v) for v in multi)
    return agree, len(multi), sum(share ** len(v) + (1 - share) ** len(v) for v in multi)


def null_best(data: list[dict], rounds: int, seed: int = 37) -> list[float]:
    """The best held-out balanced accuracy over every feature, with the paths shuffled within each
    log (``rounds`` times): what picking the best of this many features gives by chance."""
    import random

    rng = random.Random(seed)
    out = []
    for _ in range(rounds):
        shuffled = []
        for log in sorted({r["log"] for r in data}):
            sub = [r for r in data if r["log"] == log]
            paths = [r["path"] for r in sub]
            rng.shuffle(paths)
            shuffled += [{**r, "path": p} for r, p in zip(sub, paths)]
        out.append(max(leave_one_log_out(shuffled, f)[3] for f in NUMERIC + CATEGORICAL))
    return sorted(out)


def tick_check(recs: list[dict], every: list[dict]) -> tuple[int, int, int, int]:
    """Is a ``main`` label the loop's own pass? (main allocations in the first 5 % of a loop tick,
    all main allocations, main-labelled reuses there, main-labelled reuses): the loop's passes
    cluster at the tick's start, the epilog message's pass does not."""
    def early(t: float) -> bool:
        return (t / LOOP_TICK_S) % 1.0 < 0.05

    all_early = all_n = 0
    for rec in recs:
        mains = [t for t, kind, _, _ in log_events(rec) if kind == "main"]
        all_early += sum(early(t) for t in mains)
        all_n += len(mains)
    reuses = [r["end_t"] + r["gap"] for r in every if r["path"] == "main"]
    return all_early, all_n, sum(early(t) for t in reuses), len(reuses)


def print_per_log(rows: list[dict], paths: tuple[str, ...]) -> None:
    """One line per log: how many of its rows took each of ``paths``."""
    for log in sorted({r["log"] for r in rows}):
        sub = [r["path"] for r in rows if r["log"] == log]
        print(f"{log} | " + " / ".join(str(sub.count(k)) for k in paths))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", action="store_true", help="print every end's row too")
    ap.add_argument("--null", type=int, default=0, metavar="N",
                    help="N within-log shuffles of the decided ends' paths: the best feature's chance level")
    args = ap.parse_args()
    recs = [rec for rec in load_recordings(None) if log_path(rec) is not None]
    every = [r for rec in recs for r in rows(rec)]
    tally: dict[str, int] = defaultdict(int)
    for r in every:
        tally[r["path"]] += 1
    print(f"{len(every)} ends in {len({r['log'] for r in every})} logs; log's first reuse: "
          + ", ".join(f"{k} {v}" for k, v in sorted(tally.items())))
    all_early, all_n, main_early, main_n = tick_check(recs, every)
    print(f"main allocations in the first 5 % of a loop tick: {all_early} of {all_n}; of the main-labelled "
          f"ends' reuses: {main_early} of {main_n} (the epilog message's pass, not the loop's)")
    if args.rows:
        keys = list(every[0])
        print(" | ".join(keys))
        for r in every:
            print(" | ".join(f"{r[k]:.3f}" if isinstance(r[k], float) else str(r[k]) for k in keys))
    data = [r for r in every if r["path"] in ("main", "backfill")]
    print(f"\n{len(data)} ends with a verdict main or backfill; main {sum(r['path'] == 'main' for r in data)}")
    for feature in NUMERIC + CATEGORICAL:
        right, base, n, balanced = leave_one_log_out(data, feature)
        print(f"\n## {feature}: leave-one-log-out {right}/{n} right (majority class {base}/{n}), "
              f"balanced accuracy {balanced:.3f} (0.5: no better than a share)")
        print("bin | main | backfill")
        for key, m, b in table(data, feature):
            print(f"{key} | {m} | {b}")
    print("\n# the replay's epilog-path pass would start a job on the freed nodes (rows) by the log's "
          "first reuse (columns)")
    for flag in (True, False, None):
        sub = [r["path"] for r in every if r["epilog_would_start"] is flag]
        print(f"{flag} | " + ", ".join(f"{k} {sub.count(k)}" for k in ("main", "backfill", "late", "none")))
    # decided: the replay's epilog pass would use the nodes, and the log shows a main pass on them
    # within 0.75 s (the epilog path) or the backfill thread first and only after 0.75 s (a
    # backfill start sooner may have beaten an epilog message's pass: ambiguous, left out)
    decided = [r for r in data if r["epilog_would_start"]
               and (r["path"] == "main" or r["gap"] >= MAIN_WITHIN_S)]
    print(f"\n# decided ends (the replay's epilog pass would use the nodes): {len(decided)}, main (epilog) "
          f"{sum(r['path'] == 'main' for r in decided)}, backfill (reply) "
          f"{sum(r['path'] == 'backfill' for r in decided)}")
    for feature in NUMERIC + CATEGORICAL:
        right, base, n, balanced = leave_one_log_out(decided, feature)
        print(f"\n## decided {feature}: leave-one-log-out {right}/{n} (majority {base}/{n}), balanced {balanced:.3f}")
        print("bin | main | backfill")
        for key, m, b in table(decided, feature):
            print(f"{key} | {m} | {b}")
    same, pairs, coin = same_job_agreement(decided)
    print(f"\n# same job, two runs (decided ends): same path in {same} of {pairs} pairs "
          f"({same / max(1, pairs):.3f}; a coin at the pooled share: {coin:.3f})")
    if args.null:
        best = null_best(decided, args.null)
        print(f"# shuffled paths ({args.null} rounds): best feature's held-out balanced accuracy median "
              f"{best[len(best) // 2]:.3f}, 90th percentile {best[int(len(best) * 0.9)]:.3f}, max {best[-1]:.3f}")
    agree, jobs_seen, expected = job_agreement(decided)
    print(f"# jobs seen in 2+ runs (decided ends): one path in every run for {agree} of {jobs_seen} "
          f"(a coin at the pooled share: {expected:.1f})")
    print("\n## decided ends per log: main (epilog) / backfill (reply)")
    print_per_log(decided, ("main", "backfill"))
    clean = [r for r in data if r["top_backfilled"] is not None
             and (r["path"] == "main" or r["top_backfilled"])]
    print(f"\n# FIFO logs, the clean subset: {len(clean)} ends, main (epilog) "
          f"{sum(r['path'] == 'main' for r in clean)}, top pending job backfilled (reply) "
          f"{sum(r['path'] == 'backfill' for r in clean)}")
    for feature in NUMERIC + CATEGORICAL:
        if feature == "top_backfilled":
            continue
        right, base, n, balanced = leave_one_log_out(clean, feature)
        print(f"\n## clean {feature}: leave-one-log-out {right}/{n} (majority {base}/{n}), balanced {balanced:.3f}")
        print("bin | main | backfill")
        for key, m, b in table(clean, feature):
            print(f"{key} | {m} | {b}")
    for name, subset in (("all main/backfill ends", data), ("clean FIFO subset", clean)):
        same, pairs, coin = same_job_agreement(subset)
        print(f"\n# same job, two runs ({name}): same path in {same} of {pairs} pairs "
              f"({same / max(1, pairs):.3f}; a coin at the pooled share: {coin:.3f})")
    print("\n## clean FIFO subset per log: main (epilog) / top job backfilled (reply)")
    print_per_log(clean, ("main", "backfill"))
    print("\n## per log: main / backfill / late / none")
    print_per_log(every, ("main", "backfill", "late", "none"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
