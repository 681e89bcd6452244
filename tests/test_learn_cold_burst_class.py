"""Issue 38, seventeenth session: a cold answer's stratum per class of burst size as known when
the job is told (``cold_burst_edges``; the key's pending jobs then), so a key's first cold job
is calibrated per new key and a burst of thousands feeds a class of its own."""

from __future__ import annotations

import numpy as np
import pytest

from asad.bench import predictors as bench
from asad.learn.calibration import is_cold_stratum
from asad.learn.experts import ExpertsPool
from asad.learn.registry import make_pool

from tests.test_learn_cold_calibration import COARSEST, KEY, warm_then_cold


def test_a_cold_answer_s_stratum_names_its_burst_size_class_and_a_warm_one_does_not():
    pool = make_pool("median-backoff", aci_gamma=0.001, min_residuals=1, cold_burst_edges=[1, 10])
    t = warm_then_cold(pool)
    cold_key = KEY.format(a=900, n=9)
    strata = [pool.told(cold_key, t, None, key_pending=n)[1] for n in (0, 1, 9, 10, 5000)]
    assert all(is_cold_stratum(s) for s in strata)
    assert [s.rsplit(":", 1)[1] for s in strata] == ["b0", "b1", "b1", "b2", "b2"]
    assert len({s.rsplit(":", 1)[0] for s in strata}) == 1  # the same answering level
    assert pool.told(cold_key, t, None)[1] == strata[0].rsplit(":", 1)[0]  # not told a count: no class
    warm = pool.told(KEY.format(a=0, n=1), t, None, key_pending=0)[1]
    assert not is_cold_stratum(warm) and ":b" not in warm


def test_each_class_learns_only_its_own_residuals():
    pool = make_pool("median-backoff", aci_gamma=0.001, min_residuals=1, cold_burst_edges=[1])
    t = warm_then_cold(pool)
    key = KEY.format(a=901, n=11)
    told = [pool.told(key, t + i, None, key_pending=i) for i in range(20)]  # one burst of 20
    first, rest = told[0][1], told[1][1]
    assert first != rest and {a[1] for a in told[1:]} == {rest}
    for i, answer in enumerate(told):  # the first job started at once, the others waited long
        pool.observe(key, 0.0 if i == 0 else 50_000.0, at_s=t + (i and 50_000.0) + i, told=answer)
    windows = pool.stats[COARSEST].strata
    assert len(windows[first]) == 1 and len(windows[rest]) == 19
    # the next new key answered at the same level (a new account and a node count never seen)
    # is told from the class that learned "starts at once" for its first job, the other for the rest
    next_key = KEY.format(a=902, n=13)
    assert pool.told(next_key, t, None, key_pending=0)[1] == first
    q_first = pool.view(next_key).quantiles((0.5,), key_pending=0)[0]
    q_rest = pool.view(next_key).quantiles((0.5,), key_pending=3)[0]
    assert q_first < 1.0 < 10_000.0 < q_rest


def test_the_classes_survive_a_restart():
    pool = make_pool("median-backoff", aci_gamma=0.001, min_residuals=1, cold_burst_edges=[1, 10])
    t = warm_then_cold(pool)
    key = KEY.format(a=903, n=13)
    answer = pool.told(key, t, None, key_pending=4)
    pool.observe(key, 700.0, at_s=t + 700.0, told=answer)
    back = ExpertsPool.from_state(pool.to_state())
    assert back.config.cold_burst_edges == (1, 10)
    assert len(back.stats[COARSEST].strata[answer[1]]) == 1
    assert back.told(KEY.format(a=904, n=15), t, None, key_pending=4)[1] == answer[1]


@pytest.mark.parametrize("edges", [[0], [10, 1], [5, 5]])
def test_bad_edges_are_refused(edges):
    with pytest.raises(ValueError, match="cold_burst_edges"):
        make_pool("median-backoff", cold_burst_edges=edges)


def test_the_replay_tells_each_job_how_many_of_its_key_are_pending(monkeypatch):
    # key a: three jobs eligible at 0, 1, 2 (the first starts at 5); then a fourth at 10
    jobs = bench.Jobs(cluster=np.array(["g"] * 5), key=["a", "a", "a", "b", "a"],
                      eligible_s=np.array([0.0, 1.0, 2.0, 3.0, 10.0]), start_s=np.array([5.0, 20.0, 30.0, 4.0, 11.0]),
                      wait_s=np.array([5.0, 19.0, 28.0, 1.0, 1.0]))
    seen: list[tuple[str, int | None]] = []

    class Spy(ExpertsPool):
        def told(self, key, now_s=None, pending_since_s=None, shifts=True, key_pending=None):
            if shifts:
                seen.append((key, key_pending))
            return super().told(key, now_s, pending_since_s, shifts, key_pending)

    original = bench.make_pool
    monkeypatch.setattr(bench, "make_pool",
                        lambda kind, seed=0, **params: Spy(original(kind, seed=seed, **params).config))
    bench.replay(jobs, [("b", "median-backoff", {})])
    # at 10 the first job of a had started (at 5); the two others still pend
    assert seen == [("a", 0), ("a", 1), ("a", 2), ("b", 0), ("a", 2)]
