"""Pictures a reader would rather look at than read (matplotlib, the ``plots`` extra)."""

from __future__ import annotations

from pathlib import Path


def _pyplot():  # noqa: ANN202
    try:
        import matplotlib
    except ModuleNotFoundError as exc:
        raise SystemExit("plots need matplotlib: pip install 'asad[plots]'") from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_workflow(summary: dict, path: Path) -> None:
    """A Gantt of the stages: queue wait (grey), idle allocation (orange), run (blue); a tick
    where each job was submitted, so pre-submissions (before the predecessor ended) show."""
    plt = _pyplot()
    t0 = summary["created_at"]
    stages = summary["stages"]
    fig, ax = plt.subplots(figsize=(10, 0.5 * len(stages) + 1.5))
    for i, st in enumerate(reversed(stages)):
        y = i
        h = (lambda t: None if t is None else (t - t0) / 3600.0)
        submit, eligible, job_start, start, end = (h(st["submit"]), h(st["eligible"]), h(st["job_start"]),
                                                   h(st["start"]), h(st["end"]))
        queue_from = eligible if eligible is not None else submit
        if queue_from is not None and job_start is not None:
            ax.barh(y, job_start - queue_from, left=queue_from, color="#bbbbbb", height=0.5,
                    label="queue wait" if i == 0 else None)
        if submit is not None and queue_from is not None and queue_from > submit:
            ax.barh(y, queue_from - submit, left=submit, color="#e6e6e6", height=0.5, hatch="//",
                    label="held by dependency" if i == 0 else None)
        if job_start is not None and start is not None and start > job_start:
            ax.barh(y, start - job_start, left=job_start, color="#f5a623", height=0.5,
                    label="idle allocation" if i == 0 else None)
        if start is not None and end is not None:
            ax.barh(y, end - start, left=start, color="#3b6fb6", height=0.5, label="run" if i == 0 else None)
        if submit is not None:
            ax.plot([submit], [y], marker="|", color="black", markersize=14)
    ax.set_yticks(range(len(stages)))
    ax.set_yticklabels([s["name"] for s in reversed(stages)])
    ax.set_xlabel("hours since the workflow was submitted (| = job submitted)")
    ms = summary.get("makespan_s")
    ax.set_title(f"{summary['workflow']} — {summary['strategy']}"
                 + (f" ({summary['mode']})" if summary["strategy"] == "asa" else "")
                 + (f", makespan {ms / 3600:.2f} h" if ms else "")
                 + f", {summary['core_hours']:.1f} core-h")
    handles, labels = ax.get_legend_handles_labels()
    uniq = dict(zip(labels, handles, strict=False))
    ax.legend(uniq.values(), uniq.keys(), loc="lower right", fontsize=8)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
