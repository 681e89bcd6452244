"""Slurm's refusals in plain words: what the verbatim message means and how to fix it.

asad always shows Slurm's own text first (it is what a site's documentation and support speak);
the hint after it is for a user who has not met that message before.
"""

from __future__ import annotations

# (lower-case fragment of Slurm's message, what it means and what to do); first match wins
HINTS: tuple[tuple[str, str], ...] = (
    ("invalid partition", "the partition does not exist on this cluster or is hidden from you; "
                          "'sinfo -s' lists the partitions: fix 'partition:' in the workflow file"),
    ("invalid account", "Slurm does not know this account for you; 'sacctmgr show assoc user=$USER "
                        "format=account,partition,qos' lists yours: fix 'account:'"),
    ("invalid qos", "this QOS is not allowed for your account; 'sacctmgr show assoc user=$USER "
                    "format=account,qos' lists yours: fix 'qos:'"),
    ("requested node configuration is not available",
     "no node of the partition has that many CPUs or that much memory; 'sinfo -o \"%P %c %m\"' shows "
     "each partition's CPUs and memory (MB) per node: lower cpus/mem or choose another partition"),
    ("time limit", "the time limit is above the partition's maximum; 'sinfo -o \"%P %l\"' shows it: "
                   "lower 'time:' or choose another partition"),
    ("node count specification invalid", "more nodes than the partition allows for one job: lower 'nodes:'"),
    ("job dependency problem", "a predecessor's job is no longer known to Slurm (purged or cancelled)"),
    ("mutually exclusive", "give either 'mem' or 'mem_per_cpu' for a stage, not both"),
    ("maxsubmit", "you have as many jobs queued as the site allows at once; wait for some to end"),
    ("access/permission denied", "your account may not use this partition; ask your site's support"),
)


def explain_refusal(slurm_message: str) -> str:
    """A hint for Slurm's refusal, or "" when asad has none."""
    low = slurm_message.lower()
    for fragment, hint in HINTS:
        if fragment in low:
            return hint
    return ""


def refusal_text(slurm_message: str, request=None) -> str:  # noqa: ANN001 - a JobRequest
    """Slurm's words verbatim, then the hint when there is one (about the job's GPUs, generic
    resources or node features, when it asked for some and Slurm found no node that has them)."""
    text = f"Slurm refused the job: {slurm_message.strip()}"
    hint = explain_refusal(slurm_message)
    asked = _node_extras(request)
    if asked and "requested node configuration is not available" in slurm_message.lower():
        hint = (f"no node of the partition has what the job asks: {asked}, with its CPUs and memory; "
                "'sinfo -o \"%P %c %m %G %f\"' shows each partition's CPUs, memory (MB), generic resources "
                "(GPUs) and features per node: ask for fewer or choose another partition")
    return f"{text} ({hint})" if hint else text


def _node_extras(request) -> str:  # noqa: ANN001
    if request is None:
        return ""
    parts = [f"{label} {value}" for label, value in (("gpus", getattr(request, "gpus", None)),
                                                      ("gres", getattr(request, "gres", None)),
                                                      ("constraint", getattr(request, "constraint", None)))
             if value]
    return ", ".join(parts)
