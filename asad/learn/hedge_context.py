"""``hedge_top_groups: disagreement`` (issue 38, twelfth round): the top level's weights kept per
*context* the learner knows when a job is told, Freund et al.'s "specialists" (an expert awake
only in its context): here the two learners' disagreement, |log10 back-off - log10 mixture|,
bucketed, and its sign. On the tuning windows (scripts/hedge_contexts.py) a fixed choice per
such bucket, fitted on 04-29 .. 05-20 and applied to 05-20 .. 06-10, beat the back-off by
+0.006 on both clusters (docs/results/learn.md, twelfth round), where the per-cluster choice
could not on Graham's judged windows. Three top levels per context were tried on the tuning
windows under the ninth round's rule; none passed (Cedar's coverage, Graham's second window).
"""

from __future__ import annotations

import bisect

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
