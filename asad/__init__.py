"""asad: the Adaptive Scheduling daemon for Slurm."""

__version__ = "0.1.0"
