"""Submission strategies. ``big-job`` is handled by the engine at workflow level."""

from asad.strategies.asa import Asa
from asad.strategies.chain import Chain
from asad.strategies.per_stage import PerStage

STRATEGIES = {"per-stage": PerStage(), "chain": Chain(), "asa": Asa()}
NAMES = ("per-stage", "big-job", "chain", "asa")
