"""Submission strategies. ``big-job`` is handled by the engine at workflow level; ``auto`` (the
default) picks chain or a quantile submission from the site's priority rules."""

from asad.strategies.asa import Asa
from asad.strategies.auto import Auto
from asad.strategies.chain import Chain
from asad.strategies.per_stage import PerStage

STRATEGIES = {"per-stage": PerStage(), "chain": Chain(), "asa": Asa(), "auto": Auto()}
NAMES = ("auto", "per-stage", "big-job", "chain", "asa")
