"""Layer 6, the daemon: the loop (loop.py), its edge to Slurm and the store (runner.py), the wiring
of settings to store, backend and runner (wiring.py), what wakes it, and the lease that keeps one per store."""
