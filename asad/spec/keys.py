"""The keys a workflow file may hold, at the top, in ``defaults``, in a stage and in its
``simulate``; and the words people reach for instead (from sbatch, Snakemake, Nextflow, CWL, and the
environment tools a stage's ``setup:`` lines call: conda, modules, venvs) mapped to the key they
mean, for the parser's "did you mean" hints."""

from __future__ import annotations

from asad.spec.slurm_keys import SLURM_OPTION_KEYS

TOP_KEYS = ("name", "strategy", "mode", "defaults", "workdir", "sizing", "idle_price", "stages")
DEFAULT_KEYS = ("partition", "account", "qos", "time", "mem", "mem_per_cpu", "cpus", "retries",
                "max_oom_retries", "env", *SLURM_OPTION_KEYS)
STAGE_KEYS = ("name", "run", "cpus", "nodes", "ntasks", "cpus_per_task", "mem", "mem_per_cpu",
              "time", "after", "env", "simulate", "retries", "max_oom_retries", "inputs", "sizing",
              "sizing_cpus", "partition", "account", "qos", "array", *SLURM_OPTION_KEYS)
SIMULATE_KEYS = ("runtime", "peak_mem", "cpu_efficiency")

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
