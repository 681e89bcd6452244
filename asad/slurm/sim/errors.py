"""Slurm's own words for rejected submissions."""

from __future__ import annotations

from asad.slurm.backend import SubmitRejected, UnknownJob

_PREFIX = "sbatch: error: Batch job submission failed: "
INVALID_PARTITION = _PREFIX + "Invalid partition name specified"
NODE_CONFIG_UNAVAILABLE = _PREFIX + "Requested node configuration is not available"
INVALID_TIME_LIMIT = _PREFIX + "Requested time limit is invalid (missing or exceeds some limit)"
INVALID_NODE_COUNT = _PREFIX + "Node count specification invalid"
DEPENDENCY_PROBLEM = _PREFIX + "Job dependency problem"
MEM_EXCLUSIVE = "sbatch: fatal: --mem, --mem-per-cpu, and --mem-per-gpu are mutually exclusive."


class DependencyRejected(SubmitRejected, UnknownJob):
    """A dependency names a job the controller does not know: both a rejected submission and an
    unknown job, so callers catching either see it."""


def rejected(slurm_message: str) -> SubmitRejected:
    return SubmitRejected(slurm_message, slurm_message)
