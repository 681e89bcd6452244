"""Pictures a reader would rather look at than read (matplotlib, the ``plots`` extra)."""

from __future__ import annotations

from pathlib import Path

COLORS = {"held": "#e6e6e6", "queue": "#9e9e9e", "idle": "#f5a623", "run": "#3b6fb6", "failed": "#d9534f"}


def _pyplot():  # noqa: ANN202
    try:
        import matplotlib
    except ModuleNotFoundError as exc:
        raise SystemExit("plots need matplotlib: pip install 'asad[plots]'") from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _unit(span_s: float) -> tuple[float, str]:
    if span_s <= 3 * 3600:
        return 60.0, "minutes"
    return 3600.0, "hours"


def _fmt(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f}s"
    if seconds < 3600:
        return f"{seconds / 60:.0f}m"
    return f"{seconds / 3600:.1f}h"


def _draw(ax, summary: dict, t0: float, unit_s: float, *, labels: bool) -> None:  # noqa: ANN001
    """One Gantt: held by a dependency (hatched), queue wait (grey), idle allocation (orange), run
    (blue); a black tick where the job was submitted, a red one where its predecessors ended, so a
    pre-submission shows as a black tick left of the red one."""
    stages = summary["stages"]
    ends = {s["name"]: s["end"] for s in stages}
    after = {s["name"]: s.get("after") for s in stages}
    for i, st in enumerate(reversed(stages)):
        y = i

        def h(t: float | None) -> float | None:
            return None if t is None else (t - t0) / unit_s

        submit, eligible, job_start, start, end = (h(st["submit"]), h(st["eligible"]), h(st["job_start"]),
                                                   h(st["start"]), h(st["end"]))
        queue_from = eligible if eligible is not None else submit
        if submit is not None and queue_from is not None and queue_from > submit:
            ax.barh(y, queue_from - submit, left=submit, color=COLORS["held"], height=0.55, hatch="//",
                    edgecolor="#bdbdbd", label="held (dependency or --begin)")
        if queue_from is not None and job_start is not None and job_start > queue_from:
            ax.barh(y, job_start - queue_from, left=queue_from, color=COLORS["queue"], height=0.55,
                    label="queue wait")
        if job_start is not None and start is not None and start > job_start:
            ax.barh(y, start - job_start, left=job_start, color=COLORS["idle"], height=0.55,
                    label="idle allocation (overhead)")
        if start is not None and end is not None:
            ax.barh(y, max(end - start, 1e-9), left=start, color=COLORS["run"], height=0.55, label="run")
        for tried in (st.get("attempt_list") or [])[:-1]:  # earlier attempts: killed, timed out, failed
            t_start, t_end = h(tried.get("start_time")), h(tried.get("end_time"))
            if t_start is not None and t_end is not None:
                ax.barh(y, max(t_end - t_start, 1e-9), left=t_start, color=COLORS["failed"], height=0.55,
                        edgecolor="white", label="earlier attempt (retried)")
                ax.annotate(tried["state"].replace("OUT_OF_MEMORY", "OOM"), ((t_start + t_end) / 2, y),
                            ha="center", va="center", fontsize=7, color="white")
        if submit is not None:
            ax.plot([submit], [y], marker="|", color="black", markersize=16, markeredgewidth=2,
                    linestyle="none", label="job submitted")
        preds = after.get(st["name"])
        pred_end = max((ends[p] for p in preds or () if ends.get(p) is not None), default=None)
        if pred_end is not None:
            ax.plot([h(pred_end)], [y], marker="|", color="#d62728", markersize=16, markeredgewidth=2,
                    linestyle="none", label="predecessors ended")
        if labels and end is not None and st.get("perceived_wait_s") is not None:
            text = f"perceived wait {_fmt(st['perceived_wait_s'])}"
            if st.get("idle_s"):
                text += f", idle {_fmt(st['idle_s'])}"
            ax.annotate(text, (end, y), xytext=(6, 0), textcoords="offset points", va="center", fontsize=7,
                        color="#444444")


def plot_workflow(summary: dict, path: Path) -> None:
    """A Gantt of the stages on a time axis with queue waits, held time, idle allocations and
    submissions marked (the ASA paper's Figure 4 for a real run). When one early wait dwarfs the
    rest, a second panel zooms on the part after the first stage started."""
    plt = _pyplot()
    stages = summary["stages"]
    t0 = summary["created_at"]
    times = [t for s in stages for t in (s["submit"], s["end"]) if t is not None]
    t_end = max(times, default=t0 + 1)
    starts = [s["start"] for s in stages if s["start"] is not None]
    first_start = min(starts, default=t0)
    zoom = starts and (t_end - first_start) < 0.35 * (t_end - t0)
    height = 0.45 * len(stages) + 1.6
    fig, axes = plt.subplots(2 if zoom else 1, 1, figsize=(11, height * (2 if zoom else 1)), squeeze=False)
    panels = [(axes[0][0], t0, t_end - t0, "whole run")]
    if zoom:
        panels.append((axes[1][0], first_start, t_end - first_start, "zoom: from the first stage's start"))
    for ax, origin, span, what in panels:
        span = max(span, 60.0)  # a workflow that just started has nothing on its axis yet
        unit_s, unit = _unit(span)
        _draw(ax, summary, t0, unit_s, labels=(what != "whole run" or not zoom))
        left = (origin - t0) / unit_s
        ax.set_xlim(left - 0.02 * span / unit_s, left + 1.25 * span / unit_s)
        ax.set_yticks(range(len(stages)))
        ax.set_yticklabels([s["name"] for s in reversed(stages)])
        ax.set_xlabel(f"{unit} since the workflow was submitted" + (f" ({what})" if zoom else ""))
        ax.grid(axis="x", color="#eeeeee")
        ax.set_axisbelow(True)
    ms = summary.get("makespan_s")
    axes[0][0].set_title(
        f"{summary['workflow']} — {summary['strategy']}" + (f" ({summary['mode']})" if summary["strategy"] == "asa"
                                                             else "")
        + (f", makespan {_fmt(ms)}" if ms else "")
        + f", perceived wait {_fmt(summary.get('total_wait_s') or 0.0)}"
        + f", {summary['core_hours']:.1f} core-h ({summary['overhead_core_hours']:.2f} idle)")
    handles, labels = axes[-1][0].get_legend_handles_labels()
    for ax, *_ in panels[:-1]:
        h2, l2 = ax.get_legend_handles_labels()
        handles, labels = handles + h2, labels + l2
    uniq = dict(zip(labels, handles, strict=False))
    fig.legend(uniq.values(), uniq.keys(), loc="lower center", ncol=min(6, len(uniq)), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.06 if zoom else 0.09, 1, 1))
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
