"""Layer 0, the ground every other layer stands on: units, settings, logging, array expressions, argument types."""
