"""Make a wait predictor by name, and restore one from its persisted state.

Names (``make_predictor(kind, seed, **params)``; params override the preset):

    asa             Algorithm 1, paper's default policy, 0/1 loss, paper grid
    asa-tuned       ... tuned policy, R = 50 repetitions per observed wait
    asa-greedy      ... greedy policy
    asa-cost        tuned, with the cost-aware loss (asad.learn.losses)
    asa-full        full-information updates, log loss, log grid, plans with the median of p
    asa-full-cost   full-information updates with the cost-aware loss (paper grid)
    asa-full-fast   asa-full-cost plus a weight floor, so it follows step changes quickly
    asa-slurm       tuned, with Slurm's estimate as one more expert
    asa-mix         asa-full and asa-full-fast, planning with whichever has lost less lately
    experts         exponential weights over running medians / the last wait of the key and of
                    coarser keys, calibrated quantiles (asad.learn.experts)
    hedge           exponential weights (Hedge, fixed share) over median-backoff's panel: its own
                    answer, the answering level's last wait and running medians, the coarser
                    level's median; weights per cluster and answering level (asad.learn.hedge);
                    {"hedge_top": "learners"} adds a top level weighing the back-off's answer
                    against that mixture per cluster (its own loss, rate, share and a seeded
                    draw: hedge_top_loss/_tau/_eta/_share, hedge_top_combine "draw"; sixth
                    round: hedge_top_loss "window", hedge_top_window, hedge_top_groups,
                    hedge_top "learners-median20", hedge_top_told; seventh: hedge_top_margin,
                    hedge_top_strata, aci_gamma_cold, cold_pool; eighth: aci_cold_adapt_max,
                    aci_cold_adapt_halflife; eleventh: hedge_top_memory_s, hedge_top_min_n,
                    hedge_top_loss "clip", hedge_top_tau_scope; twelfth and thirteenth:
                    hedge_top_groups "disagreement", "floor"; fourteenth: "floor+cluster",
                    hedge_meta_combine, hedge_meta_loss; sixteenth: cold_once_per_key;
                    seventeenth: cold_burst_edges);
                    {"hedge_slurm": true} adds
                    Slurm's own estimate (sbatch --test-only) as an expert where the daemon
                    probed the geometry (setting slurm_expert)
    median-backoff  the same pool without weights: the median of the finest key that has seen a
                    wait, since its last detected change, the account's own coarser keys first;
                    quantiles from the residuals of answers by the same level (BACKOFF_DEFAULTS)
    last, median-k, median-all, qbets, slurm-estimate   the baselines (asad.learn.baselines)

``experts`` is *pooled*: one :class:`ExpertsPool` serves every key (coarse keys are shared),
``make_pool(kind)`` makes it and ``pool.view(key)`` is the per-key predictor;
``make_predictor("experts")`` is a pool with a single key.

ASA params: grid ("paper" | "log" | list), policy, repetitions, gamma, gamma_schedule,
loss ("zero_one" | "cost" | "log"), early_cost, late_cost, loss_floor_s, log_decades,
full_information, point ("sample" | "median" | "mode"), slurm_expert, log_weight_floor, discount.
"""

from __future__ import annotations

from typing import Any

from asad.learn.asa import AsaConfig, AsaPredictor
from asad.learn.base import WaitPredictor
from asad.learn.baselines import (
    LastWaitPredictor,
    MedianAllPredictor,
    MovingMedianPredictor,
    QbetsPredictor,
    SlurmEstimatePredictor,
)
from asad.learn.experts import ExpertsPool, ExpertsPredictor
from asad.learn.experts_config import ExpertsConfig
from asad.learn.hedge import HedgePool
from asad.learn.key_levels import BACKOFF_LEVELS, PENDING_FLOOR
from asad.learn.losses import LossConfig
from asad.learn.mix import AsaMixPredictor, MixConfig

