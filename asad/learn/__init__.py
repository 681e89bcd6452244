"""Learning queue waits (ASA and baselines), run times and geometry keys."""

from asad.learn.base import WaitPredictor
from asad.learn.geometry import GeometryKeyConfig, geometry_key, request_key
from asad.learn.registry import make_predictor, predictor_from_state, predictor_kinds, recommended_predictor
from asad.learn.runtime import RuntimeEstimateConfig, RuntimeEstimator

__all__ = [
    "GeometryKeyConfig",
    "RuntimeEstimateConfig",
    "RuntimeEstimator",
    "WaitPredictor",
    "geometry_key",
    "make_predictor",
    "predictor_from_state",
    "predictor_kinds",
    "recommended_predictor",
    "request_key",
]
