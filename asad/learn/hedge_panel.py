"""What :class:`asad.learn.hedge.HedgePool` speaks in: the panel of experts one key has at one
instant, the top level's learners, and the expert that dominated a prediction (what ``asad
explain`` shows). Kept apart from the pool so that the top level (hedge_top.py) and the pool
(hedge.py) both read them without importing each other."""

from __future__ import annotations

from dataclasses import dataclass

PANEL = ("backoff", "last", "median5", "median20", "median100", "parent", "slurm")
SLURM = PANEL.index("slurm")  # Slurm's estimate: speaks only where a probe was noted (hedge_slurm)
# probes kept per key for judging the panel as it stood when a job was told (bounded; not saved:
# after a restart a wait told before it is judged without the probe)
SLURM_PROBES_KEPT = 64
# the experts of the top level (``hedge_top: learners``): whole learners, the back-off's answer
# and the panel's mixture; ``learners-median20`` adds the answering level's running median of 20
TOP = ("backoff", "panel")
TOP_MEDIAN20 = (*TOP, "median20")
# ``hedge_top_loss: over`` with ``hedge_top_tau`` 0: the threshold is the running median of the
# back-off's |error| over this many of the group's last waits (not saved: rebuilt after a restart)
TOP_TAU_WINDOW = 1000


@dataclass(frozen=True)
class Panel:
    """What the experts say for one key at one instant, and the group whose weights judge them."""

    backoff: float  # the back-off median (log10(1 + s))
    stratum: str  # the back-off's residual stratum (which level answered)
    group: str  # whose weights: "<coarsest key>#<slot>[:<count bucket>]"
    values: tuple[float | None, ...]  # in PANEL order; None: that expert has nothing to say
    top: str = ""  # the top level's weight group ("": the cluster's, "<coarsest key>#top")


@dataclass(frozen=True)
class Dominant:
    """The expert that weighs most in a prediction (what ``asad explain`` shows)."""

    expert: str
    weight: float  # its share of the weight among the experts that spoke, 0..1
    group: str
    answer_log10: float  # its answer, log10(1 + s)

