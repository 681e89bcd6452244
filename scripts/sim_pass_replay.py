"""Time the compiled backfill pass alone, on recorded inputs: ``capture`` plays a span of a snapshot
(written by ``sim_schedule_equal.py run --snapshot``) and records the arguments of every
``pass_kernel.backfill_pass`` call; ``bench`` replays them through this tree's kernel (or an
older tree's, given with PYTHONPATH) and prints the CPU ms per pass and a digest of everything the
passes returned (every start and plan, in order), and whether it is the digest of what the
kernel returned in the recorded run (exit 1 if not).

    python scripts/sim_pass_replay.py capture SNAPSHOT --days 0.02 --out passes.pkl
    python scripts/sim_pass_replay.py bench passes.pkl --reps 3
    PYTHONPATH=/tmp/old python scripts/sim_pass_replay.py bench passes.pkl --reps 3
    python scripts/sim_pass_replay.py ab OLD_TREE NEW_TREE passes.pkl --rounds 7

``ab`` loads the pass kernel of two trees (each a directory holding ``asad/slurm/sim/plan_kernel.py``
and ``pass_kernel.py``, e.g. ``git archive COMMIT asad | tar -x -C OLD_TREE``) into one process,
compiles both (uncached, ~50 CPU s) and times them pass by pass, alternating which goes first:
the machine's load then weighs on both alike (separate processes a minute apart differed by
±15 % on a loaded machine, more than the cuts measured). It prints each kernel's CPU ms a pass
(the sum over the passes of each pass's minimum and median over the rounds) and checks that both
return the recorded run's starts and plans. (An editable install's import hook outranks
PYTHONPATH, so ``bench`` with PYTHONPATH may time this tree twice; ``ab`` does not import them
as packages.)

Why: a kernel change is measured in seconds instead of a whole simulated span, without the rest
of the simulator's noise, and two kernels that print the same digest made the same decisions on
every recorded pass (a quick check before ``sim_schedule_equal.py``, which stays the judge: a
changed pass would change the following passes' inputs, which a replay does not see). Timings
alternate old and new trees at the same machine load; numba's cache must be warm (the first run
of a changed kernel compiles it).
"""

from __future__ import annotations

import argparse
import hashlib
import pickle
import time

import numpy as np


def _copies(args: tuple) -> tuple:
    """The kernel writes into the free-resource arrays it gets: each call gets its own."""
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def cmd_capture(args: argparse.Namespace) -> int:
    from asad.slurm.sim import backfill, pass_kernel

    calls = []
    live = hashlib.sha256()
    kernel = pass_kernel.backfill_pass

    def recording(*a):  # noqa: ANN002, ANN202
        calls.append(_copies(a[:N_ARGS]))  # without the fit-time cache (its state is the replay's own)
        out = kernel(*a)
        _add(live, out)
        return out

    backfill.pass_kernel.backfill_pass = recording
    try:
        with open(args.snapshot, "rb") as fh:
            sim = pickle.load(fh)
        sim.run_until(sim.now() + args.days * 86400)
    finally:
        backfill.pass_kernel.backfill_pass = kernel
    with open(args.out, "wb") as fh:
        pickle.dump({"calls": calls, "digest": live.hexdigest()[:16]}, fh, protocol=pickle.HIGHEST_PROTOCOL)
    print(f"{len(calls)} passes recorded in {args.out}; digest {live.hexdigest()[:16]}")
    return 0


N_ARGS = 24  # pass_kernel._pass's arguments before the fit-time cache


def _runner(module):  # noqa: ANN001, ANN202
    """A pass kernel to call with the recorded arguments: with a fit-time cache of its own, kept
    from pass to pass as the partition keeps it, if the tree has one (``run_pass``)."""
    if not hasattr(module, "run_pass"):
        return module.backfill_pass
    cache = module.fit_cache.FitCache(0)

    def run(*a):  # noqa: ANN002, ANN202
        nonlocal cache
        if cache.n != len(a[9]):
            cache = module.fit_cache.FitCache(len(a[9]))
        return module.run_pass(cache, *a)
    return run


def _add(digest, out: tuple) -> None:  # noqa: ANN001
    for arr in out:
        digest.update(np.ascontiguousarray(arr).tobytes())


def replay(calls: list[tuple], reps: int) -> tuple[str, list[float]]:
    """The digest of every pass's output, and the CPU ms per pass of each repetition."""
    from asad.slurm.sim import pass_kernel

    digest = hashlib.sha256()
    kernel = _runner(pass_kernel)
    for a in calls:
        _add(digest, kernel(*_copies(a)))
    per_pass = []
    for _ in range(reps):
        inputs = [_copies(a) for a in calls]  # copied outside the clock
        kernel = _runner(pass_kernel)
        t0 = time.process_time()
        for a in inputs:
            kernel(*a)
        per_pass.append((time.process_time() - t0) / max(len(calls), 1) * 1e3)
    return digest.hexdigest()[:16], per_pass


def cmd_bench(args: argparse.Namespace) -> int:
    with open(args.calls, "rb") as fh:
        recorded = pickle.load(fh)
    calls = recorded["calls"]
    digest, per_pass = replay(calls, args.reps)
    ordered = sorted(per_pass)
    same = "the recorded run's" if digest == recorded["digest"] else f"NOT the recorded run's {recorded['digest']}"
    print(f"{len(calls)} passes; CPU ms a pass: min {ordered[0]:.3f}, median {ordered[len(ordered) // 2]:.3f}"
          f" ({', '.join(f'{x:.3f}' for x in per_pass)}); digest {digest} ({same})")
    return 0 if digest == recorded["digest"] else 1


