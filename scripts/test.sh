#!/usr/bin/env bash
# Install everything the tests need and run the whole suite. `.ci/run` calls this.
#   scripts/test.sh                 everything (as root: also starts a private local Slurm for the real-Slurm tests)
#   scripts/test.sh -m "not slurm"  the fast suite only
#   ASAD_SKIP_SLURM=1 scripts/test.sh   never start the local cluster
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m venv .venv
.venv/bin/pip install -q --disable-pip-version-check -c requirements.lock -e '.[test,plots]'

if [ "$(id -u)" = 0 ] && [ "${ASAD_SKIP_SLURM:-0}" != 1 ]; then
  # A real slurmctld + slurmd + slurmdbd on this machine, in a private folder (never /etc/slurm).
  slurm-scripts/local-cluster.sh up --accounting --gpus 2
  eval "$(slurm-scripts/local-cluster.sh env)"
  trap 'slurm-scripts/local-cluster.sh down || true' EXIT
  # slurmctld restores its saved state: a job left by an interrupted earlier run would hold a node
  # that the tests expect free (seen 2026-11-25: a 5-minute job made the busy-cluster test fail)
  scancel --user="$(id -un)" || true
else
  echo "scripts/test.sh: not root or ASAD_SKIP_SLURM=1: real-Slurm tests will skip (see docs/local-cluster.md)"
fi

.venv/bin/pytest "$@"
