"""Every workflow the docs show (a ```yaml block with a top-level ``stages:``) is one asad accepts:
a user copies them (issue 13: docs/sizing.md's example was refused)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from asad.spec.load import parse_workflow
from tests.conftest import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
_BLOCK = re.compile(r"^```ya?ml\n(.*?)^```", re.S | re.M)


def _workflow_blocks() -> list[tuple[str, str]]:
    out = []
    for doc in DOCS:
        text = doc.read_text()
        for m in _BLOCK.finditer(text):
            if re.search(r"^stages:", m.group(1), re.M):
                line = text.count("\n", 0, m.start()) + 2
                out.append((f"{doc.relative_to(ROOT)}:{line}", m.group(1)))
    return out


BLOCKS = _workflow_blocks()


def test_the_docs_show_workflows():
    assert len(BLOCKS) >= 3, BLOCKS  # the quickstart's, workflow.md's and sizing.md's at least


@pytest.mark.parametrize(("where", "text"), BLOCKS, ids=[w for w, _ in BLOCKS])
def test_every_workflow_in_the_docs_validates(where: str, text: str, tmp_path: Path):
    # the user's own scripts that a block names (run: ./prepare.sh) exist beside their workflow file
    for script in re.findall(r"run:\s+['\"]?(\./\S+|[^\s'\"]+\.sh)['\"]?\s*$", text, re.M):
        path = tmp_path / script
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("#!/bin/sh\n")
        path.chmod(0o755)
    parse_workflow(text, where, base_dir=tmp_path)