def _load_kernel(tree: str, tag: str):  # noqa: ANN202
    """The tree's pass kernel (``_runner``) on its own ``plan_kernel`` (and ``fit_cache`` if it
    has one), compiled uncached."""
    import os
    import re
    import sys
    import types

    mods = {}
    # the tree's own modules, lowest first; a module a tree does not have (will_run before the
    # twelfth session, pass_shapes before the sixteenth) is skipped
    for name in ("plan_maps", "will_run", "plan_kernel", "fit_cache", "pass_shapes", "pass_kernel"):
        path = f"{tree}/asad/slurm/sim/{name}.py"
        if not os.path.exists(path):
            continue
        src = open(path).read().replace("cache=True", "cache=False").replace("njit(**LEAF)", "njit(cache=False, _nrt=False)")
        src = re.sub(r"^from asad\.slurm\.sim import .*$", "", src, flags=re.M)
        # the tree's own plans' map (split from plan_kernel in the ninth session) and will-run
        # walk (split in the twelfth), not the installed ones: their names are put in the module below
        src = re.sub(r"^from asad\.slurm\.sim\.(plan_maps|will_run) import \([^)]*\)", "", src, flags=re.M | re.S)
        src = src.replace("    drop_stale_cache(", "    (lambda *a: None)(")
        mod = types.ModuleType(f"{name}_{tag}")
        mod.__file__ = path
        mod.__dict__.update(mods)
        for lower in ("plan_maps", "will_run"):  # what ``from ... import (names)`` gave
            if lower in mods and name in ("will_run", "plan_kernel") and lower != name:
                mod.__dict__.update({k: v for k, v in vars(mods[lower]).items() if not k.startswith("__")})
        sys.modules[mod.__name__] = mod  # (dataclasses look their module up there)
        exec(compile(src, path, "exec"), mod.__dict__)  # noqa: S102 - our own source, to time it
        mods[name] = mod
    return mods["pass_kernel"]


def time_rotated(modules: list, calls: list[tuple], rounds: int) -> list[list[list[float]]]:
    """CPU seconds of each module's kernel on each recorded pass, per round: ``[module][pass]`` lists.
    Every round starts from cold kernels (passes in order); within a pass the modules run in an
    order rotated by round and pass and reversed every other one, so none always runs first
    (``sim_pass_parts_cost.py``, ``sim_pass_ab_trees.py``)."""
    times = [[[] for _ in calls] for _ in modules]
    for r in range(rounds):
        kernels = [_runner(m) for m in modules]
        for i, a in enumerate(calls):
            shift = (r + i) % len(modules)
            order = list(range(len(modules)))
            order = order[shift:] + order[:shift]
            if (r + i) % 2:
                order.reverse()
            for k in order:
                inputs = _copies(a)
                t0 = time.process_time()
                kernels[k](*inputs)
                times[k][i].append(time.process_time() - t0)
    return times


def cmd_ab(args: argparse.Namespace) -> int:
    with open(args.calls, "rb") as fh:
        recorded = pickle.load(fh)
    calls = recorded["calls"]
    modules = [_load_kernel(args.old, "a"), _load_kernel(args.new, "b")]
    ok = True
    for module in modules:
        kernel = _runner(module)
        digest = hashlib.sha256()
        for a in calls:
            _add(digest, kernel(*_copies(a)))
        ok = ok and digest.hexdigest()[:16] == recorded["digest"]
    times = [[[] for _ in calls] for _ in modules]
    for r in range(args.rounds):
        kernels = [_runner(m) for m in modules]  # each round from a cold cache (passes in order)
        for i, a in enumerate(calls):
            inputs = [_copies(a), _copies(a)]
            for k in ((0, 1) if (r + i) % 2 else (1, 0)):
                t0 = time.process_time()
                kernels[k](*inputs[k])
                times[k][i].append(time.process_time() - t0)
    n = max(len(calls), 1)
    mins = [sum(min(v) for v in t) / n * 1e3 for t in times]
    meds = [sum(sorted(v)[len(v) // 2] for v in t) / n * 1e3 for t in times]
    print(f"{len(calls)} passes x {args.rounds} rounds, CPU ms a pass: old {mins[0]:.3f} (medians {meds[0]:.3f}),"
          f" new {mins[1]:.3f} (medians {meds[1]:.3f}); old/new {mins[0] / mins[1]:.3f} (medians"
          f" {meds[0] / meds[1]:.3f}); both the recorded run's digest: {ok}")
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    cap = sub.add_parser("capture")
    cap.add_argument("snapshot")
    cap.add_argument("--days", type=float, default=0.02)
    cap.add_argument("--out", required=True)
    cap.set_defaults(fn=cmd_capture)
    bench = sub.add_parser("bench")
    bench.add_argument("calls")
    bench.add_argument("--reps", type=int, default=3)
    bench.set_defaults(fn=cmd_bench)
    ab = sub.add_parser("ab")
    ab.add_argument("old")
    ab.add_argument("new")
    ab.add_argument("calls")
    ab.add_argument("--rounds", type=int, default=7)
    ab.set_defaults(fn=cmd_ab)
    args = parser.parse_args()
    return args.fn(args)


if __name__ == "__main__":
    raise SystemExit(main())
