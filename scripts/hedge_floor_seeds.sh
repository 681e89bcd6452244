#!/bin/sh
# Issue 38, thirteenth round, after the judged read: how much of the per-floor-share draw's
# tuning margins is the seeded draw's luck? The chosen h-fl-win-told-a20 and the ninth round's
# per-cluster draw h-win-told-a20 (the same learner, one top group) replayed to 2021-06-10
# (tuning windows only) under other seeds. Usage: scripts/hedge_floor_seeds.sh CLUSTER SEED OUT.json
set -e
cluster=$1; seed=$2; out=$3
here=$(dirname "$0")
floor=$(python3 "$here/tune_hedge_floor.py" --adds h-fl-win-told-a20)
cluster_draw='h-win-told-a20=hedge:{"hedge_top":"learners","hedge_top_combine":"draw","hedge_top_loss":"win","hedge_top_eta":1,"hedge_top_told":true,"aci_cold_adapt_max":0.02,"aci_cold_adapt_halflife":50}'
exec nice -n 5 asad bench predictors --cluster "$cluster" --until 2021-06-10 --seed "$seed" --rolling 3w \
    --rolling-from 2021-04-29 --extra-window 2021-04-29..2021-05-20 --extra-window 2021-05-20..2021-06-10 --json \
    --judge median-backoff --predictors median-backoff,median-k,median-all $floor --add "$cluster_draw" > "$out"
