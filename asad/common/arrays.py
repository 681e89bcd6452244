"""Job arrays for fan-out stages: the ``array:`` key, and its split into Slurm array jobs.

A stage's ``array`` is sbatch's own ``--array`` text: ``0-99``, ``1,3,10-20:2``, with an optional
``%N`` throttle (at most N tasks of the array run at once): ``0-99%10``; or a whole number N,
short for ``0-(N-1)``. The command sees its task's index in ``$SLURM_ARRAY_TASK_ID``.

Slurm refuses an index at or above the cluster's ``MaxArraySize`` (``scontrol show config``). A
stage with larger indices is submitted as several array jobs ("chunks"), each with indices
``0..MaxArraySize-1`` relative to its ``offset``; the batch script adds the offset back
(``SLURM_ARRAY_TASK_ID=$((SLURM_ARRAY_TASK_ID + offset))``), so the command always sees the global
index it asked for. A throttle applies to each chunk.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_TASKS = 1_000_000  # a sanity bound on one stage's tasks (asad keeps them as index lists)
DEFAULT_MAX_ARRAY_SIZE = 1001  # Slurm's default MaxArraySize
_PART_RE = re.compile(r"(\d+)(?:-(\d+)(?::(\d+))?)?\Z")


class ArrayError(ValueError):
    """An ``array`` value that is not an index list; the message says what is wrong."""


@dataclass(frozen=True)
class ArraySpec:
    indices: tuple[int, ...]  # sorted, distinct
    throttle: int | None = None

    @property
    def count(self) -> int:
        return len(self.indices)

    def text(self) -> str:
        """The value as sbatch's ``--array`` (ranges compressed), with its throttle."""
        return compress(self.indices) + (f"%{self.throttle}" if self.throttle else "")

    def chunks(self, max_array_size: int) -> list[Chunk]:
        """The array jobs to submit: one when every index is below ``max_array_size``, else
        consecutive runs of indices, each spanning less than ``max_array_size``."""
        if self.indices[-1] < max_array_size:
            return [Chunk(0, self.text(), self.count)]
        out: list[Chunk] = []
        group: list[int] = []
        for i in self.indices:
            if group and i - group[0] >= max_array_size:
                out.append(self._chunk(group))
                group = []
            group.append(i)
        out.append(self._chunk(group))
        return out

    def _chunk(self, group: list[int]) -> Chunk:
        offset = group[0]
        text = compress([i - offset for i in group]) + (f"%{self.throttle}" if self.throttle else "")
        return Chunk(offset, text, len(group))


@dataclass(frozen=True)
class Chunk:
    offset: int  # added to SLURM_ARRAY_TASK_ID in the job
    text: str  # its ``--array`` value (local indices)
    count: int


def parse_array(value: object) -> ArraySpec:
    """``array:`` as written in the workflow file (a string or a whole number)."""
    if isinstance(value, bool):
        raise ArrayError("must be an index list like 0-99 or 0-99%10, or a number of tasks")
    if isinstance(value, int):
        if value < 1:
            raise ArrayError(f"{value} tasks: give at least 1")
        if value > MAX_TASKS:
            raise ArrayError(f"{value} tasks is more than asad's limit of {MAX_TASKS}")
        return ArraySpec(tuple(range(value)))
    if not isinstance(value, str) or not value.strip():
        raise ArrayError("must be an index list like 0-99 or 0-99%10, or a number of tasks")
    text = value.strip().replace(" ", "")
    throttle = None
    if "%" in text:
        text, _, limit = text.partition("%")
        if not limit.isdigit() or int(limit) < 1:
            raise ArrayError(f"{value!r}: the throttle after % must be a whole number of at least 1")
        throttle = int(limit)
    indices: set[int] = set()
    for part in text.split(","):
        m = _PART_RE.match(part)
        if not m:
            raise ArrayError(f"{value!r}: {part!r} is not an index, a range A-B, or A-B:STEP")
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) is not None else lo
        step = int(m.group(3)) if m.group(3) is not None else 1
        if hi < lo:
            raise ArrayError(f"{value!r}: the range {part} ends before it starts")
        if step < 1:
            raise ArrayError(f"{value!r}: the step in {part} must be at least 1")
        if len(indices) + (hi - lo) // step + 1 > MAX_TASKS:
            raise ArrayError(f"{value!r}: more than asad's limit of {MAX_TASKS} tasks")
        indices.update(range(lo, hi + 1, step))
    return ArraySpec(tuple(sorted(indices)), throttle)


def compress(indices: list[int] | tuple[int, ...]) -> str:
    """``[0, 1, 2, 5, 7, 8]`` -> ``0-2,5,7-8``."""
    parts: list[str] = []
    start = prev = None
    for i in indices:
        if start is None:
            start = prev = i
        elif i == prev + 1:
            prev = i
        else:
            parts.append(str(start) if start == prev else f"{start}-{prev}")
            start = prev = i
    if start is not None:
        parts.append(str(start) if start == prev else f"{start}-{prev}")
    return ",".join(parts)


def task_count(expr: str) -> int:
    """How many tasks a Slurm array expression names (``[2-5%2]`` -> 4, ``7`` -> 1)."""
    try:
        return parse_array(expr.strip("[]")).count
    except ArrayError:
        return 1


def offset_line(offset: int) -> str:
    """The batch script line that makes a chunk's task ids global again."""
    return f"export SLURM_ARRAY_TASK_ID=$((SLURM_ARRAY_TASK_ID + {int(offset)}))"
