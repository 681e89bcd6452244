"""How long workflow.yaml validation takes as workflows grow (a benchmark, not a test).

Run: .venv/bin/python tests/bench_spec_load.py [N ...]
Prints, per size, the best of three loads: wall and CPU seconds and CPU µs per stage. CPU per stage
staying flat as N grows is the check that loading has no quadratic step; wall time depends on what
else the machine runs.
"""

from __future__ import annotations

import sys
import time

from asad.spec.load import parse_workflow


def generated(n: int) -> str:
    """n stages, each after the previous one and the one seven back, with a simulate block."""
    rows = ["name: huge", "defaults: {mem: 1G}", "stages:"]
    for i in range(n):
        after = f"[s{i - 1}, s{max(i - 7, 0)}]" if i else "[]"
        rows.append(f"  - {{name: s{i}, run: echo {i}, cpus: {1 + i % 28}, time: 10m, after: {after}, "
                    f"simulate: {{runtime: 5m, peak_mem: 600M}}}}")
    return "\n".join(rows) + "\n"


def main(sizes: list[int]) -> None:
    print(f"{'stages':>8} {'KiB':>7} {'wall_s':>7} {'cpu_s':>7} {'cpu_us_per_stage':>17}")
    for n in sizes:
        text = generated(n)
        wall = cpu = float("inf")
        for _ in range(3):
            w0, c0 = time.perf_counter(), time.process_time()
            spec = parse_workflow(text, "generated.yaml")
            wall, cpu = min(wall, time.perf_counter() - w0), min(cpu, time.process_time() - c0)
        assert len(spec.stages) == n
        print(f"{n:>8} {len(text) // 1024:>7} {wall:>7.2f} {cpu:>7.2f} {cpu / n * 1e6:>17.0f}")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [1_000, 10_000, 50_000])
