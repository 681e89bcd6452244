"""scripts/hedge_contexts.py: what a key knows when a job is told (its known waits, the time
since the last, its own jobs still pending), the buckets, and the choice carried ahead."""

from __future__ import annotations

import numpy as np

from asad.bench.predictors import Jobs
from asad.learn.hedge_context import disagreement_bucket

from tests.script_module import load_script


def _load():  # noqa: ANN202
    return load_script("hedge_contexts")


def test_a_wait_is_known_once_its_job_started():
    mod = _load()
    # key a: jobs eligible at 0, 10, 20, 100; they start at 50, 15, 200, 300. key b: one job
    eligible = np.array([0.0, 10.0, 20.0, 30.0, 100.0])
    start = np.array([50.0, 15.0, 200.0, 31.0, 300.0])
    jobs = Jobs(cluster=np.array(["g"] * 5), key=["a", "a", "a", "b", "a"], eligible_s=eligible, start_s=start,
                wait_s=start - eligible)
    count, since, depth = mod.key_context(jobs)
    assert count.tolist() == [0, 0, 1, 0, 2]  # at 20 the job started at 15 is known; at 100 also the one at 50
    assert since[2] == 5.0 and since[4] == 50.0 and np.isinf(since[0]) and np.isinf(since[3])
    assert depth.tolist() == [0, 1, 1, 0, 1]  # at 100 only the job starting at 200 is still pending


def test_the_buckets_match_the_learners_context():
    mod = _load()
    assert mod.bucket(np.array([0.0, 0.01, 0.5, 7.0]), (0.01, 1.0), ("lo", "mid", "hi")).tolist() == [
        "lo", "mid", "mid", "hi"]
    # the script's "disagree x sign" is the learner's hedge_top_groups: disagreement context
    from hedge_hindsight import Told
    rng = np.random.default_rng(1)
    pairs = rng.uniform(0, 5, (200, 2))
    pairs[:50, 1] = pairs[:50, 0] + rng.uniform(-0.006, 0.006, 50)  # near level
    told = [Told(float(b), float(p), (float(b),) * 5, "g#0", ("g#0:3", "s", "acct"), 0, -1.0) for b, p in pairs]
    n = len(told)
    ctx = mod.contexts(told, np.ones(n, dtype=int), np.zeros(n), np.zeros(n, dtype=int))
    assert [s.replace("|", ":") for s in ctx["disagree x sign"]] == [disagreement_bucket(b, p) for b, p in pairs]


def test_a_choice_carried_ahead_takes_the_back_off_where_the_fit_saw_nothing():
    mod = _load()
    fit = (np.array([[0.1, 0.9], [0.9, 0.1], [0.9, 0.1]]), np.array(["x", "y", "y"]))
    later = (np.array([[0.2, 0.8], [0.8, 0.3], [0.4, 0.0]]), np.array(["x", "y", "z"]))
    median, share = mod.carried_margin(fit, later)
    assert share == 1 / 3 and median == 0.3  # x: back-off 0.2, y: panel 0.3, z unseen: back-off 0.4
