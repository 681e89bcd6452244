#!/usr/bin/env bash
# Issue 37 (b37p): record runs on the local Slurm with slurmctld at $ASAD_SLURMCTLD_DEBUG (default
# debug: the backfill thread then logs "backfill: beginning" at every pass, also at passes that start
# nothing, and "N jobs to backfill"; no pass end without DebugFlags=Backfill) and keep slurmctld.log.
# Usage: ASAD_CLUSTER_DIR=... ASAD_CLUSTER_PORT_BASE=... scripts/record_ctld_debug.sh SCENARIO:RUN ...
# The cluster must have been brought up with the same ASAD_SLURMCTLD_DEBUG (slurm.conf is written
# by `up`; the recorder restarts slurmctld, which reads SlurmctldDebug from it).
set -euo pipefail
cd "$(dirname "$0")/.."
: "${ASAD_CLUSTER_DIR:?set ASAD_CLUSTER_DIR}"
export ASAD_SLURMCTLD_DEBUG=${ASAD_SLURMCTLD_DEBUG:-debug}
grep -H '^SlurmctldDebug' "$ASAD_CLUSTER_DIR/slurm.conf" >&2
for item in "$@"; do
    name=${item%%:*} run=${item##*:}
    for f in "$ASAD_CLUSTER_DIR"/log/slurmctld.log; do : >"$f"; done
    echo "$(date -u +%T) recording $name run $run" >&2
    nice -n 5 .venv/bin/asad bench sim-vs-real --record --scenario "$name" --run "$run" >"/tmp/asad-rec-$name-$run.out" 2>&1
    echo "$(date -u +%T) done $name run $run" >&2
done
