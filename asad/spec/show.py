"""`python -m asad.spec.show WORKFLOW.yaml...`: validate workflow files and show, one row per stage
in run order, what asad understood (nodes, CPUs, memory, time, partition; an array stage's
indices and task count, its size being per task)."""

from __future__ import annotations

from asad.spec.load import SpecError, load_workflow
from asad.spec.model import WorkflowSpec
from asad.common.units import format_duration, format_mem


def describe(spec: WorkflowSpec) -> str:
    """A short, squeue-like summary of a validated workflow (one row per stage, in run order). An
    ARRAY column (``0-5%3 (6 tasks)``) when a stage is a job array: its size is per task."""
    arrays = any(spec.stage(name).array is not None for name in spec.topo_order())
    rows = [("STAGE", "AFTER", *(("ARRAY",) if arrays else ()), "NODES", "CPUS", "MEM/NODE", "TIME", "PARTITION",
             "RUN")]
    for name in spec.topo_order():
        s = spec.stage(name)
        run = ("script " if s.run_is_script else "") + " ".join(s.run.split())
        array = () if not arrays else ("-",) if s.array_spec is None else (
            f"{s.array_spec.text()} ({s.array_spec.count} task{'s' if s.array_spec.count != 1 else ''})",)
        rows.append((s.name, ",".join(s.after) or "-", *array, str(s.nodes), str(s.cpus),
                     format_mem(s.mem_per_node_mb()), format_duration(s.time_s), s.partition or "(default)",
                     run if len(run) <= 40 else run[:39] + "…"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines = [f"workflow {spec.name}: {len(spec.stages)} stages, strategy {spec.strategy}"
             + (f" ({spec.mode})" if spec.strategy == "asa" else "") + f", workdir {spec.workdir}"]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1] for r in rows]
    return "\n".join(line.rstrip() for line in lines)


def main(argv: list[str] | None = None) -> int:
    import sys

    paths = sys.argv[1:] if argv is None else argv
    if not paths:
        print("usage: python -m asad.spec.show WORKFLOW.yaml [...]", file=sys.stderr)
        return 2
    status = 0
    try:
        for path in paths:
            try:
                print(describe(load_workflow(path)), flush=True)
            except SpecError as exc:
                print(f"error: {exc}", file=sys.stderr)
                status = 1
    except BrokenPipeError:
        # `... | head` closed the pipe: stop quietly, as cat does, and keep Python's exit-time flush
        # from failing on the closed descriptor.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return status


if __name__ == "__main__":
    raise SystemExit(main())
