"""``asad bench sim-vs-real`` on a chosen set of recordings and with module constants of
``asad.bench.sim_vs_real`` replaced (issue 37, ninth session): the tables before and after a
model change on the same recordings, and before and after new recordings with the same code.

Usage: python scripts/sim_vs_real_variant.py [--exclude ID,ID] [--only-old] [--set NAME=PYVALUE ...] -- ARGS
  --exclude: recording ids left out (e.g. the new runs: timeouts-oom.run4,ends-deps.run4)
  --set TIMEOUT_EPILOG_S=None: the replays' constant as before the change (pairs.NAME: a constant
        of asad.bench.sim_vs_real_pairs, e.g. pairs.LATENCY_DRAWS)
  ARGS: passed to the command (e.g. --seeds 20 --json, --bf-poll)
"""

from __future__ import annotations

import argparse
import ast
import sys

import asad.bench.sim_vs_real as svr
import asad.bench.sim_vs_real_cli as cli
import asad.bench.sim_vs_real_pairs as pairs


def main(argv: list[str]) -> int:
    if "--" in argv:
        cut = argv.index("--")
        own, rest = argv[:cut], argv[cut + 1:]
    else:
        own, rest = argv, []
    ap = argparse.ArgumentParser()
    ap.add_argument("--exclude", default="")
    ap.add_argument("--set", action="append", default=[])
    args = ap.parse_args(own)
    excluded = {x for x in args.exclude.split(",") if x}
    for item in args.set:
        name, _, value = item.partition("=")
        module = svr
        if name.startswith("pairs."):
            module, name = pairs, name[len("pairs."):]
        if not hasattr(module, name):
            raise SystemExit(f"{module.__name__} has no {name}")
        setattr(module, name, ast.literal_eval(value))
    load = cli.load_recordings

    def load_some(names=None):  # noqa: ANN001, ANN202
        return [r for r in load(names) if r["id"] not in excluded]

    cli.load_recordings = load_some
    return cli.main(rest)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
