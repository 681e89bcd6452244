"""Agents by name: ``make_agent(name, **params)``, ``agent_from_state(state)``, ``DEFAULT_AGENT``."""

from __future__ import annotations

from typing import Any, Callable

from asad.sizing.agent import AgentBase

# The best-measured agent on the nf-core traces (docs/results/sizing.md).
DEFAULT_AGENT = "sizey-like"


def _factories() -> dict[str, Callable[..., AgentBase]]:
    from asad.sizing.bandit import BanditAgent
    from asad.sizing.best import BestAgent
    from asad.sizing.feedback import PercentileAgent, RegressionAgent
    from asad.sizing.qlearn import QLearningAgent
    from asad.sizing.tovar import TovarAgent

    return {
        "pc50": lambda **kw: PercentileAgent(percentile=50.0, **kw),
        "pc95": lambda **kw: PercentileAgent(percentile=95.0, **kw),
        "lr-mean±": lambda **kw: RegressionAgent(offset="mean±", **kw),
        "lr-mean-": lambda **kw: RegressionAgent(offset="mean-", **kw),
        "lr-max-": lambda **kw: RegressionAgent(offset="max-", **kw),
        "bandit": lambda **kw: BanditAgent(**kw),
        "qlearn": lambda **kw: QLearningAgent(**kw),
        "tovar-min-waste": lambda **kw: TovarAgent(mode="min-waste", **kw),
        "tovar-max-throughput": lambda **kw: TovarAgent(mode="max-throughput", **kw),
        "sizey-like": lambda **kw: BestAgent(**kw),
    }


# ASCII aliases for shells and YAML.
ALIASES = {"lr-mean+-": "lr-mean±", "lr-meanpm": "lr-mean±", "lr-mean": "lr-mean-", "lr-max": "lr-max-",
           "best": DEFAULT_AGENT, "default": DEFAULT_AGENT, "tovar": "tovar-min-waste"}

BENCH_AGENTS = ("pc50", "pc95", "lr-mean±", "lr-mean-", "lr-max-", "bandit", "qlearn",
                "tovar-min-waste", "tovar-max-throughput", "sizey-like")

_KINDS: dict[str, type] = {}


def agent_names() -> list[str]:
    return list(_factories())


def make_agent(name: str = DEFAULT_AGENT, **params: Any) -> AgentBase:
    """A fresh agent; ``params`` go to its constructor (``caps=Caps(...)``, ``seed=...``, ...)."""
    key = ALIASES.get(name, name)
    factories = _factories()
    if key not in factories:
        raise ValueError(f"unknown sizing agent {name!r}; known: {', '.join(factories)}")
    return factories[key](**params)


def _kind_classes() -> dict[str, type]:
    if not _KINDS:
        from asad.sizing.bandit import BanditAgent
        from asad.sizing.best import BestAgent
        from asad.sizing.feedback import PercentileAgent, RegressionAgent
        from asad.sizing.qlearn import QLearningAgent
        from asad.sizing.tovar import TovarAgent

        for cls in (PercentileAgent, RegressionAgent, BanditAgent, QLearningAgent, TovarAgent, BestAgent):
            _KINDS[cls.kind] = cls
    return _KINDS


def agent_from_state(state: dict) -> AgentBase:
    """Rebuild an agent saved with ``to_state()`` (same class, parameters, history and RNG)."""
    kind = state.get("kind")
    classes = _kind_classes()
    if kind not in classes:
        raise ValueError(f"unknown sizing agent kind {kind!r} in saved state")
    return classes[kind].from_state(state)
