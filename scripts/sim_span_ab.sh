#!/bin/sh
# The saturated span's CPU s, two trees alternating in separate processes from one snapshot, with
# an A/A figure: each round runs A, B, A again (A against A is the noise).
#   scripts/sim_span_ab.sh /path/to/treeA /path/to/treeB SNAPSHOT ROUNDS
# Each run: scripts/sim_span_profile.py (this tree's) with PYTHONPATH at the tree, so a tree
# without the script is timed the same way.
A=$1; B=$2; SNAP=$3; ROUNDS=${4:-5}
HERE=$(cd "$(dirname "$0")/.." && pwd)
PY=${PY:-$HERE/.venv/bin/python}
i=0
while [ $i -lt "$ROUNDS" ]; do
  for tag in A1 B A2; do
    case $tag in B) T=$B ;; *) T=$A ;; esac
    echo "$tag $(PYTHONPATH=$T nice -n 5 "$PY" "$HERE/scripts/sim_span_profile.py" "$SNAP" --then 0.1)"
  done
  i=$((i + 1))
done
