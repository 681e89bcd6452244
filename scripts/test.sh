#!/usr/bin/env bash
# Install everything the tests need and run the whole suite. `.ci/run` calls this.
#   scripts/test.sh                 everything (as root: also starts a private local Slurm for the real-Slurm tests)
#   scripts/test.sh -m "not slurm"  the fast suite only
#   ASAD_SKIP_SLURM=1 scripts/test.sh   never start the local cluster
#
# The real-Slurm tests get a cluster of their own: $ASAD_TEST_CLUSTER_DIR (default
# /tmp/asad-test-cluster) on ports from $ASAD_TEST_CLUSTER_PORT_BASE (default 16850), never the
# cluster ASAD_CLUSTER_DIR or SLURM_CONF names (yours, perhaps running a workflow). It cancels jobs and
# stops daemons only on a cluster it started itself; a test cluster already running is used as it is
# and left running. A stopped test cluster's saved settings are not reused: it starts as below.
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m venv .venv
.venv/bin/pip install -q --disable-pip-version-check -c requirements.lock -e '.[test,plots]'

say() { echo "scripts/test.sh: $*" >&2; }

if [ "$(id -u)" = 0 ] && [ "${ASAD_SKIP_SLURM:-0}" != 1 ]; then
  test_dir="${ASAD_TEST_CLUSTER_DIR:-/tmp/asad-test-cluster}"
  if [ -n "${ASAD_CLUSTER_DIR:-}" ] && [ "$ASAD_CLUSTER_DIR" != "$test_dir" ]; then
    say "the real-Slurm tests use their own cluster in $test_dir, not ASAD_CLUSTER_DIR=$ASAD_CLUSTER_DIR (left alone)"
  elif [ -n "${SLURM_CONF:-}" ] && [ "$SLURM_CONF" != "$test_dir/slurm.conf" ]; then
    say "the real-Slurm tests use their own cluster in $test_dir, not SLURM_CONF=$SLURM_CONF (left alone)"
  fi
  export ASAD_CLUSTER_DIR="$test_dir"
  export ASAD_CLUSTER_PORT_BASE="${ASAD_TEST_CLUSTER_PORT_BASE:-16850}"
  unset SLURM_CONF
  ctld_pid="$ASAD_CLUSTER_DIR/run/slurmctld.pid"
  if [ -s "$ctld_pid" ] && kill -0 "$(cat "$ctld_pid")" 2>/dev/null; then
    # Another run's test cluster (a run in parallel, or one left up on purpose): its jobs may be
    # that run's; use it as it is (`up` refuses if its settings differ) and leave it running.
    say "using the test cluster already running in $ASAD_CLUSTER_DIR; its jobs and daemons are left alone"
    started=0
  else
    # A stopped test cluster: start it with the settings the tests expect, not those a test or a
    # person saved in its folder with other flags (local-cluster.sh's `up` would reuse them).
    rm -f "$ASAD_CLUSTER_DIR/settings"
    started=1
  fi
  # A real slurmctld + slurmd + slurmdbd on this machine, in a private folder (never /etc/slurm).
  slurm-scripts/local-cluster.sh up --accounting --gpus 2
  eval "$(slurm-scripts/local-cluster.sh env)"
  if [ "$started" = 1 ]; then
    trap 'slurm-scripts/local-cluster.sh down || true' EXIT
    # slurmctld restores its saved state: a job left by an interrupted earlier run would hold a node
    # that the tests expect free (seen 2026-11-25: a 5-minute job made the busy-cluster test fail).
    # Only on the test cluster this run started: SLURM_CONF names it.
    scancel --user="$(id -un)" || true
  fi
else
  # as the message says: not against the cluster SLURM_CONF names (perhaps a site's, or yours)
  unset SLURM_CONF ASAD_CLUSTER_DIR
  echo "scripts/test.sh: not root or ASAD_SKIP_SLURM=1: real-Slurm tests will skip (see docs/local-cluster.md)"
fi

# The real-Slurm tests mostly wait on Slurm (~18 minutes), so they run beside the fast suite: two
# pytest processes, the fast one at nice 10 so that the local slurmctld keeps answering within the
# 2 s asad allows it. With -m (you chose the tests) or ASAD_TEST_SERIAL=1: one pytest, as given.
split=1
for arg in "$@"; do
  case "$arg" in -m|-m*) split=0 ;; esac
done
[ "${ASAD_TEST_SERIAL:-0}" = 1 ] && split=0
if [ "$split" = 0 ]; then
  .venv/bin/pytest "$@"
  exit 0
fi
slurm_out="$(mktemp)"
.venv/bin/pytest "$@" -m slurm >"$slurm_out" 2>&1 &
slurm_pid=$!
fast_rc=0
nice -n 10 .venv/bin/pytest "$@" -m "not slurm" || fast_rc=$?
slurm_rc=0
wait "$slurm_pid" || slurm_rc=$?
echo "scripts/test.sh: the real-Slurm tests, run beside the fast suite:"
cat "$slurm_out"
rm -f "$slurm_out"
# pytest's 5 is "no test selected": a path given that holds tests of only one kind
if [ "$fast_rc" = 5 ] && [ "$slurm_rc" != 5 ]; then fast_rc=0; fi
if [ "$slurm_rc" = 5 ] && [ "$fast_rc" != 5 ]; then slurm_rc=0; fi
if [ "$fast_rc" != 0 ]; then exit "$fast_rc"; fi
exit "$slurm_rc"
