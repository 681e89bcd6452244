"""Reading the markers the stage wrapper (``slurm-scripts/asad-stage.sh``) leaves in a run folder.

``<stage>.alloc`` and ``<stage>.start`` hold "<epoch> <host> <job id>" (the allocation exists; the
stage's command began), ``<stage>.end`` "<exit code> <epoch>". Slurm's state stays the truth;
the markers say sooner, and where a shared job is in its stages. A marker another job wrote (an
earlier attempt's) does not count.
"""

from __future__ import annotations

from pathlib import Path


def folder(run_dir: str | Path, workflow_id: int) -> Path:
    """The run folder of one workflow: its jobs' logs and its stages' markers."""
    return Path(run_dir) / str(workflow_id)


def end_path(folder: str | Path, stage: str) -> Path:
    """``<stage>.end``: written the moment the stage's command ends (what the daemon watches)."""
    return Path(folder) / f"{stage}.end"


def alloc_path(folder: str | Path, stage: str) -> Path:
    """``<stage>.alloc``: written the moment the stage's job starts (before any barrier)."""
    return Path(folder) / f"{stage}.alloc"


def job_output(pattern: str, job_id: int) -> str:
    """The job's own Slurm output file (``--output <stage>-%j.out``): slurmstepd's messages land there."""
    return pattern.replace("%j", str(job_id))


def began(folder: str | Path, stage: str, job_id: int, kind: str = "start") -> tuple[float, str] | None:
    """(epoch, host) from ``<stage>.<kind>`` (``alloc`` or ``start``) if job ``job_id`` wrote it."""
    try:
        fields = (Path(folder) / f"{stage}.{kind}").read_text().split()
        if len(fields) >= 3 and fields[2] == str(job_id):
            return float(fields[0]), fields[1]
    except (OSError, ValueError):
        pass
    return None


def turn(folder: str | Path, stage: str, job_id: int) -> tuple[tuple[float, str] | None, tuple[int, float] | None]:
    """A stage's turn in job ``job_id``: (start epoch, host) once its command began there, and
    (exit code, end epoch) once it ended (only after a start in that job)."""
    start = began(folder, stage, job_id)
    if start is None:
        return None, None
    try:
        code, epoch = end_path(folder, stage).read_text().split()[:2]
        return start, (int(code), float(epoch))
    except (OSError, ValueError):
        return start, None
