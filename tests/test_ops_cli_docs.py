"""docs/cli.md is generated from the CLI itself; this fails when the two drift apart."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT


def test_committed_cli_reference_equals_the_generated_one():
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_cli_docs.py"), "--check"],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr + "\nRegenerate with: python scripts/gen_cli_docs.py"


def test_every_command_is_documented():
    text = (ROOT / "docs" / "cli.md").read_text()
    for cmd in ("run", "submit", "status", "cancel", "history", "show", "daemon", "predict", "learners",
                "explain", "bench overhead", "bench faults"):
        assert f"\n## asad {cmd}\n" in text, cmd
