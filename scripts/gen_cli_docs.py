#!/usr/bin/env python3
"""Write docs/cli.md from the CLI itself: every command's ``--help``, as argparse prints it.

    python scripts/gen_cli_docs.py           # rewrite docs/cli.md
    python scripts/gen_cli_docs.py --check   # exit 1 if docs/cli.md differs (what the test does)
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "cli.md"
WIDTH = "100"  # argparse wraps to $COLUMNS: fixed, so the text does not depend on the terminal

HEADER = """# CLI reference

Generated from `asad.cli.main.build_parser()` by `scripts/gen_cli_docs.py`; do not edit by hand.
`tests/test_ops_cli_docs.py` fails when this file and the CLI differ: after changing a command or an
option, run `python scripts/gen_cli_docs.py` and commit the result.

Exit codes: 0 success, 1 the workflow failed or was cancelled, 2 usage error, 3 the workflow file or
a setting is wrong, 4 the store cannot be used, 5 Slurm refused or is unavailable, 6 (`asad daemon`)
another asad daemon drives the store from this host.
"""


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:  # argparse keeps subparsers here; there is no public accessor
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _walk(parser: argparse.ArgumentParser, path: list[str]):  # noqa: ANN202
    yield path, parser
    for name, sub in _subcommands(parser).items():
        yield from _walk(sub, [*path, name])


def render() -> str:
    os.environ["COLUMNS"] = WIDTH
    sys.path.insert(0, str(ROOT))
    from asad.cli.main import build_parser

    parser = build_parser()
    parts = [HEADER]
    for path, sub in _walk(parser, ["asad"]):
        sub.prog = " ".join(path)
        parts.append(f"\n## {' '.join(path)}\n\n```text\n{sub.format_help().rstrip()}\n```\n")
    return "".join(parts)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with docs/cli.md instead of writing it")
    args = ap.parse_args()
    text = render()
    if args.check:
        if not OUT.exists() or OUT.read_text() != text:
            print(f"{OUT} is out of date: run python scripts/gen_cli_docs.py", file=sys.stderr)
            return 1
        return 0
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
