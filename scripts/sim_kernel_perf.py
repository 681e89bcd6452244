"""Run the recorded backfill passes through this tree's compiled pass kernel and write a perf map
(``/tmp/perf-PID.map``) naming its JIT functions, so that ``perf report`` shows where the
kernel's time goes by function (issue 37, fourteenth session: this is how numba's reference
counts, ``NRT_incref``/``NRT_decref``, were found at a third of the kernel).

    rm -rf /tmp/nbc && NUMBA_CACHE_DIR=/tmp/nbc perf record -F 4000 -o perf.data \\
        python scripts/sim_kernel_perf.py /tmp/s37t-work/passes56.pkl --rounds 20
    perf report -i perf.data --no-children --sort sym --dsos "[JIT] tid NNN"

With ``--code-dir DIR`` it also writes each function's machine code, for per-instruction counts
(``scripts/sim_kernel_annotate.py``: how the fifteenth session found the search's bitmap counts
and the pick's insertion sort).

The numba cache must be empty (``NUMBA_CACHE_DIR`` a fresh directory): a kernel loaded from
the cache has no LLVM module left to name its functions. The fit-time cache's bookkeeping in
Python (``note_pass``) is timed apart from the kernel.
"""

from __future__ import annotations

import argparse
import os
import pickle
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sim_pass_replay as spr  # noqa: E402


def write_perf_map(dispatcher, code_dir: str | None = None) -> int:  # noqa: ANN001
    """Every function defined in the dispatcher's compiled libraries, by address, into perf's map
    for this process; how many. With ``code_dir``, each function's machine code too (``NAME.bin``
    and ``index.txt``: address, size, name) for ``sim_kernel_annotate.py``."""
    entries = []
    for cres in dispatcher.overloads.values():
        lib = cres.library
        for fn in lib._final_module.functions:  # noqa: SLF001 - numba keeps no public list
            if fn.is_declaration:
                continue
            addr = lib.get_pointer_to_function(fn.name)
            if addr:
                entries.append((addr, re.sub(r"B\d+v\d+B\d+.*", "", fn.name).replace("_ZN4asad5slurm3sim", "")))
    entries.sort()
    with open(f"/tmp/perf-{os.getpid()}.map", "w") as fh:
        for i, (addr, name) in enumerate(entries):
            size = entries[i + 1][0] - addr if i + 1 < len(entries) else 0x1000
            fh.write(f"{addr:x} {size:x} {name}\n")
    if code_dir:
        import ctypes

        os.makedirs(code_dir, exist_ok=True)
        with open(os.path.join(code_dir, "index.txt"), "w") as index:
            for i, (addr, name) in enumerate(entries):
                size = min(entries[i + 1][0] - addr, 1 << 16) if i + 1 < len(entries) else 0x1000
                safe = re.sub(r"[^A-Za-z0-9_]", "_", name)[:80]
                with open(os.path.join(code_dir, f"{safe}.bin"), "wb") as out:
                    out.write(ctypes.string_at(addr, size))
                index.write(f"{addr:x} {size:x} {safe}\n")
    return len(entries)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("calls", help="recorded passes (sim_pass_replay.py capture)")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--code-dir", help="also write each JIT function's machine code here")
    args = parser.parse_args()
    from asad.slurm.sim import fit_cache, pass_kernel

    with open(args.calls, "rb") as fh:
        calls = pickle.load(fh)["calls"]
    for r in range(args.rounds):
        cache = fit_cache.FitCache(len(calls[0][9]))
        noted = kernel = 0.0
        for a in [spr._copies(c) for c in calls]:  # noqa: SLF001 - the replay's own copying
            t0 = time.process_time()
            cache.note_pass(a[9], a[10], a[18:23])
            t1 = time.process_time()
            pass_kernel.backfill_pass(*a, cache.arrays)
            noted += t1 - t0
            kernel += time.process_time() - t1
        print(f"round {r}: note_pass {noted / len(calls) * 1e3:.3f} ms a pass, kernel {kernel / len(calls) * 1e3:.3f}")
    print(f"{write_perf_map(pass_kernel.backfill_pass, args.code_dir)} functions named in /tmp/perf-{os.getpid()}.map")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
