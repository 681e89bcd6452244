"""The ``asad`` command line (thin: parses, calls into the package, prints)."""

from __future__ import annotations

import argparse
import importlib
import sys

# Each bench module exposes ``register(subparsers)``, adding its own subcommand with
# ``set_defaults(func=callable(args) -> int)``.
BENCH_MODULES = ["sim", "convergence", "predictors", "strategies", "sizing", "placement", "overhead"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="asad", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    bench = sub.add_parser("bench", help="benchmarks that print measured numbers")
    bench_sub = bench.add_subparsers(dest="bench", required=True)
    for name in BENCH_MODULES:
        try:
            mod = importlib.import_module(f"asad.bench.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"asad.bench.{name}":
                raise
            continue
        mod.register(bench_sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
