#!/usr/bin/env bash
# Issue 37, ninth session: record unperturbed runs on the local Slurm with slurmd at debug4 (its log
# then names each end's path: "sent ALREADY_COMPLETE" or the epilog message) and keep both logs.
# Usage: scripts/record_end_paths.sh SCENARIO:RUN ...   (e.g. timeouts-oom:4 ends-deps:4)
# Needs the cluster up with ASAD_SLURMD_DEBUG=debug4 in $ASAD_CLUSTER_DIR (see docs/local-cluster.md).
set -euo pipefail
cd "$(dirname "$0")/.."
: "${ASAD_CLUSTER_DIR:?set ASAD_CLUSTER_DIR}"
export ASAD_SLURMD_DEBUG=${ASAD_SLURMD_DEBUG:-debug4}
for item in "$@"; do
    name=${item%%:*} run=${item##*:}
    # each recording's logs start empty (slurmd appends; slurmctld is restarted by the recorder)
    for f in "$ASAD_CLUSTER_DIR"/log/slurmctld.log "$ASAD_CLUSTER_DIR"/log/slurmd-n*.log; do : >"$f"; done
    echo "$(date -u +%T) recording $name run $run" >&2
    .venv/bin/asad bench sim-vs-real --record --scenario "$name" --run "$run" >"/tmp/asad-s37f-rec-$name-$run.out" 2>&1
    echo "$(date -u +%T) done $name run $run" >&2
done