# gamma: the paper leaves gamma_t open (non-increasing, constant allowed). For the paper's
# bandit policies a constant 16 is the smallest power of two with which `tuned` settles
# within 5 iterations after every change of `asad bench convergence` on 10 of 10 seeds
# (gamma 1: worst 9-26 iterations per seed); see docs/results/learn.md.
BANDIT_GAMMA = 16.0
ASA_PRESETS: dict[str, dict[str, Any]] = {
    "asa": {"policy": "default", "gamma": BANDIT_GAMMA},
    "asa-tuned": {"policy": "tuned", "repetitions": 50, "gamma": BANDIT_GAMMA},
    "asa-greedy": {"policy": "greedy", "gamma": BANDIT_GAMMA},
    "asa-cost": {"policy": "tuned", "repetitions": 50, "loss": "cost", "gamma": BANDIT_GAMMA},
    # full information + log loss on the log grid + median of p, infinite memory: the
    # recommended default (closest ASA variant to the best baseline on the real jobs)
    "asa-full": {"full_information": True, "loss": "log", "grid": "log", "point": "median", "gamma": 8.0},
    # ... with the cost-aware loss on the paper grid
    "asa-full-cost": {"full_information": True, "loss": "cost", "point": "median", "gamma": 4.0},
    # ... plus a weight floor, so it follows step changes within ~4-10 waits (worse on real queues)
    "asa-full-fast": {"full_information": True, "loss": "cost", "point": "median", "gamma": 2.0,
                      "log_weight_floor": 6.0},
    "asa-slurm": {"policy": "tuned", "repetitions": 50, "slurm_expert": True, "gamma": BANDIT_GAMMA},
}

BASELINES: dict[str, type] = {
    "last": LastWaitPredictor,
    "median-k": MovingMedianPredictor,
    "median-all": MedianAllPredictor,
    "qbets": QbetsPredictor,
    "slurm-estimate": SlurmEstimatePredictor,
}

_STATE_CLASSES: dict[str, type] = {
    "asa": AsaPredictor,
    "asa-mix": AsaMixPredictor,
    "last": LastWaitPredictor,
    "median-k": MovingMedianPredictor,
    "median-all": MedianAllPredictor,
    "qbets": QbetsPredictor,
    "slurm-estimate": SlurmEstimatePredictor,
    "experts-pool": ExpertsPredictor,  # a standalone pool (make_predictor("experts")); the engine
}                                       # stores an experts pool key by key (asad.core.learned)

# Kinds whose keys share one pool (make_pool); the rest are one independent predictor per key.
POOLED: tuple[str, ...] = ("experts", "median-backoff", "hedge")

# median-backoff: keys fine to coarse with the account first; quantiles from the residuals of
# the answers given by the same level (the key itself, or which coarser key) on the cluster.
# Chosen on the weeks before 2021-06-10 (docs/results/learn.md).
BACKOFF_DEFAULTS: dict[str, Any] = {"mode": "backoff", "change_run": 5, "change_scope": "key",
                                    "levels": BACKOFF_LEVELS, "pending_floor": PENDING_FLOOR,
                                    "residuals_from": "stratum", "strata": "level", "min_residuals": 100,
                                    "aci_gamma": 0.0004, "aci_space": "open"}

# hedge: median-backoff's pool, levels, floor and calibration, answering with the Hedge mixture
# of its panel. Frozen in issue 38's third round (docs/results/learn.md) by the rule in
# scripts/tune_hedge.py, on two tuning windows before 2021-06-10 only (04-29 .. 05-20 and
# 05-20 .. 06-10, both clusters): of 7 variants, the largest worst-cell margin of median error
# over median-backoff (+0.003). The absolute loss capped at 0.2 decades (x1.6, near the score:
# an answer off by more counts as a miss whatever the size), eta 2, and batched feedback: the
# waits of a weight group that start in the same second are one round of mean losses (88-92 %
# of the jobs share a start second; a batch is one piece of news about the queue, not n).
# On the rolling windows it still trails median-backoff on Graham (0 of 3, by 0.010-0.017)
# while it beats it on Cedar (4 of 4), so median-backoff stays the default.
HEDGE_DEFAULTS: dict[str, Any] = {"hedge_eta": 2.0, "hedge_share": 0.001, "hedge_prior": 0.5, "hedge_cap": 0.2,
                                  "hedge_batch_s": 0.0}

