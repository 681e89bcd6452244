"""ReASSIGN placement agent: reward eq. 4-6 by hand, learning a better partition, state round-trip."""

import json

import numpy as np
import pytest

from asad.sizing.placement import PlacementAgent


def test_crisp_reward_by_hand():
    agent = PlacementAgent(["a", "b"], variant="reassign", mu=0.5)
    # three jobs in a: te 100, tf 0 → P̄i_a = 50; one in b: te 100, tf 300 → P̄i_b = 200
    agent.times["a"] = [(100.0, 0.0)] * 3
    agent.times["b"] = [(100.0, 300.0)]
    # P̄w = 0.5 × 100 + 0.5 × 75 = 87.5; stdv of (50, 200) = 75 → b: 200 > 162.5 → -1; a: +1
    assert agent._crisp_reward("b") == -1.0
    assert agent._crisp_reward("a") == 1.0


def test_smoothed_reward_and_q_update():
    agent = PlacementAgent(["a", "b"], variant="reassign", alpha=0.5, gamma=0.5, rho=0.5, epsilon=0.0)
    d = agent.choose("j1", {"a": 10.0, "b": 20.0})
    assert d.partition == "a" and d.state == "a"  # ties go to the first action
    agent.observe("j1", wait_s=0.0, run_s=100.0)
    # only a has jobs: r_i = +1; r_t = 0 + 0.5 × (1 - 0) = 0.5; Q = 0 + 0.5 × (0.5 + 0.5 × 0 - 0)
    assert agent.reward == pytest.approx(0.5)
    assert agent.q["a"][0] == pytest.approx(0.25)


@pytest.mark.parametrize("variant", ["reassign", "turnaround"])
def test_learns_the_partition_with_shorter_turnaround(variant):
    agent = PlacementAgent(["fast", "slow"], variant=variant, epsilon=0.2, alpha=0.2, seed=4)
    rng = np.random.default_rng(0)
    for i in range(400):
        d = agent.choose(str(i), {"fast": 0.0, "slow": 0.0})
        run = {"fast": 50.0, "slow": 100.0, "fast,slow": 80.0}[d.partition]
        agent.observe(str(i), wait_s=float(rng.uniform(0, 10)), run_s=run)
    row = agent.q["fast"]
    assert agent.actions[int(np.argmax(row))] == "fast"


def test_turnaround_variant_offers_all_partitions_and_prefers_them_at_first():
    agent = PlacementAgent(["fast", "slow"], variant="turnaround", epsilon=0.0)
    assert agent.actions == ["fast", "slow", "fast,slow"]
    assert agent.choose("x", {"fast": 5.0, "slow": 1.0}).partition == "fast,slow"


def test_state_round_trip():
    agent = PlacementAgent(["a", "b"], variant="turnaround", seed=2)
    for i in range(30):
        agent.choose(str(i), {"a": float(i % 3), "b": 1.0})
        agent.observe(str(i), wait_s=float(i % 7), run_s=10.0)
    agent.choose("open", {"a": 0.0, "b": 1.0})
    twin = PlacementAgent.from_state(json.loads(json.dumps(agent.to_state())))
    picks = [agent.choose(f"n{i}", {"a": 0.0, "b": 1.0}).partition for i in range(20)]
    assert picks == [twin.choose(f"n{i}", {"a": 0.0, "b": 1.0}).partition for i in range(20)]
