"""Where two sets of replay constants first part ways on a recording, and what Slurm's log says
there (issue 37, t37f): the check behind "the measured end-path values lose these rows".

For each recording, the fixed replay is run twice in one process: with the module's constants
(A, the default) and with ``--set NAME=PYVALUE`` applied (B), e.g. the slurmd.logs' direct
values ``FIXED_REPLY_SHARE=0.946 "EPILOG_MESSAGE_DIST_S=(0.004,0.007,0.024)" (main before f37m: FIXED_REPLY_SHARE=0.6666666666666666 "EPILOG_MESSAGE_DIST_S=(0.08,0.4,0.54)")``. It prints the first job, by the earlier
of its two replayed starts, whose start differs between A and B, Slurm's start of it, both
replayed starts (seconds after the loop's start), how many jobs start in Slurm's second under
A and under B, and, with ``--log``, slurmctld.log's ends and starts in the seconds before that
job's start in Slurm (the evidence for which end's path decided it).

Usage: python scripts/sim_variant_divergence.py --set NAME=PYVALUE ... [--log] [ID ...]
"""

from __future__ import annotations

import argparse
import ast
import gzip
import re
from datetime import datetime, timezone

import asad.bench.sim_vs_real as svr
from asad.bench.sim_vs_real import compare, load_recordings, replay
from asad.bench.sim_vs_real_logs import log_path

_LINE = re.compile(r"^\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})\] (.*)$")
_EVENT = re.compile(r"_job_complete: JobId=(\d+) done|sched: Allocate JobId=(\d+) NodeList=(\S+)"
                    r"|backfill: _start_job: Started JobId=(\d+) in \S+ on (\S+)")


def _stamp(text: str) -> float:
    # slurmctld logs local time; the recordings' clock is UTC on this machine (TZ unset)
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%f").replace(tzinfo=timezone.utc).timestamp()


def log_events(rec: dict, lo: float, hi: float) -> list[str]:
    """slurmctld.log's job ends and starts between lo and hi (absolute seconds), labelled."""
    path = log_path(rec)
    if path is None:
        return []
    by_id = {str(j["job_id"]): j for j in rec["jobs"]}
    origin = rec["timers"]["loop_start"]
    out = []
    with gzip.open(path, "rt", errors="replace") as fh:
        for line in fh:
            m = _LINE.match(line)
            if not m:
                continue
            e = _EVENT.search(m.group(2))
            if not e:
                continue
            t = _stamp(m.group(1))
            if not lo <= t <= hi:
                continue
            jid = e.group(1) or e.group(2) or e.group(4)
            job = by_id.get(jid)
            label = job["label"] if job else f"#{jid}"
            if e.group(1):
                what = f"end {label} ({job['nodelist'] if job else '?'})"
            elif e.group(2):
                what = f"main pass starts {label} on {e.group(3)}"
            else:
                what = f"backfill starts {label} on {e.group(5)}"
            out.append(f"{t - origin:8.3f} {what}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--log", action="store_true")
    ap.add_argument("--window", type=float, default=3.0, help="log seconds shown before the job's start")
    ap.add_argument("ids", nargs="*")
    args = ap.parse_args()
    changes = {}
    for item in args.set:
        name, _, value = item.partition("=")
        if not hasattr(svr, name):
            raise SystemExit(f"asad.bench.sim_vs_real has no {name}")
        changes[name] = ast.literal_eval(value)
    saved = {k: getattr(svr, k) for k in changes}
    for rec in load_recordings(None):
        if args.ids and rec["id"] not in args.ids:
            continue
        a = replay(rec)
        for k, v in changes.items():
            setattr(svr, k, v)
        try:
            b = replay(rec)
        finally:
            for k, v in saved.items():
                setattr(svr, k, v)
        origin = rec["timers"]["loop_start"]
        jobs = [j for j in rec["jobs"] if j["start"] is not None]
        same_a = sum(a[j["label"]]["start"] == j["start"] for j in jobs)
        same_b = sum(b[j["label"]]["start"] == j["start"] for j in jobs)
        differ = [j for j in jobs if a[j["label"]]["start"] != b[j["label"]]["start"]]
        tau = f"tau A {compare(rec, a)['kendall_tau']:.3f}, B {compare(rec, b)['kendall_tau']:.3f}"
        head = f"{rec['id']}: in Slurm's second A {same_a}, B {same_b} of {len(jobs)}; {tau}"
        if not differ:
            print(f"{head}; A and B agree on every start")
            continue

        def first_key(j: dict) -> float:
            return min(x for x in (a[j["label"]]["start"], b[j["label"]]["start"]) if x is not None)

        j = min(differ, key=first_key)

        def rel(x: float | None) -> str:
            return "-" if x is None else f"{x - origin:.0f}"

        print(f"{head}; first A/B difference {j['label']} ({j['nodes']} node(s) x {j['cpus_per_node']} cpus): "
              f"Slurm {rel(j['start'])}, A {rel(a[j['label']]['start'])}, B {rel(b[j['label']]['start'])} "
              f"({len(differ)} jobs differ)")
        if args.log:
            starts = [x for x in (j["start"], a[j["label"]]["start"], b[j["label"]]["start"]) if x is not None]
            for line in log_events(rec, min(starts) - args.window, max(starts) + 1.0):
                print("    " + line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
