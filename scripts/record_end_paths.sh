#!/usr/bin/env bash
# Issue 37, ninth session: record unperturbed runs on the local Slurm with slurmd at debug4 (its log
# then names each end's path: "sent ALREADY_COMPLETE" or the epilog message) and keep both logs.
# Usage: scripts/record_end_paths.sh SCENARIO:RUN ...   (e.g. timeouts-oom:4 ends-deps:4)
# ASAD_PRIORITY=multifactor for the multifactor scenarios (multifactor, aged-deps, fairshare-*): the
# recorder would otherwise find a basic cluster, take it down and bring it up again itself.
# Needs the cluster up in $ASAD_CLUSTER_DIR (see docs/local-cluster.md); the slurmds are restarted at
# $ASAD_SLURMD_DEBUG (debug4: every step of _rpc_terminate_job is logged; debug: only the epilog
# message, "JobId=N: sent epilog complete msg", far fewer lines, so less perturbation).
set -euo pipefail
cd "$(dirname "$0")/.."
: "${ASAD_CLUSTER_DIR:?set ASAD_CLUSTER_DIR}"
export ASAD_SLURMD_DEBUG=${ASAD_SLURMD_DEBUG:-debug4}
script=slurm-scripts/local-cluster.sh
# slurmd reads SlurmdDebug at its start: stop ours (by their pid files) and let `up` restart them
for pidf in "$ASAD_CLUSTER_DIR"/run/slurmd-n*.pid; do
    [[ -s $pidf ]] && kill -TERM "$(cat "$pidf")" 2>/dev/null || true
done
sleep 3
"$script" up --accounting --nodes 5 --cpus 16 --mem 24000 --priority "${ASAD_PRIORITY:-basic}" >&2
grep -H '^SlurmdDebug' "$ASAD_CLUSTER_DIR/slurm.conf" >&2
for item in "$@"; do
    name=${item%%:*} run=${item##*:}
    # each recording's logs start empty (slurmd appends; slurmctld is restarted by the recorder)
    for f in "$ASAD_CLUSTER_DIR"/log/slurmctld.log "$ASAD_CLUSTER_DIR"/log/slurmd-n*.log; do : >"$f"; done
    echo "$(date -u +%T) recording $name run $run" >&2
    .venv/bin/asad bench sim-vs-real --record --scenario "$name" --run "$run" >"/tmp/asad-rec-$name-$run.out" 2>&1
    echo "$(date -u +%T) done $name run $run" >&2
done
