"""Zunker's gradient bandits and Q-learning agent, and Tovar's first allocation, by hand."""

import numpy as np
import pytest

from asad.sizing.bandit import BanditAgent, GradientBandit, softmax
from asad.sizing.base import Outcome, Request
from asad.sizing.qlearn import ACTIONS, QLearningAgent, epsilon_for, reward_eq42
from asad.sizing.tovar import TovarAgent, first_allocation

DEFAULT = Request(cpus=4, mem_mb=1000, time_s=3600)


def run(agent, peak, busy_cores=1.0, elapsed=100.0, x=None):
    """One task: the agent proposes; the attempt completes or is killed (no retry here)."""
    req = agent.propose(DEFAULT, x).request
    state = "COMPLETED" if req.mem_mb >= peak else "OUT_OF_MEMORY"
    agent.observe(Outcome(req, peak if state == "COMPLETED" else float(req.mem_mb), busy_cores * elapsed,
                          elapsed, x, state))
    return req, state


def test_gradient_bandit_update_by_hand():
    b = GradientBandit(2)
    b.update(0, reward=-1.0, step=0.5)  # first reward is its own baseline: no change
    assert b.h == pytest.approx([0.0, 0.0])
    b.update(1, reward=1.0, step=0.5)  # baseline -1: delta = 0.5 × 2 = 1, π = (0.5, 0.5)
    assert b.h == pytest.approx([-0.5, 0.5])
    assert b.probs() == pytest.approx(softmax(np.array([-0.5, 0.5])))


def test_memory_bandit_moves_toward_the_smallest_sufficient_chunk():
    agent = BanditAgent(seed=3)
    for _ in range(300):
        run(agent, peak=250.0)  # chunks of 100 MB: 300 MB is the best sufficient action
    probs = agent.mem_bandit.probs()
    assert agent.chunk_mb == 100 and len(probs) == 15
    favourite = int(np.argmax(probs)) + 1  # in chunks
    assert probs.max() > 0.5
    assert 3 <= favourite <= 5  # sufficient, and well below the user's 10 chunks
    assert probs[:2].sum() < 0.05  # sizes that get killed are disfavoured


def test_cpu_bandit_prefers_the_cores_the_task_uses():
    agent = BanditAgent(seed=1)
    for _ in range(300):
        req = agent.propose(DEFAULT).request
        busy = min(2.0, req.cpus)  # uses 2 cores; fewer CPUs stretch its run time
        elapsed = 100.0 * 2.0 / busy
        agent.observe(Outcome(req, 50.0, busy * elapsed, elapsed, None, "COMPLETED"))
    assert agent.cpu_actions[int(np.argmax(agent.cpu_bandit.probs()))] == 2


def test_q_learning_reward_epsilon_and_update():
    # 4 CPUs with 1 busy, on time, 4 chunks 50% used: -3 × 1 × (4 × 0.25)
    assert reward_eq42(4, 1.0, 100, 100, 4, 0.5) == pytest.approx(-3.0)
    assert reward_eq42(4, 3.95, 100, 100, 4, 0.9) == pytest.approx(-0.1 * 4 * 0.1)
    assert (epsilon_for(0), epsilon_for(50), epsilon_for(100)) == (0.5, 0.25, 0.1)
    agent = QLearningAgent(seed=0)
    req, _ = run(agent, peak=500.0)  # default run = "keep" in the start state (4 CPUs, 4 × 250 MB)
    assert req == Request(4, 1000, 3600)
    # Q((4,4), keep) = 0 + 0.1 × (r + 1.0 × max Q((4,4), ·) - 0) with r = -3 × 1 × (4 × 0.25)
    assert agent.q["4,4"][ACTIONS.index("keep")] == pytest.approx(0.1 * -3.0)
    req, _ = run(agent, peak=500.0)  # the next untried action in (4, 4): "+cpu"
    assert (req.cpus, req.mem_mb) == (5, 1000)
    req, _ = run(agent, peak=500.0)  # in the new state (5, 4) "keep" is untried
    assert (req.cpus, req.mem_mb) == (5, 1000)


def test_q_learning_punishes_a_kill():
    agent = QLearningAgent(seed=0)
    run(agent, peak=100.0)
    for _ in range(4):
        run(agent, peak=100.0)
    before = dict(agent.q)
    req = agent.propose(DEFAULT).request
    agent.observe(Outcome(req, float(req.mem_mb), None, 10.0, None, "OUT_OF_MEMORY"))
    assert agent.q != before or any(v < 0 for row in agent.q.values() for v in row)


def test_tovar_first_allocation_by_hand():
    # 3 tasks at 100 MB (10 s each), 1 at 1000 MB (10 s); buckets of 100 MB
    values = np.array([100.0, 100.0, 100.0, 1000.0])
    times = np.full(4, 10.0)
    # min waste: a=100: 100×10 + 1000×(10/4) = 3500; a=1000: 1000×10 = 10000
    assert first_allocation(values, times, 100.0, "min-waste") == 100.0
    # max throughput: a=100: (10×0.75 + 0.25)/(10 + 2.5) = 0.62; a=1000: 1/10
    assert first_allocation(values, times, 100.0, "max-throughput") == 100.0
    # when the big ones dominate, allocate for them: a=100 costs 100×10 + 1000×(200/21) > 1000×10
    many_big = np.array([100.0] + [1000.0] * 20)
    assert first_allocation(many_big, np.full(21, 10.0), 100.0, "min-waste") == 1000.0


def test_tovar_agent_waits_for_warmup_then_sizes_both_resources():
    agent = TovarAgent(mode="min-waste", warmup=3)
    for _ in range(2):
        req, _ = run(agent, peak=180.0, busy_cores=1.5)
        assert req == Request(4, 1000, 3600)
    run(agent, peak=180.0, busy_cores=1.5)
    d = agent.propose(DEFAULT)
    assert d.request.mem_mb == 250 and d.request.cpus == 2  # 250 MB bucket; 1.5 cores → 2
