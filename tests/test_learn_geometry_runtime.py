"""Geometry keys, run-time estimates, grids and the registry."""

from __future__ import annotations

import pytest

from asad.learn import GeometryKeyConfig, RuntimeEstimateConfig, RuntimeEstimator, geometry_key, request_key
from asad.learn.geometry import walltime_bucket
from asad.learn.grid import PAPER_GRID_S, log_grid, make_grid, nearest_index
from asad.learn.registry import make_predictor, predictor_kinds, recommended_predictor
from asad.slurm.backend import JobRequest


def test_default_key_fields():
    key = geometry_key(cluster="cedar", partition="cpu", qos="normal", nodes=2, cpus=64, time_limit_s=7200)
    assert key == "cluster=cedar|partition=cpu|qos=normal|nodes=2|cpus=64|walltime<=3h"


def test_walltime_buckets():
    assert walltime_bucket(900) == "<=15m"
    assert walltime_bucket(901) == "<=1h"
    assert walltime_bucket(86400) == "<=1d"
    assert walltime_bucket(10 * 86400) == ">3d"
    same = geometry_key(cpus=4, time_limit_s=4000), geometry_key(cpus=4, time_limit_s=10000)
    assert same[0] == same[1]
    assert geometry_key(cpus=4, time_limit_s=3000) != same[0]


def test_configurable_fields_and_buckets():
    config = GeometryKeyConfig(fields=("partition", "cpus"), cpus_power_of_two=True)
    assert geometry_key(partition="p", cpus=5, time_limit_s=60, config=config) == "partition=p|cpus=8"
    assert geometry_key(partition="p", cpus=8, config=config) == geometry_key(partition="p", cpus=7, config=config)
    edges = GeometryKeyConfig(walltime_edges_s=(600,))
    assert geometry_key(cpus=1, time_limit_s=601, config=edges).endswith("walltime>10m")
    with pytest.raises(ValueError):
        GeometryKeyConfig(fields=("colour",))
    with pytest.raises(ValueError):
        GeometryKeyConfig(walltime_edges_s=(3600, 60))


def test_request_key():
    request = JobRequest(name="s", command="true", partition="batch", nodes=1, ntasks=4, cpus_per_task=2,
                         time_limit_s=1800)
    assert request_key(request, cluster="sim") == "cluster=sim|partition=batch|qos=|nodes=1|cpus=8|walltime<=1h"


def test_runtime_falls_back_to_time_limit_then_learns():
    estimator = RuntimeEstimator()
    assert estimator.estimate(time_limit_s=3600) == 3600
    for runtime in [100, 120, 110, 500]:
        estimator.observe(runtime)
    assert 120 < estimator.estimate(time_limit_s=3600) <= 500  # a high quantile
    assert estimator.estimate(time_limit_s=300) == 300  # never above the limit


def test_runtime_max_of_window_and_state():
    estimator = RuntimeEstimator(RuntimeEstimateConfig(quantile=1.0, window=2, min_observations=2))
    estimator.observe(1000)
    assert estimator.estimate(5000) == 5000  # not enough runs yet
    estimator.observe(200)
    estimator.observe(300)  # 1000 left the window
    assert estimator.estimate(5000) == 300
    restored = RuntimeEstimator.from_state(estimator.to_state())
    assert restored.estimate(5000) == 300 and restored.n_observations == 3


def test_paper_grid():
    assert len(PAPER_GRID_S) == 53 and PAPER_GRID_S[0] == 0 and PAPER_GRID_S[-1] == 100_000
    assert sum(1 for s in PAPER_GRID_S if s < 1000) == 28  # denser in tens and hundreds
    assert make_grid("paper") == PAPER_GRID_S
    assert len(log_grid()) == 53 and log_grid()[-1] == 1_000_000
    assert make_grid([0, 5, 10]) == (0.0, 5.0, 10.0)
    with pytest.raises(ValueError):
        make_grid([0, 10, 10])


def test_nearest_index():
    import numpy as np

    grid = np.asarray(PAPER_GRID_S)
    assert nearest_index(grid, 0) == 0
    assert nearest_index(grid, 14) == 1
    assert nearest_index(grid, 15) == 1  # tie goes low
    assert nearest_index(grid, 1e9) == 52


def test_registry():
    for kind in predictor_kinds():
        assert make_predictor(kind).kind == kind
    with pytest.raises(ValueError):
        make_predictor("oracle")
    kind, params = recommended_predictor()
    assert make_predictor(kind, **params).kind == kind
