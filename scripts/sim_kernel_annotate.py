"""Per-instruction sample counts of the pass kernel's JIT code: ``perf script`` output of a run of
``sim_kernel_perf.py --code-dir DIR`` joined with the machine code it wrote (``objdump`` of each
function's bytes at its address). numba's code is not in a file, so ``perf annotate`` cannot show
it (issue 37, fifteenth session).

    perf script -i perf.data -F ip,sym > samples.txt
    python scripts/sim_kernel_annotate.py DIR samples.txt FUNCTION_SUBSTRING [--min 0.3]
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("code_dir")
    parser.add_argument("samples")
    parser.add_argument("function")
    parser.add_argument("--min", type=float, default=0.3, help="show instructions with at least this %% of the function")
    parser.add_argument("--context", type=int, default=0, help="also show this many instructions around each")
    args = parser.parse_args()
    funcs = []
    with open(os.path.join(args.code_dir, "index.txt")) as fh:
        for line in fh:
            addr, size, name = line.split()
            funcs.append((int(addr, 16), int(size, 16), name))
    hits = collections.Counter()
    with open(args.samples) as fh:
        for line in fh:
            parts = line.split()
            if parts:
                try:
                    hits[int(parts[0], 16)] += 1
                except ValueError:
                    pass
    for addr, size, name in funcs:
        if args.function not in name:
            continue
        total = sum(c for ip, c in hits.items() if addr <= ip < addr + size)
        if not total:
            continue
        print(f"== {name}: {total} samples")
        asm = subprocess.run(["objdump", "-D", "-b", "binary", "-mi386:x86-64", f"--adjust-vma={addr:#x}",
                              os.path.join(args.code_dir, f"{name}.bin")], capture_output=True, text=True).stdout
        lines = [ln for ln in asm.splitlines() if ln[:1] == " " and ":" in ln]
        shown = set()
        rows = []
        for i, ln in enumerate(lines):
            ip = int(ln.split(":")[0], 16)
            if 100.0 * hits[ip] / total >= args.min:
                shown.update(range(i - args.context, i + args.context + 1))
        last = -2
        for i in sorted(shown):
            if 0 <= i < len(lines):
                ip = int(lines[i].split(":")[0], 16)
                if i != last + 1:
                    rows.append("   ...")
                rows.append(f"{100.0 * hits[ip] / total:6.2f}  {ip - addr:6x}: {lines[i].split(':', 1)[1].strip()}")
                last = i
        print("\n".join(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