# What recommended_predictor() returns; chosen by the measurements in docs/results/learn.md.
RECOMMENDED: tuple[str, dict[str, Any]] = ("median-backoff", {})


def predictor_kinds() -> list[str]:
    return [*ASA_PRESETS, "asa-mix", *POOLED, *BASELINES]


def is_pooled(kind: str) -> bool:
    return kind in POOLED


def make_pool(kind: str, seed: int = 0, **params: Any) -> ExpertsPool:
    """The shared learner of a pooled kind (see :data:`POOLED`); ``.view(key)`` per key."""
    if kind == "experts":
        return ExpertsPool(ExpertsConfig(**params), seed=seed, kind=kind)
    if kind == "median-backoff":
        return ExpertsPool(ExpertsConfig(**{**BACKOFF_DEFAULTS, **params}), seed=seed, kind=kind)
    if kind == "hedge":
        return HedgePool(ExpertsConfig(**{**BACKOFF_DEFAULTS, **HEDGE_DEFAULTS, **params}), seed=seed, kind=kind)
    raise ValueError(f"{kind!r} is not a pooled predictor; pooled: {list(POOLED)}")


def asa_config(preset: dict[str, Any], params: dict[str, Any]) -> AsaConfig:
    merged = {**preset, **params}
    loss = LossConfig(
        kind=merged.pop("loss", "zero_one"),
        early_cost=float(merged.pop("early_cost", 1.0)),
        late_cost=float(merged.pop("late_cost", 1.0)),
        floor_s=float(merged.pop("loss_floor_s", 60.0)),
        log_decades=float(merged.pop("log_decades", 3.0)),
    )
    return AsaConfig(loss=loss, **merged)


def make_predictor(kind: str, seed: int = 0, **params: Any) -> WaitPredictor:
    """A fresh predictor of the named kind (see the module docstring for names and params)."""
    if kind in ASA_PRESETS:
        return AsaPredictor(asa_config(ASA_PRESETS[kind], params), seed=seed, kind=kind)
    if kind == "asa-mix":
        if "members" in params:
            params = {**params, "members": tuple(params["members"])}
        config = MixConfig(**params)
        members = [make_predictor(name, seed=seed + i) for i, name in enumerate(config.members)]
        return AsaMixPredictor(config, members, seed=seed, kind=kind)
    if kind in POOLED:
        return make_pool(kind, seed, **params).view("")
    if kind in BASELINES:
        return BASELINES[kind](seed=seed, **params)
    raise ValueError(f"unknown predictor {kind!r}; one of {predictor_kinds()}")


def predictor_from_state(state: dict[str, Any]) -> WaitPredictor:
    """Restore a predictor saved with ``to_state()`` (dispatches on ``state["kind"]``)."""
    kind = state["kind"]
    if state.get("class") == "experts":  # one key of a pool, as the engine stores it: that key alone
        pool = make_pool(kind, seed=int(state.get("seed", 0)), **state.get("config", {}))
        pool.load_key_state("", state)
        return pool.view("")
    if state.get("class") == "experts-pool" and kind == "hedge":
        return HedgePool.from_state(state).view(state.get("view_key", ""))
    cls_name = state.get("class") or ("asa" if kind in ASA_PRESETS else kind)
    if cls_name not in _STATE_CLASSES:
        raise ValueError(f"unknown predictor state kind {kind!r}")
    return _STATE_CLASSES[cls_name].from_state(state)


def recommended_predictor() -> tuple[str, dict[str, Any]]:
    """The predictor kind and params the engine should use by default (measured; see docs/asa.md)."""
    kind, params = RECOMMENDED
    return kind, dict(params)
