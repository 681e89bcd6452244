"""Helpers shared by the real-Slurm tests (imported as a plain module: tests/ is not a package)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from asad.slurm.backend import JobStatus
from asad.slurm.cli import SlurmCLI


def wait_until(backend: SlurmCLI, job_ids: list[int], done: Callable[[dict[int, JobStatus]], bool],
               timeout_s: float = 90, interval_s: float = 1.0) -> dict[int, JobStatus]:
    """Poll until ``done(statuses)``; fail with the last statuses after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    statuses: dict[int, JobStatus] = {}
    while time.monotonic() < deadline:
        statuses = backend.poll(job_ids)
        if done(statuses):
            return statuses
        time.sleep(interval_s)
    raise AssertionError(f"timed out after {timeout_s} s; last statuses: {statuses}")


def all_final(ids: list[int]) -> Callable[[dict[int, JobStatus]], bool]:
    return lambda st: all(j in st and st[j].state.is_final for j in ids)


def unique_tag(prefix: str) -> str:
    return f"asadtest-{prefix}-{os.getpid()}-{time.time_ns() % 10**9}"
