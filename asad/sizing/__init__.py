"""Sizing: each stage's memory, CPUs and time limit learned from its earlier runs (issue 6).

Agents behind one interface (:mod:`asad.sizing.base`), made by name
(:func:`asad.sizing.registry.make_agent`); the out-of-memory / time-out retry rule
(:mod:`asad.sizing.retry`); placement across partitions (:mod:`asad.sizing.placement`).
See docs/sizing.md.
"""

from asad.sizing.base import Caps, Decision, Outcome, Request, SizingAgent, SizingError

__all__ = ["Caps", "Decision", "Outcome", "Request", "SizingAgent", "SizingError"]
