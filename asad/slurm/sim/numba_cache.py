"""How the simulator's kernels are compiled: ``LEAF``, the options of a compiled function that
allocates nothing; and numba's on-disk cache, which keys a compiled function on its own source file only, so a cached caller
keeps running a callee's old code after the callee's file alone was edited. ``drop_stale_cache``
stamps each dependency's hash beside the caller's cache and drops the cache when it moves.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

# numba counts the references to every array a compiled function receives or slices: an atomic
# increment where it takes it and a decrement where it lets go (NRT_incref / NRT_decref, one
# locked instruction each). A plan search takes ~30 arrays and calls its helpers ~10 times a
# try, so on a saturated pass these counts were about a third of the kernel's time (perf, the
# fourteenth session). A function compiled without numba's runtime (``_nrt=False``) counts
# nothing and slices for free; it may not allocate, which is why the search gets its scratch
# from the pass. Safe: every array it reads is held by its caller for the whole call.
LEAF = {"cache": True, "_nrt": False}

# The same profile: numba turns a signed index i into a[i + len(a) if i < 0 else i] (Python's
# negative indexing), a few more instructions and a register on every access. An index it knows
# to be unsigned skips that, so the innermost loops (the search's window, the will-run walk's
# usable test, the cursor, the bitmap) index with ``np.uint64(node)``: 1.08x on the kernel.


def drop_stale_cache(cache_dir: Path, module: str, dependency: Path) -> bool:
    """Delete ``module``'s numba cache files in ``cache_dir`` when ``dependency``'s source changed
    since they were written; True if it did. numba keys a cached function on its own file only, so
    a cached pass kept calling the *old* plan search after ``plan_kernel.py`` alone was edited
    (results and timings from code no longer there). A stamp of the dependency's hash beside the
    cache says which plan search the cache was compiled with. Best effort: an unwritable cache
    (an installed package) is numba's to place elsewhere, and nothing here may stop an import."""
    try:
        digest = hashlib.sha256(dependency.read_bytes()).hexdigest()
        stamp = cache_dir / f"{module}.{dependency.stem}.sha256"
        if stamp.exists() and stamp.read_text() == digest:
            return False
        stale = [*cache_dir.glob(f"{module}.*.nbi"), *cache_dir.glob(f"{module}.*.nbc")]
        for path in stale:
            path.unlink(missing_ok=True)
        cache_dir.mkdir(exist_ok=True)
        stamp.write_text(digest)
        return bool(stale)
    except OSError:
        return False
