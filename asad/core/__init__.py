"""Layer 4, what the engine decides with and how: the run model, its context, the learners, the pure engine.

The engine (engine.py) decides; it asks the strategies (asad/strategies, the same layer) what to
submit. Nothing here does I/O but reading the stage wrapper's markers (markers.py)."""
