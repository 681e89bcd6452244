"""How a stage's ``env:`` values reach its job: only through the job's environment.

A value is never written into the batch script. The script is kept in slurmctld's state, shown
by ``scontrol write batch_script`` and, where a site stores job scripts, by ``sacct
--batch-script``; ``sbatch --export=ALL,NAME,...`` carries the value from ``sbatch``'s own process
environment instead (names only on the command line: ``--export=NAME=value`` would split a value
at its commas). See docs/security.md for who can read a job's environment.

A job of one stage, and a shared job (its stages share one ``env:``, asad/strategies/share.py), get
the values under their own names. The big-job strategy runs every stage in one allocation, each
with its own ``env:``: there stage ``k`` (its place in the workflow file) gets its value of
``NAME`` from ``ASAD_ENV_<k>_NAME`` and the script names the variable, never the value:
``NAME="$ASAD_ENV_<k>_NAME"``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from asad.spec.model import WorkflowSpec

BIG_JOB_PREFIX = "ASAD_ENV_"


def big_job_var(spec: WorkflowSpec, stage: str, name: str) -> str:
    """The variable that carries ``stage``'s value of ``name`` in a big job's environment."""
    return f"{BIG_JOB_PREFIX}{spec.index_of(stage)}_{name}"


def big_job_env(spec: WorkflowSpec) -> dict[str, str]:
    """Every stage's ``env:`` under the names :func:`big_job_var` gives them."""
    return {big_job_var(spec, s.name, k): str(v) for s in spec.stages for k, v in s.env_dict().items()}


def big_job_assignments(spec: WorkflowSpec, stage: str) -> list[str]:
    """The shell words that set ``stage``'s variables from their carriers (names, no values)."""
    return [f'{k}="${{{big_job_var(spec, stage, k)}}}"' for k in spec.stage(stage).env_dict()]
