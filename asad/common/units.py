"""Durations and memory sizes written the way Slurm users write them."""

from __future__ import annotations

import re

_MEM_UNITS = {"": 1, "K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}
_MEM_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:I?B)?\s*$", re.IGNORECASE)
_DUR_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|sec|m|min|h|hr|d|day|days)?\s*$", re.IGNORECASE)
_DUR_UNITS = {None: 60, "s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "hr": 3600, "d": 86400,
              "day": 86400, "days": 86400}


class UnitError(ValueError):
    pass


def parse_mem_mb(value: object) -> int:
    """``"2G"`` → 2048, ``"500M"`` → 500, ``1024`` → 1024 (a bare number is MB, as ``--mem``)."""
    if isinstance(value, bool):
        raise UnitError(f"not a memory size: {value!r}")
    if isinstance(value, (int, float)):
        if value <= 0:
            raise UnitError(f"memory must be positive, got {value!r}")
        if round(value) < 1:
            raise UnitError(f"memory must be at least 1 MB, got {value!r}")
        return int(round(value))
    m = _MEM_RE.match(str(value))
    if not m:
        raise UnitError(f"not a memory size: {value!r} (write e.g. 500M, 4G, 1.5T)")
    mb = float(m.group(1)) * _MEM_UNITS[m.group(2).upper()]
    if mb <= 0:
        raise UnitError(f"memory must be positive, got {value!r}")
    return max(1, int(round(mb)))


def parse_duration_s(value: object) -> int:
    """Seconds from ``90s``, ``10m``, ``2h``, ``1d``, Slurm's ``[D-]HH:MM:SS`` / ``MM:SS``, or a bare
    number of minutes (as ``sbatch --time``)."""
    if isinstance(value, bool):
        raise UnitError(f"not a duration: {value!r}")
    if isinstance(value, (int, float)):
        if value < 0:
            raise UnitError(f"duration must not be negative, got {value!r}")
        return int(round(value * 60))
    text = str(value).strip()
    if ":" in text or re.match(r"^\d+-\d+$", text):
        return _parse_slurm_clock(text, value)
    m = _DUR_RE.match(text)
    if not m:
        raise UnitError(f"not a duration: {value!r} (write e.g. 90s, 10m, 2h, 1d or 1-02:00:00)")
    unit = m.group(2).lower() if m.group(2) else None
    return int(round(float(m.group(1)) * _DUR_UNITS[unit]))


def _parse_slurm_clock(text: str, original: object) -> int:
    days = 0
    if "-" in text:
        d, _, text = text.partition("-")
        if not d.isdigit():
            raise UnitError(f"not a duration: {original!r}")
        days = int(d)
    parts = text.split(":")
    if not all(p.isdigit() for p in parts) or not 1 <= len(parts) <= 3:
        raise UnitError(f"not a duration: {original!r} (Slurm form is [D-]HH:MM:SS)")
    nums = [int(p) for p in parts]
    if days and len(nums) == 1:
        h, m, s = nums[0], 0, 0
    elif len(nums) == 3:
        h, m, s = nums
    elif len(nums) == 2:
        h, m, s = (nums[0], nums[1], 0) if days else (0, nums[0], nums[1])
    else:
        h, m, s = 0, nums[0], 0
    return days * 86400 + h * 3600 + m * 60 + s


def format_duration(seconds: float | None) -> str:
    """Slurm's ``TIME`` column: ``M:SS``, ``H:MM:SS`` or ``D-HH:MM:SS``."""
    if seconds is None:
        return "-"
    s = int(max(0, round(seconds)))
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    if d:
        return f"{d}-{h:02d}:{m:02d}:{s:02d}"
    if h:
        return f"{h}:{m:02d}:{s:02d}"
    return f"{m}:{s:02d}"


def format_mem(mb: float | None) -> str:
    if mb is None:
        return "-"
    if mb >= 1024 and mb % 1024 == 0:
        return f"{int(mb // 1024)}G"
    if mb >= 10240:
        return f"{mb / 1024:.1f}G"
    return f"{int(round(mb))}M"
