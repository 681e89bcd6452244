"""The settings of the ``experts`` family of wait learners (``experts``, ``median-backoff``,
``hedge``): one frozen dataclass, validated on construction, saved with a pool's state and read
back from it. The learners themselves: :mod:`asad.learn.experts` and :mod:`asad.learn.hedge`."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from asad.learn.calibration import ACI_SPACES
from asad.learn.key_levels import DEFAULT_LEVELS


@dataclass(frozen=True)
class ExpertsConfig:
    eta: float = 4.0  # learning rate of the weights, per unit of absolute log10 error
    log_weight_floor: float = 6.0  # every expert within exp(-floor) of the best
    long_memory: int = 5000  # waits kept per key for the long median (bounded state)
    levels: tuple[tuple[str, ...], ...] = DEFAULT_LEVELS
    residual_window: int = 5000  # residuals kept per key for the quantiles
    min_residuals: int = 500  # a level needs this many before its residuals are used
    residuals_from: str = "coarsest"  # the "coarsest" level (e.g. the cluster), or the "finest" with min_residuals
    max_loss: float = 3.0  # losses capped (three decades), so one wild wait cannot erase an expert
    # "hedge": exponential weights over all experts; "backoff": the long median of the finest
    # key that has seen a wait (no weights)
    mode: str = "hedge"
    # change point: after ``change_run`` waits in a row more than ``change_factor`` times above
    # (or all below) a key's long median, its long history is cut to those waits (0: never)
    change_factor: float = 3.0
    change_run: int = 0
    # where the change point is looked for: at "all" levels of a key, or at the "key" itself only
    # (a coarse level mixes geometries and batches, whose runs of far-off waits are no change
    # of the queue: cutting its history there made the real replay worse)
    change_scope: str = "all"
    # the floor from waits already under way: the fields of the class (e.g. the same account's
    # jobs of this partition and walltime bucket) whose oldest pending job, eligible since t,
    # floors the estimate at log10(1 + now - t); () = no floor. The caller says when the
    # oldest pending job became eligible (``pending_since_s``): a wait still running is a
    # right-censored observation that the medians of finished waits do not see yet.
    pending_floor: tuple[str, ...] = ()
    # "backoff" only: shrink each key's median towards its coarser key's estimate with this
    # many pseudo-waits, ``(n m + k parent) / (n + k)`` in log10 (0: the finest key alone)
    prior_n: float = 0.0
    # "stratum" residuals ("backoff" only): kept per (coarsest key, which level answered, how
    # many waits it had), so a cold geometry's quantiles are as wide as cold answers were
    # adaptive conformal inference (Gibbs & Candes 2021; asad/learn/calibration.py): each
    # stratum moves the level it reads by ``aci_gamma * (q - covered)`` per outcome, covered
    # = the wait fell at or below the quantile the job was told (0: off)
    aci_gamma: float = 0.0
    # what ACI moves: the "level" read from the residuals (clipped to the window's ends, or
    # "open" past them), or the "shift" (log10) itself (asad/learn/calibration.py)
    aci_space: str = "level"
    # whether the caller feeds ACI a miss as soon as a pending job has waited past a told
    # quantile (ExpertsPool.aci_miss), or only when the job starts
    aci_early_misses: bool = True
    # recalibration map (instead of ACI): each stratum counts how often the waits fell at or
    # below the shifts they were told at :data:`MAP_LEVELS`, weighted down by half every this
    # many waits, and reads a nominal q at the level whose counted coverage is q (0: off)
    recalibrate_halflife: float = 0.0
    # strata of "stratum" residuals: "level-count" (which level answered, and its waits), "level"
    # (warm key or which coarser level), or "none" (one window per coarsest key)
    strata: str = "level-count"
    # the point estimate: the key's (shrunk) median as is ("median"), or shifted by the median
    # residual of its stratum ("calibrated": e.g. cold answers that ran low are raised;
    # "calibrated-cold": only answers borrowed from a coarser key)
    point: str = "median"
    # Hedge over the back-off's panel (asad/learn/hedge.py, kind "hedge"; "backoff" mode only):
    # the learning rate per unit of loss (0: no mixture, the back-off median alone), the fixed
    # share (each round every expert keeps at least this share over N), the loss ("abs": |log10
    # error|, "sq": its square), how the panel is combined ("mean": weighted mean in log10,
    # "leader": the heaviest expert's answer) and what the weights are shared by ("slot": the
    # coarsest key and which level answered, "slot-count": and how many waits it had)
    hedge_eta: float = 0.0
    hedge_share: float = 0.0
    hedge_loss: str = "abs"
    hedge_combine: str = "mean"
    hedge_groups: str = "slot"
    # the loss's cap in log10 (0: max_loss): "abs" pays min(|error|, cap); "miss" pays 1 when
    # |error| > cap, else 0 (the score counts waits missed by more than a factor, not how far)
    hedge_cap: float = 0.0
    # a prior over the panel: the share the back-off's own answer gets of the weight every
    # expert starts with and of the mass fixed share gives back (0: uniform, 1/N each)
    hedge_prior: float = 0.0
    # batched feedback: the waits of one weight group that start within ``hedge_batch_s`` of the
    # first of them are one round of Hedge, each expert paying its mean loss over them (a batch of
    # one key's jobs starting together is one piece of news about the queue, not n); -1: off,
    # every wait is its own round
    hedge_batch_s: float = -1.0
    # a top level over whole learners (issue 38, fourth round): "learners" weighs the back-off's
    # answer against the panel's mixture with Hedge (same eta, share, loss, cap, prior and
    # batching), per coarsest key, and answers with the "leader" (ties to the back-off) or the
    # weighted "mean" in log10 (``hedge_top_combine``); "none": the panel's mixture is the answer
    hedge_top: str = "none"
    hedge_top_combine: str = "leader"
    # the top level's own loss, rate and share (issue 38, fifth round). "charged": the panel's
    # loss; "win": a learner pays 1 when its |error| exceeds the other's (0 on a tie), so the
    # weights move to the learner that is nearer more often, which is what a *median* error
    # scores; "over": pays 1 when its |error| exceeds ``hedge_top_tau`` (0: the running median
    # of the back-off's own errors in the group over its last ``asad.learn.hedge.TOP_TAU_WINDOW`` waits).
    # ``hedge_top_eta`` 0 and ``hedge_top_share`` -1: the panel's. "draw" (combine): follow the
    # learner drawn from the weights after each round (seeded; Hedge's bound then holds in
    # expectation for a 0/1 loss, which is not convex)
    hedge_top_loss: str = "charged"
    hedge_top_tau: float = 0.0
    hedge_top_eta: float = 0.0
    hedge_top_share: float = -1.0
    # issue 38, sixth round. "window" (loss): a learner pays its own median |error| over the top
    # group's last ``hedge_top_window`` waits, this one included: the score itself (a median
    # error), where "win" and "over" count proxies of it. ``hedge_top_groups``: the top level's
    # weights per "cluster" (one group sees every wait) or per "account" (the key's cluster and
    # account; a key without an account, as in real use, is its cluster). ``hedge_top``
    # "learners-median20" adds a third learner, the answering level's running median of its last
    # 20 waits (the panel's nearest to the ``median-k`` baseline). Twelfth round: "disagreement",
    # per cluster and bucket of |back-off - mixture| with its sign (asad/learn/hedge_context.py);
    # thirteenth: "floor", per cluster and bucket of the pending floor's share of the back-off's
    # answer as the job was told (carried back with its wait)
    hedge_top_window: int = 1000
    hedge_top_groups: str = "cluster"
    # judge the top level's learners on what the job would have been told: when the pending floor
    # raised the answer the job was told (its stratum ends ":p"), every learner's answer is raised
    # to that floor too before it pays (the score is taken after the floor; a learner's answer
    # below it was never told). Without it, the learners pay on their answers before the floor
    hedge_top_told: bool = False
    # Slurm's own start estimate as one more expert of the panel (issue 38's missing expert,
    # ``slurm`` in asad/learn/hedge.py): it speaks where the daemon noted a ``sbatch --test-only``
    # probe of the geometry (asad/daemon/slurm_probe.py; setting ``slurm_expert``). Off: the
    # panel of the replay, which has no Slurm to ask
    hedge_slurm: bool = False
    # issue 38, seventh round: with the window loss and the leader, follow a learner only once its
    # running median error beats the followed one's by this margin (log10; 0: the heaviest)
    hedge_top_margin: float = 0.0
    # residual strata per learner the top level follows (leader or draw), not per level alone
    hedge_top_strata: bool = False
    # issue 38, eleventh round: the top level's long memory per group (asad/learn/hedge_memory.py).
    # ``hedge_top_memory_s`` -1: off; 0: every judged wait since the group's first; > 0: the
    # group's judged waits of the last that many seconds. The leader follows the learner with the
    # smaller mean loss over it ("window": the smaller median |error|), the back-off until the
    # group has ``hedge_top_min_n`` judged waits, switching only past ``hedge_top_margin``.
    # ``hedge_top_loss`` "clip" pays min(|error|, tau) / tau (``hedge_top_tau`` > 0);
    # ``hedge_top_tau_scope`` "cluster": the running threshold of "over" is the back-off's median
    # error over the cluster's last waits, not the top group's (an account's) own
    hedge_top_memory_s: float = -1.0
    hedge_top_min_n: int = 0
    hedge_top_tau_scope: str = "group"
    # issue 38, fourteenth round: ``hedge_top_groups: floor+cluster`` keeps both top levels, the
    # cluster's and the floor share's, each with its own weights as alone, and a meta level per
    # cluster (asad/learn/hedge_meta.py) chooses between them by exponential weights: the
    # "meta" combine ("draw": a seeded draw; "leader": the heavier, ties to the cluster's) and
    # loss ("win": 1 for the top level farther from the wait; "window": its median |error| over
    # the cluster's last ``hedge_top_window`` waits), at the top level's rate and share
    hedge_meta_combine: str = "draw"
    hedge_meta_loss: str = "win"
    # issue 38, seventh round: cold answers (a stratum whose answering level is coarser than the
    # key, the key had no wait of its own) step ACI at their own rate (0: ``aci_gamma``), and
    # while their stratum is short of residuals read the pooled residuals of cold answers
    # (``cold_pool``) rather than of every answer, mostly warm and narrower (asad/learn/calibration.py)
    aci_gamma_cold: float = 0.0
    cold_pool: bool = False
    # issue 38, eighth round: a cold stratum's ACI step grows with its recent miss bias, from its
    # base rate up to ``aci_cold_adapt_max`` (0: off), the bias decayed with this halflife in
    # outcomes (asad/learn/calibration.py AciAdapt)
    aci_cold_adapt_max: float = 0.0
    aci_cold_adapt_halflife: float = 50.0
    # issue 38, sixteenth session: a key's cold jobs are one burst (told before any of its waits
    # is known; scripts/cold_bursts.py), so a cold stratum hears each key once: its first cold
    # wait joins the stratum's window and steps ACI, and its early misses count once per level;
    # the burst's other jobs do not (a burst of thousands no longer sets the calibration the
    # next new key is told)
    cold_once_per_key: bool = False
    # issue 38, seventeenth session: a cold answer's stratum per class of burst size as known when
    # the job is told (how many jobs of its key are pending then, ``key_pending``: below
    # ``cold_burst_edges[0]``, ...; () off). A key's first cold job (0 pending) stands for its
    # whole burst, so the class-0 stratum is calibrated per new key, and a burst of thousands
    # feeds the big-burst class instead of the calibration the next new key is told
    cold_burst_edges: tuple[int, ...] = ()

    @property
    def only_long(self) -> bool:
        """Whether a key's statistics need only the long median (the plain back-off)."""
        return self.mode == "backoff" and not self.hedge_eta

    def __post_init__(self) -> None:
        object.__setattr__(self, "levels", tuple(tuple(level) for level in self.levels))
        if self.eta <= 0 or self.log_weight_floor <= 0 or self.max_loss <= 0:
            raise ValueError("eta, log_weight_floor and max_loss must be > 0")
        if self.mode not in ("hedge", "backoff"):
            raise ValueError(f"mode must be 'hedge' or 'backoff', not {self.mode!r}")
        if self.change_factor <= 1 or self.change_run < 0:
            raise ValueError("change_factor > 1 and change_run >= 0")
        if self.change_scope not in ("all", "key"):
            raise ValueError(f"change_scope must be 'all' or 'key', not {self.change_scope!r}")
        object.__setattr__(self, "pending_floor", tuple(self.pending_floor))
        object.__setattr__(self, "cold_burst_edges", tuple(int(edge) for edge in self.cold_burst_edges))
        edges = self.cold_burst_edges
        if any(edge < 1 for edge in edges) or list(edges) != sorted(set(edges)):
            raise ValueError("cold_burst_edges must be increasing counts >= 1")
        if self.prior_n < 0 or not 0 <= self.aci_gamma < 1 or not 0 <= self.aci_gamma_cold < 1:
            raise ValueError("prior_n >= 0, 0 <= aci_gamma < 1 and 0 <= aci_gamma_cold < 1")
        if not 0 <= self.aci_cold_adapt_max < 1 or self.aci_cold_adapt_halflife <= 0:
            raise ValueError("0 <= aci_cold_adapt_max < 1 and aci_cold_adapt_halflife > 0")
        if self.recalibrate_halflife < 0 or (self.recalibrate_halflife and self.aci_gamma):
            raise ValueError("recalibrate_halflife >= 0, and not together with aci_gamma")
        if self.aci_space not in ACI_SPACES:
            raise ValueError(f"aci_space must be one of {ACI_SPACES}, not {self.aci_space!r}")
        if self.point not in ("median", "calibrated", "calibrated-cold"):
            raise ValueError("point must be 'median', 'calibrated' or 'calibrated-cold'")
        if self.residuals_from not in ("coarsest", "finest", "stratum"):
            raise ValueError("residuals_from must be 'coarsest', 'finest' or 'stratum'")
        if self.hedge_eta < 0 or not 0 <= self.hedge_share < 1 or (self.hedge_eta and self.mode != "backoff"):
            raise ValueError("hedge_eta >= 0 (with mode 'backoff' only) and 0 <= hedge_share < 1")
        if (self.hedge_loss not in ("abs", "sq", "miss") or self.hedge_combine not in ("mean", "leader", "median")
                or self.hedge_groups not in ("slot", "slot-count")):
            raise ValueError("hedge_loss 'abs'|'sq'|'miss', hedge_combine 'mean'|'leader'|'median', "
                             "hedge_groups 'slot'|'slot-count'")
        if self.hedge_cap < 0 or not 0 <= self.hedge_prior < 1:
            raise ValueError("hedge_cap >= 0 and 0 <= hedge_prior < 1")
        if self.hedge_batch_s < 0 and self.hedge_batch_s != -1:
            raise ValueError("hedge_batch_s >= 0 (seconds), or -1 for no batching")
        if (self.hedge_top not in ("none", "learners", "learners-median20")
                or self.hedge_top_combine not in ("leader", "mean", "draw")):
            raise ValueError("hedge_top 'none'|'learners'|'learners-median20', hedge_top_combine 'leader'|'mean'|'draw'")
        if (self.hedge_top_loss not in ("charged", "win", "over", "window", "clip") or self.hedge_top_tau < 0
                or self.hedge_top_eta < 0 or not (self.hedge_top_share == -1 or 0 <= self.hedge_top_share < 1)):
            raise ValueError("hedge_top_loss 'charged'|'win'|'over'|'window'|'clip', hedge_top_tau >= 0, "
                             "hedge_top_eta >= 0 (0: hedge_eta), 0 <= hedge_top_share < 1 (-1: hedge_share)")
        if self.hedge_top_loss == "clip" and not self.hedge_top_tau:
            raise ValueError("hedge_top_loss 'clip' needs hedge_top_tau > 0 (log10: where the loss stops growing)")
        memory = self.hedge_top_memory_s >= 0
        if ((self.hedge_top_memory_s < 0 and self.hedge_top_memory_s != -1) or self.hedge_top_min_n < 0
                or (memory and self.hedge_top_combine != "leader") or (self.hedge_top_min_n and not memory)
                or self.hedge_top_tau_scope not in ("group", "cluster")):
            raise ValueError("hedge_top_memory_s >= 0 (seconds; 0: every wait) or -1 (off), with the 'leader' "
                             "only; hedge_top_min_n >= 0 with a memory only; hedge_top_tau_scope 'group'|'cluster'")
        if self.hedge_top_window < 1 or self.hedge_top_groups not in ("cluster", "account", "disagreement",
                                                                   "floor", "floor+cluster"):
            raise ValueError("hedge_top_window >= 1 (waits) and hedge_top_groups 'cluster'|'account'|'disagreement'"
                             "|'floor'|'floor+cluster'")
        if self.hedge_meta_combine not in ("draw", "leader") or self.hedge_meta_loss not in ("win", "window"):
            raise ValueError("hedge_meta_combine 'draw'|'leader', hedge_meta_loss 'win'|'window'")
        if self.hedge_top_margin < 0 or (self.hedge_top_margin and not memory and (
                self.hedge_top_loss, self.hedge_top_combine) != ("window", "leader")):
            raise ValueError("hedge_top_margin >= 0, with hedge_top_loss 'window' and the 'leader', or with "
                             "hedge_top_memory_s, only")
        if self.long_memory < 100 or self.residual_window < 1 or self.min_residuals < 1:
            raise ValueError("long_memory >= 100, residual_window >= 1, min_residuals >= 1")



def config_state(config: ExpertsConfig) -> dict[str, Any]:
    state = asdict(config)
    state["levels"] = [list(level) for level in config.levels]
    return state


def config_from_state(state: dict[str, Any]) -> ExpertsConfig:
    return ExpertsConfig(**{**state, "levels": tuple(tuple(level) for level in state["levels"])})
