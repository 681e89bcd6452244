"""Clocks that drive the simulator from outside its own event loop."""
