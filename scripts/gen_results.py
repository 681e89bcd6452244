#!/usr/bin/env python3
"""Assemble docs/results.md from the per-area pages in docs/results/ (each written by the
benchmark's owner with the command that produced every number). Run after updating any of them."""

from __future__ import annotations

import re
from pathlib import Path

DOCS = Path(__file__).resolve().parent.parent / "docs"
ORDER = ["targets", "strategies", "learn", "sim", "sizing", "slurm", "ops", "spec"]
TITLES = {"targets": "Targets at a glance", "strategies": "Strategies (ASA paper Tables 1–2)", "learn": "Wait learners (Figure 5, real queue data)",
          "sim": "Simulator performance", "sizing": "Sizing and placement", "slurm": "Real Slurm",
          "ops": "Operations: overhead, faults, big workflows", "spec": "workflow.yaml loading"}

HEADER = """# Results

Every number here was measured on the project's machine (2 cores, 24 GiB; often shared with other
work, which the pages note where it mattered) by the command quoted beside it. Nothing is
hard-coded: rerun the command to reproduce. Pages per area live in `docs/results/`; this file is
assembled from them by `scripts/gen_results.py`.

"""


def main() -> None:
    parts = [HEADER, "| area | page |\n|---|---|\n"]
    pages = [(name, DOCS / "results" / f"{name}.md") for name in ORDER]
    # a page's long form (its history, "-history.md") is linked from the page, not assembled here
    pages += [(p.stem, p) for p in sorted((DOCS / "results").glob("*.md"))
              if p.stem not in ORDER and not p.stem.endswith("-history")]
    present = [(n, p) for n, p in pages if p.exists()]
    parts += [f"| [{TITLES.get(n, n)}](#{n}) | [results/{p.name}](results/{p.name}) |\n" for n, p in present]
    for name, path in present:
        text = path.read_text()
        text = re.sub(r"\]\((?!http|#|/)(\.\./)?", lambda m: "](" + ("" if m.group(1) else "results/"), text)
        text = re.sub(r"^(#+)", r"#\1", text, flags=re.M)  # one level down under the section title
        parts.append(f"\n<a id=\"{name}\"></a>\n\n## {TITLES.get(name, name)}\n\n{text.strip()}\n")
    (DOCS / "results.md").write_text("".join(parts))
    print(f"wrote {DOCS / 'results.md'} from {len(present)} pages")


if __name__ == "__main__":
    main()
