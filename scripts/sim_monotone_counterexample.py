"""Monotone pruning of the backfill pass (start a job that needs at least as much as an earlier
planned one, of everything, no earlier than that plan) is not exact under Slurm's will-run test:
this searches random partitions for a job B needing at least A's nodes, cores and limit (the same
memory) that the plan search, run on the map holding A's plan, starts before A. The search is a
heuristic, not an earliest-fit: its tries start at different instants for a longer job (the
window [start_res, start_res + limit] holds other nodes), the will-run batches are anchored at
the first running job on a usable node (fewer usable nodes can move a batch edge earlier), and
the node pick and the overlap test differ. Which of these acts in each case is not separated
here. Prints the first cases and the count (81 of 20,000 with the seed below).

    python scripts/sim_monotone_counterexample.py [trials]
"""
import random
import sys

from asad.slurm.sim.backfill_map import BackfillMap
from asad.slurm.sim.planner import fit_times, try_later_compiled
from asad.slurm.sim.cluster import PartitionState
from asad.slurm.sim.config import PartitionSpec
from asad.slurm.sim.jobs import SimJob
NOW, CORES, MEM = 1_000_020.0, 8, 8000
rng = random.Random(1)
found = 0
TRIALS = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
for trial in range(TRIALS):
    n = rng.randint(2, 12)
    part = PartitionState(PartitionSpec("p", nodes=n, cores_per_node=CORES, mem_per_node_mb=MEM), 0)
    part.select = "consec"
    for owner in range(1, rng.randint(1, 25)):
        nodes = [x for x in rng.sample(range(n), rng.randint(1, min(3, n))) ]
        c = rng.randint(1, CORES)
        nodes = [x for x in nodes if part.free_c[x] >= c]
        if nodes:
            part.allocate(nodes, c, 100, NOW + rng.randint(-60, 4000), owner=owner)
    plan = BackfillMap(part)
    for _ in range(rng.randint(0, 5)):
        nodes = rng.sample(range(n), rng.randint(1, min(4, n)))
        b = rng.randint(0, 3000)
        plan.reserve(nodes, NOW + b - b % 60, NOW + b + rng.randint(60, 3000))
    ka, ca, la = rng.randint(1, min(5, n)), rng.randint(1, CORES), rng.randint(60, 3600)
    kb, cb, lb = rng.randint(ka, min(5, n)), rng.randint(ca, CORES), rng.randint(la, 3600)
    A = SimJob(9998, "a", [part], ka, ca * ka, 100, la, NOW, 10.0, background=False)
    B = SimJob(9999, "b", [part], kb, cb * kb, 100, lb, NOW, 10.0, background=False)
    h = NOW + 86400
    g = fit_times(plan, A, NOW, h)
    if g is None:
        continue
    pa = try_later_compiled(plan, g[0], A, NOW, h, 0.0)
    if pa is None:
        continue
    plan.reserve(pa[1], pa[0], pa[0] + la)
    g = fit_times(plan, B, NOW, h)
    if g is None:
        continue
    pb = try_later_compiled(plan, g[0], B, NOW, h, 0.0)
    if pb is not None and pb[0] < pa[0]:
        found += 1
        if found <= 3:
            print("trial", trial, "A", (ka, ca, la), "at +", pa[0] - NOW, pa[1], "B", (kb, cb, lb), "at +", pb[0] - NOW, pb[1])
print("counterexamples", found, "of", TRIALS, "trials")
