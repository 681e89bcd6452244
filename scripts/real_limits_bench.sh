#!/usr/bin/env bash
# Issue 35's real-Slurm setup, reproduced on the private local cluster (slurm-scripts/local-cluster.sh):
# 4 nodes x 28 CPUs, priority/multifactor with PriorityWeightAge=10000, PriorityMaxAge=10:00,
# PriorityCalcPeriod=1 (minute), accounting on, with or without AccountingStorageEnforce=limits;
# 8 whole- and half-node jobs of another account (-A bg, 30-120 s each) kept pending (a fresh job waits ~2 min); one 5-stage pipeline (sleeps of
# 20/30/15/30/10 s at 8/28/4/28/2 CPUs) run round-robin under each strategy, each on its own store.
#
#   scripts/real_limits_bench.sh limits|nolimits [RUNS] [STRATEGIES]     (defaults: 3, auto,chain)
#
# Uses $ASAD_CLUSTER_DIR / $ASAD_CLUSTER_PORT_BASE like local-cluster.sh (restarts that cluster with
# these settings). Output: out/real-limits-<mode>/real-strategies.{md,json}.
set -euo pipefail
mode=${1:?limits or nolimits}
runs=${2:-3}
strategies=${3:-auto,chain}
here=$(cd "$(dirname "$0")/.." && pwd)
cluster=$here/slurm-scripts/local-cluster.sh
enforce=()
case $mode in
    limits) enforce=(--enforce associations,limits) ;;
    nolimits) ;;
    *) echo "real_limits_bench: the mode must be limits or nolimits, got '$mode'" >&2; exit 2 ;;
esac
"$cluster" down >/dev/null 2>&1 || true
# `up` starts from the folder's saved settings and applies only the flags given, so a `nolimits` run
# on a folder that last ran `limits` kept AccountingStorageEnforce=limits: start from none.
rm -f "${ASAD_CLUSTER_DIR:-/tmp/asad-cluster}/settings"
"$cluster" up --accounting --priority multifactor --age-weight 10000 --max-age 10:00 \
    --priority-calc-period 1 "${enforce[@]}"
eval "$("$cluster" env)"
scontrol show config | grep -E '^(PriorityType|PriorityWeightAge|PriorityMaxAge|PriorityCalcPeriod|AccountingStorageEnforce) '
python=${PYTHON:-$here/.venv/bin/python}
"$python" -m asad bench real-strategies --strategies "$strategies" --runs "$runs" --load 8 --load-cpus 14,28 --load-runtime 30:120 \
    --pipeline 20:8,30:28,15:4,30:28,10:2 --out "$here/out/real-limits-$mode"
