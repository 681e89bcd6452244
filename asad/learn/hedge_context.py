"""``hedge_top_groups: disagreement`` (issue 38, twelfth round): the top level's weights kept per
*context* the learner knows when a job is told, Freund et al.'s "specialists" (an expert awake
only in its context): here the two learners' disagreement, |log10 back-off - log10 mixture|,
bucketed, and its sign. On the tuning windows (scripts/hedge_contexts.py) a fixed choice per
such bucket, fitted on 04-29 .. 05-20 and applied to 05-20 .. 06-10, beat the back-off by
+0.006 on both clusters (docs/results/learn.md, twelfth round), where the per-cluster choice
could not on Graham's judged windows. Three top levels per context were tried on the tuning
windows under the ninth round's rule; none passed (Cedar's coverage, Graham's second window).

``hedge_top_groups: floor`` (thirteenth round): the top level's weights kept per bucket of the
pending floor's share of the back-off's answer, the one context of the twelfth round's ten that
added to the per-cluster choice on both clusters ahead (+0.0039 / +0.0039 on 05-20 .. 06-10).
The floor is known only when a job is told (``ExpertsPool.told``'s ``now_s`` and
``pending_since_s``), not when the wait arrives, so the bucket rides with what the job was told
(:class:`ToldIn`) back to the wait's feedback, which then moves the weights of the context the
job was told in.
"""

from __future__ import annotations

import bisect

from asad.learn.calibration import Told

# bucket edges of |back-off - mixture| in decades (log10(1 + s)), and the band within which the
# two count as level (no sign); the same as scripts/hedge_contexts.py's ``disagree x sign``
DISAGREE_EDGES = (0.01, 0.03, 0.1, 0.3, 1.0)
DISAGREE_NAMES = ("<0.01", "0.01-0.03", "0.03-0.1", "0.1-0.3", "0.3-1", ">=1")
LEVEL_BAND = 0.005


def disagreement_bucket(backoff: float, mixture: float) -> str:
    """The context of one prediction: the disagreement's bucket and its sign, e.g. ``0.03-0.1:b<p``
    (the back-off answers below the mixture); never contains ``#`` (it names a weight group)."""
    d = abs(backoff - mixture)
    sign = "level" if d < LEVEL_BAND else ("b>p" if backoff > mixture else "b<p")
    return f"{DISAGREE_NAMES[bisect.bisect_right(DISAGREE_EDGES, d)]}:{sign}"


# bucket edges of the floor's share of the back-off's answer (both log10(1 + s)); the same as
# scripts/hedge_contexts.py's ``floor share``: "none" without a pending floor, "binds" at or past 1
FLOOR_EDGES = (0.25, 0.5, 0.75, 1.0)
FLOOR_NAMES = ("<0.25", "0.25-0.5", "0.5-0.75", "0.75-1", "binds")
NO_FLOOR = "none"
# the ``hedge_top_groups`` values whose top level reads the floor share's bucket (``floor+cluster``:
# with the cluster's beside it and a meta level between them, asad/learn/hedge_meta.py)
FLOOR_GROUPS = ("floor", "floor+cluster")


def floor_share_bucket(floor: float | None, backoff: float) -> str:
    """The floor's share of the back-off's answer, bucketed (``floor``: log10(1 + the oldest pending
    job of the class's wait so far), None: no floor). As the analysis defined it, a back-off answer
    of 0 gives the share 0 (the first bucket), whatever the floor."""
    if floor is None:
        return NO_FLOOR
    share = floor / max(backoff, 1e-9) if backoff > 0 else 0.0  # the analysis's guard, kept
    return FLOOR_NAMES[bisect.bisect_right(FLOOR_EDGES, share)]


UNSET = object()  # a key absent from a cache (the pool's told() under a floor puts it back so)


def floor_top(group: str, context: str) -> str:
    """The top group of the floor-share bucket ``context`` for a panel of weight group ``group``,
    kept in the cluster's row: ``<cluster>#floor:<bucket>#top``."""
    return f"{group.split('#', 1)[0]}#floor:{context}#top"


class ToldIn(tuple):
    """A ``Told`` (estimate, stratum, shifts; still a 3-tuple, so whatever reads a Told reads it)
    that also names the top level's context the job was told in, so the wait's feedback moves that
    context's weights (the floor it was told under is not known when the wait arrives)."""

    context: str

    def __new__(cls, told: Told, context: str = NO_FLOOR) -> ToldIn:
        self = super().__new__(cls, told)
        self.context = context
        return self


def told_context(told: Told | None) -> str:
    """The floor-share context a job was told in: the one it carries; without one (a Told kept as
    JSON by the daemon, which tells without a floor, or rebuilt) "binds" when the floor bound the
    answer (its stratum ends ``:p``), else "none"."""
    context = getattr(told, "context", None)
    if context is not None:
        return context
    stratum = None if told is None else told[1]
    return FLOOR_NAMES[-1] if stratum is not None and stratum.endswith(":p") else NO_FLOOR
