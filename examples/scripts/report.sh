#!/bin/sh
# The report stage of examples/dag.yaml: a script path in `run` instead of a command line.
set -eu
echo "report for workflow stage ${ASAD_STAGE:-report}: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "samples: ${SAMPLES:-unknown}"
sleep 2
