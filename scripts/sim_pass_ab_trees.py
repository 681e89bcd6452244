"""sim_pass_replay.py ab for several trees in one process (twelfth session): each tree's kernel compiled uncached, rounds
alternating the order; CPU ms a pass (sum of each pass's minimum, and of medians) and each against the first.

    python scripts/sim_pass_ab_trees.py passes.pkl ROUNDS MAIN_TREE MAIN_COPY NEW_TREE ...
"""
import hashlib, os, pickle, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sim_pass_replay as spr
calls_file, rounds, trees = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
rec = pickle.load(open(calls_file, "rb"))
calls = rec["calls"]
mods = [spr._load_kernel(t, f"t{i}") for i, t in enumerate(trees)]
for t, m in zip(trees, mods):
    k, d = spr._runner(m), hashlib.sha256()
    for a in calls:
        spr._add(d, k(*spr._copies(a)))
    print(t, "digest", d.hexdigest()[:16], "recorded" if d.hexdigest()[:16] == rec["digest"] else "NOT RECORDED", flush=True)
times = spr.time_rotated(mods, calls, rounds)
n = len(calls)
mins = [sum(min(v) for v in t) / n * 1e3 for t in times]
meds = [sum(sorted(v)[len(v) // 2] for v in t) / n * 1e3 for t in times]
print(f"{n} passes x {rounds} rounds")
for t, a, b in zip(trees, mins, meds):
    print(f"| {t} | {a:.3f} | {b:.3f} | {mins[0] / a:.3f} | {meds[0] / b:.3f} |")
