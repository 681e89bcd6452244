"""Why will_run._walk_past misses a walk that ends past later_start (twelfth session): a copy of
sim_plan_search_profile.py whose counting search asks _why (a reason code, by the eleventh session's rule) beside _walk_past.

    python scripts/sim_walk_past_misses.py passes.pkl N_PASSES
"""
import sys, os, types
import numpy as np
sys.argv = sys.argv[:1] + sys.argv[1:]
root = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, root)
src = open(f"{root}/sim_plan_search_profile.py").read()
src = src.replace("""            if past:
                st[WALK_PAST] += 1""", """            r = _why(kth, later, now, avail, p_node, first_piece, job_ends, 16)
            if not past and at == -INF:
                st[25 + 8] += 1
            elif not past and max(at, start_res) > later:
                st[25 + r] += 1
            if past:
                st[WALK_PAST] += 1""")
src = src.replace('if __name__ == "__main__":', 'if False:')
why = '''
from asad.slurm.sim.will_run import _usable as _u, WILL_RUN_WINDOW_S as W
from asad.slurm.sim.plan_maps import _bisect_left as _bl, _bisect_right as _br
def _why(kth, later, now, avail, p_node, first_piece, job_ends, cap):
    n_jobs = len(job_ends)
    n_pieces = len(p_node)
    first_use = 0
    while first_use < n_jobs and not _u(first_use, avail, p_node, first_piece, n_jobs, n_pieces):
        first_use += 1
    if first_use == n_jobs:
        return 0
    first = job_ends[first_use]
    anchor = first + (W - first % W)
    window = W
    while anchor + window < kth:
        window *= 2
    e1 = anchor + window
    if not e1 > later:
        return 1
    q1 = _br(job_ends, e1)
    if q1 == 0 or not job_ends[q1 - 1] > later:
        return 2
    j = n_jobs - 1
    seen = 0
    while not _u(j, avail, p_node, first_piece, n_jobs, n_pieces):
        j -= 1
        seen += 1
        if seen == cap:
            return 3
    if not job_ends[j] > later:
        return 3
    if window == W:
        return 7
    e_lo = anchor + window / 2
    j = _bl(job_ends, kth) - 1
    seen = 0
    while j >= 0 and job_ends[j] > e_lo:
        if _u(j, avail, p_node, first_piece, n_jobs, n_pieces):
            return 7
        j -= 1
        seen += 1
        if seen == cap:
            return 5
    return 4
'''
src = src.replace("\nif njit is not None:\n    _usable = njit(_usable)", why + "\nif njit is not None:\n    _why = njit(_why)\n    _usable = njit(_usable)", 1)
src = src.replace("st = np.zeros(len(NAMES), dtype=np.int64)", "st = np.zeros(len(NAMES) + 10, dtype=np.int64)")
mod = types.ModuleType("prof_why"); mod.__file__ = f"{root}/sim_plan_search_profile.py"
sys.modules["prof_why"] = mod
exec(compile(src, mod.__file__, "exec"), mod.__dict__)
import pickle
calls = pickle.load(open(sys.argv[1], "rb"))["calls"][:int(sys.argv[2])]
searches = mod.searches_of(calls)
st = np.zeros(len(mod.NAMES) + 10, dtype=np.int64)
n_args = mod.counting_search.py_func.__code__.co_argcount - 1
for a in searches:
    mod.counting_search(*[x.copy() if isinstance(x, np.ndarray) else x for x in a[:n_args]], st)
print("searches", st[0], "walks", st[mod.WALK], "past-later walks", st[mod.WALK_LATE] if False else "", "skipped", st[mod.WALK_PAST])
names = {1: "e1 <= later", 2: "no job in (later, e1]", 3: "last usable <= later or cap", 4: "no usable in (e_lo, kth)", 5: "e_lo cap", 7: "(would skip?!)", 8: "walk found none (not skipped)"}
for r, nm in names.items():
    print(f"| {nm} | {st[25 + r]:,} |")
