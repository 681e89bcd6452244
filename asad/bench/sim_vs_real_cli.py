"""``asad bench sim-vs-real``: record scenarios on the local Slurm, replay them, print the per-run
table (``sim_vs_real.py``) and the pair-by-pair verdict (``sim_vs_real_pairs.py``)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from asad.bench.sim_vs_real import (
    DATA_DIR, ablation, compare, load_recordings, noise_floor, recording_path, replay, table,
)
from asad.bench.sim_vs_real_pairs import latency_spread, pair_rows, pair_table, spread_table
from asad.bench.sim_vs_real_record import record, scenarios
from asad.common.arg_types import positive_int


def main_with(args: argparse.Namespace) -> int:
    names = args.scenario or None
    if args.record:
        script = Path(args.cluster_script)
        all_sc = scenarios()
        DATA_DIR.mkdir(parents=True, exist_ok=True)
        for name in names or list(all_sc):
            if name not in all_sc:
                print(f"unknown scenario {name!r}; scenarios: {', '.join(all_sc)}", file=sys.stderr)
                return 2
            print(f"recording {name} ...", file=sys.stderr, flush=True)
            rec = record(all_sc[name], script, args.debug_flags)
            rec["run"] = args.run
            path = recording_path(name, args.run)
            path.write_text(json.dumps(rec, indent=1) + "\n")
            keep_log(path)
    recs = load_recordings(names)
    if not recs:
        print(f"no recorded scenarios in {DATA_DIR}; record them with --record", file=sys.stderr)
        return 2
    overrides = {}
    if args.backfill:
        overrides["backfill"] = args.backfill
    if args.bf_poll:
        overrides.update(bf_poll=True, bf_plan_all=True)
    if args.ablation:
        print(ablation(recs))
        return 0
    results = []
    for rec in recs:
        got = compare(rec, replay(rec, **overrides))
        got["run"] = rec["run"]
        results.append(got)
    results += noise_floor(recs)
    print(table(results))
    pairs = pair_rows(recs, {r["id"]: got for r, got in zip(recs, results)}, **overrides)
    print("\nPair by pair (the simulator against each run of every pair of real runs):\n")
    print(pair_table(pairs))
    spread = latency_spread(recs, args.seeds, **overrides) if args.seeds else []
    if spread:
        print(f"\nLaunch delay, epilog, ALREADY_COMPLETE reply and OOM kill lag drawn per job, the loop's tick "
              f"and the backfill pass's length per seed, {args.seeds} seeds:\n")
        print(spread_table(spread))
    if args.json:
        print(json.dumps({"runs": results, "pairs": pairs, "latency_spread": spread}, indent=2))
    return 0


def keep_log(recording: Path) -> None:
    """slurmctld.log of the run just recorded, gzipped beside it (``logs/NAME.runN.slurmctld.log.gz``):
    every "sched: Allocate" and "backfill: Started" with its millisecond, which the replay's rules
    are checked against (issue 37)."""
    import gzip
    import os

    log = Path(os.environ.get("ASAD_CLUSTER_DIR", "/tmp/asad-cluster")) / "log" / "slurmctld.log"
    if log.is_file():
        out = recording.parent / "logs" / f"{recording.stem}.slurmctld.log.gz"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(gzip.compress(log.read_bytes()))
    keep_slurmd_logs(recording, log.parent)


def keep_slurmd_logs(recording: Path, log_dir: Path) -> None:
    """Each node's slurmd.log of the run just recorded (``logs/NAME.runN.slurmd-nK.log.gz``), from a
    minute before its first submission on, when slurmd logs at debug level or above
    (``ASAD_SLURMD_DEBUG=debug4``): slurmd's answer to each REQUEST_TERMINATE_JOB ("sent
    ALREADY_COMPLETE" or the epilog message) labels each end's path directly (issue 37)."""
    import gzip
    import json

    rec = json.loads(recording.read_text())
    if (rec.get("slurm_config") or {}).get("SlurmdDebug", "info") in (None, "info", "verbose", "error", "quiet"):
        return
    since = float(rec["t0"]) - 60.0
    for node_log in sorted(log_dir.glob("slurmd-n*.log")):
        kept = _lines_since(node_log.read_text(errors="replace").splitlines(keepends=True), since)
        out = recording.parent / "logs" / f"{recording.stem}.{node_log.stem}.log.gz"
        out.write_bytes(gzip.compress("".join(kept).encode()))


def _lines_since(lines: list[str], since: float) -> list[str]:
    """The lines from the first one stamped at or after ``since`` (UTC) on; unstamped lines follow
    the stamped line before them."""
    from datetime import datetime, timezone

    for i, line in enumerate(lines):
        if line.startswith("[20") and len(line) > 24:
            try:
                t = datetime.fromisoformat(line[1:24]).replace(tzinfo=timezone.utc).timestamp()
            except ValueError:
                continue
            if t >= since:
                return lines[i:]
    return []


def _add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--record", action="store_true",
                   help="record the scenarios on the local cluster first (needs root; ~6 min a scenario, about an hour for all)")
    p.add_argument("--scenario", action="append", help="only this scenario (repeatable)")
    p.add_argument("--debug-flags", help="with --record: slurmctld DebugFlags for the run (e.g. Backfill: "
                                         "its log then shows every planned start)")
    p.add_argument("--run", type=positive_int, default=1,
                   help="with --record: the run number to write (1: NAME.json, N: NAME.runN.json); "
                        "two runs of a scenario give Slurm's own noise floor")
    p.add_argument("--backfill", choices=["slurm", "easy", "none"], help="replay with this backfill model")
    p.add_argument("--bf-poll", action="store_true",
                   help="replay with the backfill thread's one-second looks while nothing changed "
                        "(bf_poll, every plan made) instead of the fixed bf_interval grid")
    p.add_argument("--seeds", type=positive_int,
                   help="also replay each run with its latencies drawn from their measured ranges over this many "
                        "seeds (launch delay, epilog, end path and OOM kill lag per job; the loop's tick and the "
                        "backfill pass's length per seed): the simulator's spread against Slurm's; 20 for the "
                        "reported figure")
    p.add_argument("--json", action="store_true", help="also print the numbers as JSON")
    p.add_argument("--ablation", action="store_true",
                   help="replay with each part of the model switched back in turn (tau / median start diff)")
    p.add_argument("--cluster-script", default=str(Path(__file__).resolve().parents[2] / "slurm-scripts"
                                                   / "local-cluster.sh"), help=argparse.SUPPRESS)


def register(subparsers) -> None:  # noqa: ANN001
    p = subparsers.add_parser("sim-vs-real", help="the simulator against runs recorded on the local real Slurm")
    _add_args(p)
    p.set_defaults(func=main_with)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m asad.bench.sim_vs_real_cli", description=__doc__)
    _add_args(parser)
    return main_with(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
