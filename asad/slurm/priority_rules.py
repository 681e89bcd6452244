"""A site's priority rules, as far as they decide *when* to submit a stage.

Three facts of Slurm's priority plugins settle whether an early submission with a dependency
can ever lose to one without:

- ``priority/basic`` orders pending jobs by submission: a job held by ``afterok`` keeps the
  place it took when it was submitted.
- ``priority/multifactor`` adds an age factor that grows from the job's *accrue* time
  (Slurm 22.05: ``priority_multifactor.c`` counts age from ``details->accrue_time``), which
  ``acct_policy.c`` sets to the job's begin time. A job submitted with only ``afterok`` has no
  begin time until its dependency is met, so it accrues no age while held, unless
  ``PriorityFlags=ACCRUE_ALWAYS``.
- But a job submitted with ``afterok`` *and* a ``--begin`` a few seconds ahead has a begin time
  at once; its accrue time is set to it, and the dependency does not clear it unless
  ``AccountingStorageEnforce`` includes ``limits`` (``acct_policy_remove_accrue_time`` returns
  at once otherwise; checked on the local Slurm: ``scontrol show job`` prints its AccrueTime
  while the job waits on its dependency). Such a job ages from its submission like a job
  without a dependency, and still cannot start before its predecessors end.

So where age does not count (basic, a zero age weight, or ACCRUE_ALWAYS) submitting every stage
at once with ``afterok`` (a chain) is never slower; where age counts but a ``--begin`` keeps it
(no accounting limits, Slurm's default), the same chain with ``--begin`` ages every stage from the
workflow's submission and idles nothing; only where limits are enforced does a stage submitted
without a dependency ahead of its predecessor's end overtake the jobs that arrive meanwhile, and
the learned wait decides how far ahead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class PriorityRules:
    type: str = "unknown"  # "basic" | "multifactor" | "unknown"
    weight_age: int = 0
    max_age_s: float = 7 * 86400.0
    weight_fairshare: int = 0
    weight_job_size: int = 0
    accrue_always: bool = False
    enforce_limits: bool = False  # AccountingStorageEnforce includes limits (or safe, all)
    source: str = ""  # where these were read: "scontrol show config", "simulator", ...

    @property
    def age_counts(self) -> bool:
        """A job pending on a dependency falls behind jobs submitted after it (it accrues no age)."""
        return self.type == "multifactor" and self.weight_age > 0 and not self.accrue_always

    @property
    def begin_keeps_age(self) -> bool:
        """Age counts, and a job submitted with ``afterok`` and a ``--begin`` ages while held."""
        return self.age_counts and not self.enforce_limits

    @property
    def rule(self) -> str:
        """What ``auto`` does at this site: ``chain``, ``aged-chain`` or ``quantile``."""
        if not self.age_counts:
            return "chain"
        return "aged-chain" if self.begin_keeps_age else "quantile"

    def describe(self) -> str:
        if self.type == "basic":
            return "priority/basic: jobs are ordered by submission, a job held by afterok keeps its place"
        if self.type == "multifactor":
            if self.weight_age <= 0:
                return "priority/multifactor with PriorityWeightAge=0: waiting longer earns nothing"
            if self.accrue_always:
                return (f"priority/multifactor, PriorityWeightAge={self.weight_age} with ACCRUE_ALWAYS: "
                        "a job held by afterok accrues age too")
            fairshare = (f", PriorityWeightFairshare={self.weight_fairshare} (fair-share does not "
                         "depend on when a job was submitted)") if self.weight_fairshare > 0 else ""
            held = ("a job held by afterok accrues no age (AccountingStorageEnforce has limits)"
                    if self.enforce_limits else
                    "a job held by afterok accrues no age unless submitted with a --begin "
                    "(AccountingStorageEnforce has no limits)")
            return (f"priority/multifactor, PriorityWeightAge={self.weight_age} (max age "
                    f"{_human(self.max_age_s)}){fairshare}: {held}")
        return "priority rules unknown: assuming a job held by afterok keeps its place"


def rules_from_scontrol(config: dict[str, str]) -> PriorityRules:
    """From ``scontrol show config`` (as a key -> value dict)."""
    ptype = config.get("PriorityType", "")
    kind = "basic" if ptype.endswith("basic") else "multifactor" if ptype.endswith("multifactor") else "unknown"
    flags = {f.strip().upper() for f in config.get("PriorityFlags", "").split(",") if f.strip()}
    return PriorityRules(type=kind, weight_age=_int(config.get("PriorityWeightAge")),
                         max_age_s=_duration_s(config.get("PriorityMaxAge", "7-00:00:00")),
                         weight_fairshare=_int(config.get("PriorityWeightFairShare")),
                         weight_job_size=_int(config.get("PriorityWeightJobSize")),
                         accrue_always="ACCRUE_ALWAYS" in flags,
                         enforce_limits=_enforces_limits(config.get("AccountingStorageEnforce", "")),
                         source="scontrol show config")


def rules_from_sim(config: object) -> PriorityRules:
    """The simulator's own rules (``asad.slurm.sim.config.SimConfig``)."""
    multifactor = getattr(config, "priority", "fifo") == "multifactor"
    return PriorityRules(type="multifactor" if multifactor else "basic",
                         weight_age=int(getattr(config, "weight_age", 0)) if multifactor else 0,
                         max_age_s=float(getattr(config, "max_age_s", 7 * 86400.0)),
                         weight_fairshare=int(getattr(config, "weight_fairshare", 0) or 0) if multifactor else 0,
                         weight_job_size=int(getattr(config, "weight_size", 0)) if multifactor else 0,
                         accrue_always="ACCRUE_ALWAYS" in tuple(getattr(config, "priority_flags", ()) or ()),
                         enforce_limits=bool(getattr(config, "accounting_enforce_limits", False)),
                         source="simulator")


def _enforces_limits(text: str) -> bool:
    """``AccountingStorageEnforce`` sets ACCOUNTING_ENFORCE_LIMITS (``read_config.c``: limits,
    safe, all, or the old number 2)."""
    tokens = {t.strip().lower() for t in text.split(",")}
    return bool(tokens & {"limits", "safe", "all", "2"})


def _human(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:g} {unit}"
    return f"{seconds:g} s"


def _int(text: str | None) -> int:
    try:
        return int(str(text).split()[0])
    except (ValueError, IndexError):
        return 0


def _duration_s(text: str) -> float:
    """Slurm's ``[days-]hh:mm:ss`` (as ``scontrol show config`` prints PriorityMaxAge)."""
    m = re.fullmatch(r"(?:(\d+)-)?(\d+):(\d+):(\d+)", text.strip())
    if not m:
        return 7 * 86400.0
    days, hours, minutes, seconds = (int(g or 0) for g in m.groups())
    return float(((days * 24 + hours) * 60 + minutes) * 60 + seconds)


def rules_of(backend: object) -> PriorityRules:
    """What ``backend`` says of its priority rules; "unknown" (treated like basic) when it cannot say."""
    ask = getattr(backend, "priority_rules", None)
    if callable(ask):
        return ask()
    sim = getattr(backend, "sim", backend)  # the wall-clock wrapper holds the simulator
    config = getattr(sim, "config", None)
    if getattr(backend, "name", "") == "sim" and config is not None:
        return rules_from_sim(config)
    return PriorityRules()
