"""Words people reach for in a workflow file (from sbatch, Snakemake, Nextflow, CWL, and the
environment tools a stage's ``setup:`` lines call: conda, modules, venvs) mapped to the key they
mean, for the parser's "did you mean" hints."""

from __future__ import annotations

SYNONYMS = {
    "conda": "setup", "module": "setup", "modules": "setup", "venv": "setup", "virtualenv": "setup",
    "source": "setup", "activate": "setup", "prologue": "setup", "preamble": "setup",
    "cores": "cpus", "ncpus": "cpus", "threads": "cpus", "cpu": "cpus", "cpus-per-task": "cpus_per_task",
    "cpuspertask": "cpus_per_task", "tasks": "ntasks", "n_tasks": "ntasks", "nnodes": "nodes",
    "node": "nodes", "memory": "mem", "memory_mb": "mem", "mem-per-cpu": "mem_per_cpu",
    "walltime": "time", "time_limit": "time", "timelimit": "time", "runtime": "time",
    "depends": "after", "depends_on": "after", "dependencies": "after", "needs": "after",
    "requires": "after", "command": "run", "cmd": "run", "script": "run", "shell": "run",
    "environment": "env", "queue": "partition", "max-oom-retries": "max_oom_retries",
    "retry": "retries", "input": "inputs", "workflow": "name", "stage": "stages", "steps": "stages",
    "jobs": "stages", "tasks_list": "stages", "working_directory": "workdir", "workdir_path": "workdir",
    "chdir": "workdir", "peak_memory": "peak_mem", "mem_peak": "peak_mem", "efficiency": "cpu_efficiency",
    "duration": "runtime",
}
