"""Every agent survives to_state → JSON → agent_from_state and then decides exactly as the original."""

import json

import numpy as np
import pytest

from asad.sizing.base import Caps, Outcome, Request, SizingAgent
from asad.sizing.registry import DEFAULT_AGENT, agent_from_state, agent_names, make_agent

DEFAULT = Request(cpus=4, mem_mb=4000, time_s=7200)


def feed(agent, rng, n):
    """n tasks with input-dependent peaks; kills happen and are observed, then the task completes."""
    out = []
    for _ in range(n):
        x = float(rng.uniform(1e8, 1e9))
        peak = 200.0 + 1.5e-6 * x + float(rng.normal(0, 30))
        d = agent.propose(DEFAULT, x)
        out.append(d)
        req = d.request
        if req.mem_mb < peak:
            agent.observe(Outcome(req, float(req.mem_mb), 5.0, 10.0, x, "OUT_OF_MEMORY"))
            req = Request(req.cpus, int(peak * 1.2), req.time_s)
        agent.observe(Outcome(req, peak, 150.0, 100.0, x, "COMPLETED"))
    return out


@pytest.mark.parametrize("name", agent_names())
def test_round_trip_is_deterministic(name):
    agent = make_agent(name, caps=Caps(32, 64_000, 86400), seed=7)
    assert isinstance(agent, SizingAgent)
    feed(agent, np.random.default_rng(1), 40)
    state = json.loads(json.dumps(agent.to_state()))  # JSON-serialisable, RNG included
    twin = agent_from_state(state)
    assert twin.name == agent.name and type(twin) is type(agent)
    a = feed(agent, np.random.default_rng(2), 40)
    b = feed(twin, np.random.default_rng(2), 40)
    assert [d.request for d in a] == [d.request for d in b]
    assert [d.why for d in a] == [d.why for d in b]


@pytest.mark.parametrize("name", agent_names())
def test_same_seed_same_decisions_and_user_values_first(name):
    first = make_agent(name, seed=3)
    d0 = first.propose(DEFAULT, 5e8)
    assert d0.request.mem_mb == DEFAULT.mem_mb and d0.request.cpus == DEFAULT.cpus
    assert d0.n_observations == 0 and d0.agent == first.name and d0.why.endswith(".")
    a = feed(make_agent(name, seed=3), np.random.default_rng(5), 30)
    b = feed(make_agent(name, seed=3), np.random.default_rng(5), 30)
    assert [d.request for d in a] == [d.request for d in b]


def test_registry_names_and_default():
    assert DEFAULT_AGENT in agent_names()
    assert make_agent("best").name == DEFAULT_AGENT
    assert make_agent("lr-mean+-").name == "lr-mean±"
    with pytest.raises(ValueError, match="unknown sizing agent"):
        make_agent("nope")
