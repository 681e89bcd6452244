"""What ``asad learners`` prints: each stored learner's estimate and its distribution over waits."""

from __future__ import annotations

import json

from asad.common.units import format_duration


_BARS = " ▁▂▃▄▅▆▇█"


def sparkline(values: list[float]) -> str:
    top = max(values) if values else 0.0
    if top <= 0:
        return ""
    return "".join(_BARS[min(8, int(round(8 * v / top)))] for v in values)


def _distribution(pred, state: dict) -> tuple[list[float] | None, list[float] | None]:  # noqa: ANN001
    """ASA's probabilities over its grid of waits (the grid points only, not Slurm's expert)."""
    probs = state.get("p") or state.get("probabilities")
    grid = getattr(pred, "_grid", None)
    if probs is None and hasattr(pred, "p"):
        probs = [float(x) for x in pred.p]
    if probs is None:
        return None, None
    grid_list = [float(g) for g in grid] if grid is not None else None
    if grid_list is not None:
        probs = probs[: len(grid_list)]
    return probs, grid_list


LEARNER_QS = (0.1, 0.5, 0.9)


def render_learners(rows: list[tuple[str, dict, int, float]], as_json: bool = False,
                    engine_view=None) -> str:  # noqa: ANN001
    """``engine_view(key, kind)``: (estimate, quantiles at ``LEARNER_QS``) as the engine is told them (its
    learner, pooled with coarser keys and calibrated, as ``asad predict`` says), or None for a
    learner of another kind; then the stored learner alone answers."""
    from asad.learn.registry import predictor_from_state

    items = []
    for key, state, n, updated in rows:
        pred = predictor_from_state(state)
        probs, grid = _distribution(pred, state)
        seen = engine_view(key, state.get("kind")) if engine_view is not None else None
        estimate, quantiles = seen if seen is not None else (pred.estimate(), pred.quantiles(list(LEARNER_QS)))
        items.append({"key": key, "kind": state.get("kind"), "observations": n, "estimate_s": estimate,
                      "median_s": quantiles[LEARNER_QS.index(0.5)], "updated_at": updated,
                      "quantiles_s": {str(q): max(0.0, float(v)) for q, v in zip(LEARNER_QS, quantiles, strict=True)},
                      "p": probs, "grid_s": grid})
    if as_json:
        return json.dumps(items, indent=2)
    grids = [it["grid_s"] for it in items if it["grid_s"]]
    span = f" ({format_duration(grids[0][0])} … {format_duration(grids[0][-1])}, log scale)" if grids else ""
    width = max([len("GEOMETRY"), *(len(it["key"]) for it in items)])  # a key cut short names another
    lines = [f"{'GEOMETRY':<{width}} {'KIND':<14} {'OBS':>5} {'ESTIMATE':>9}  p over the grid{span}, or quantiles"]
    for it in items:
        pic = (sparkline([float(x) for x in it["p"]]) if it["p"] else
               "  ".join(f"p{round(float(q) * 100)} {format_duration(v)}" for q, v in it["quantiles_s"].items()))
        lines.append(f"{it['key']:<{width}} {str(it['kind'])[:14]:<14} {it['observations']:>5} "
                     f"{format_duration(it['estimate_s']):>9}  {pic}")
    if not items:
        lines.append("(no learners yet: they appear once a submitted job has started)")
    return "\n".join(lines)
