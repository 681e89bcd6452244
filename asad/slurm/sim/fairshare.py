"""Fair-share as Slurm 22.05's priority/multifactor computes it with the Fair Tree algorithm
(``PriorityFlags`` default since 19.05), on a two-level association tree: root -> accounts ->
users.

Usage (``src/plugins/priority/multifactor/priority_multifactor.c``):

- every association has ``usage_raw``, in billable-TRES-seconds; without ``TRESBillingWeights``
  the billable TRES of a job is its allocated CPUs (``calc_job_billable_tres``), so usage is
  CPU-seconds. A job's usage goes to its user association and every parent up to root
  (``_apply_new_usage``, the ``while (assoc)`` loop);
- the decay thread runs every ``PriorityCalcPeriod`` (``_decay_thread``): with
  ``decay_factor = 1 - 0.693 / PriorityDecayHalfLife`` (per second; Slurm's own first-order
  approximation of 2^(-1/half-life)), it first multiplies every ``usage_raw`` by
  ``decay_factor ** (now - last_ran)`` (``_apply_decay``), then adds each running job's usage
  since the last run: ``delta * decay_factor ** delta * cpus`` with
  ``delta = now - max(last_ran, start)`` (``decay_apply_new_usage`` -> ``_apply_new_usage``);
- a job that ends adds ``delta * decay_factor ** delta * cpus`` for
  ``delta = end - max(last_ran, start)`` at once (``priority_p_job_end``), so it is decayed
  again at the next run -- but only where ``AccountingStorageEnforce`` includes ``limits``
  (``safe``, ``all``): slurmctld calls ``priority_g_job_end`` from ``_adjust_limit_usage``
  (acct_policy.c), which returns first unless ``accounting_enforce & ACCOUNTING_ENFORCE_LIMITS``.
  Without it (Slurm's default) the decay thread skips finished and completing jobs
  (``decay_apply_new_usage``), so the time a job ran after the last run is never charged.

Fair Tree (``fair_tree.c``), after the usage update of each run:

- for every association, S = shares_raw / sum of its siblings' shares_raw
  (``_normalize_assoc_shares_fair_tree``) and U = usage_raw / parent's usage_raw, 0 when the
  parent has none (``_ft_set_assoc_usage_efctv``); level_fs = S / U (infinite when U = 0;
  0 when S = 0) (``_calc_assoc_fs``);
- siblings are sorted by level_fs, highest first (``_cmp_level_fs``; glibc's qsort is a stable
  merge sort, so ties keep the tree's order) and walked depth first; the users get ranks from
  N (the number of user associations, ``g_user_assoc_count``) down, one per user, except that a
  user whose level_fs equals the previous sibling's keeps the previous rank, and the first user
  of an account whose level_fs equals the previous account's does too (``_calc_tree_fs``);
  ``fs_factor = rank / N``. Tied sibling *accounts* are not merged: ``_count_tied_accounts``
  stops at the first account that follows (``if (!next_assoc->user) break;``, unchanged up to
  25.11), so each tied account is walked in turn.

Times are whole seconds, as slurmctld keeps them (``time_t``): the decay thread's run instant is
``start_time = time(NULL)`` after its wake-up, ``g_last_ran`` is the previous run's, a job's
``start_time`` is the second it started and ``priority_p_job_end`` reads ``time(NULL)``;
``run_delta = difftime(end_period, start_period)`` (``_apply_new_usage``) and the decay's
``run_delta = difftime(start_time, g_last_ran)`` (``_decay_thread``) are therefore whole seconds.
The fraction of a second matters where two accounts' level_fs are close: fairshare-shares run 4's
decay run at 115 s ranks fsb above fsa on whole seconds (as Slurm then started fsb's g44 and g25
before fsa's g10) and fsa above fsb on exact instants.

A job's fair-share factor is its user association's ``fs_factor`` at the time its priority is
computed (``_get_fairshare_priority``): set at submission from the last run, recomputed for every
pending job at each run.

Not modelled: sub-accounts (the tree is root -> accounts -> users), ``FairShare=parent``,
``PriorityUsageResetPeriod``, QOS usage factors, ``TRESBillingWeights``, the classic factor.
"""

from __future__ import annotations

import math

import numpy as np


class FairTree:
    """Associations, their decayed usage, and each user association's Fair Tree factor."""

    def __init__(self, half_life_s: float, shares: dict[str, int] | None = None, start: float = 0.0,
                 charge_at_end: bool = True):
        # priority_p_job_end runs (AccountingStorageEnforce=limits); see the module docstring
        self.charge_at_end = charge_at_end
        self.decay_factor = 1.0 - 0.693 / half_life_s if half_life_s > 0 else 1.0
        self.shares = dict(shares or {})
        self.accounts: list[str] = []
        self._acct_index: dict[str, int] = {}
        self.users: list[str] = []  # user name of each user association
        self.user_acct: list[int] = []  # account index of each user association
        self._assoc_index: dict[tuple[str, str], int] = {}
        self.user_usage = np.zeros(0)
        self.acct_usage = np.zeros(0)
        self.root_usage = 0.0
        self.run_cpus = np.zeros(0)  # CPUs of the running jobs of each user association
        self.fresh: list = []  # jobs started since the last run (their delta starts at start)
        self.last_ran = math.floor(start)
        self.factor = np.zeros(0)
        self.runs = 0

    # ---- associations ----------------------------------------------------------------------
    def assoc(self, user: str, account: str) -> int:
        """The user association (user, account), created on first use (with equal shares unless
        ``shares`` names the account or ``account/user``)."""
        key = (user, account)
        idx = self._assoc_index.get(key)
        if idx is not None:
            return idx
        a = self._acct_index.get(account)
        if a is None:
            a = len(self.accounts)
            self._acct_index[account] = a
            self.accounts.append(account)
            self.acct_usage = np.append(self.acct_usage, 0.0)
        idx = len(self.users)
        self._assoc_index[key] = idx
        self.users.append(user)
        self.user_acct.append(a)
        self.user_usage = np.append(self.user_usage, 0.0)
        self.run_cpus = np.append(self.run_cpus, 0.0)
        self.compute_factors()
        return idx

    def add_population(self, users: list[str], accounts: list[str]) -> list[int]:
        """Many associations at once (the background users); returns their indices."""
        out = []
        for user, account in zip(users, accounts):
            key = (user, account)
            if key not in self._assoc_index:
                a = self._acct_index.setdefault(account, len(self.accounts))
                if a == len(self.accounts):
                    self.accounts.append(account)
                self._assoc_index[key] = len(self.users)
                self.users.append(user)
                self.user_acct.append(a)
            out.append(self._assoc_index[key])
        n_u, n_a = len(self.users), len(self.accounts)
        self.user_usage = np.concatenate([self.user_usage, np.zeros(n_u - len(self.user_usage))])
        self.run_cpus = np.concatenate([self.run_cpus, np.zeros(n_u - len(self.run_cpus))])
        self.acct_usage = np.concatenate([self.acct_usage, np.zeros(n_a - len(self.acct_usage))])
        self.compute_factors()
        return out

    def _shares(self) -> tuple[np.ndarray, np.ndarray]:
        acct = np.array([float(self.shares.get(a, 1)) for a in self.accounts])
        user = np.array([float(self.shares.get(f"{self.accounts[a]}/{u}", 1))
                         for u, a in zip(self.users, self.user_acct)])
        return acct, user

    # ---- usage -----------------------------------------------------------------------------
    def _add(self, assoc: int, amount: float) -> None:
        self.user_usage[assoc] += amount
        self.acct_usage[self.user_acct[assoc]] += amount
        self.root_usage += amount

    def _decayed_run(self, delta: float) -> float:
        return delta * self.decay_factor ** delta if delta > 0 else 0.0

    def job_started(self, job, cpus: int) -> None:  # noqa: ANN001 -- a SimJob
        self.run_cpus[job.assoc] += cpus
        self.fresh.append((job, cpus))

    def job_ended(self, job, cpus: int, end: float) -> None:  # noqa: ANN001
        """``priority_p_job_end``: the usage since the last run, at once (only with
        ``charge_at_end``; without it that usage is lost)."""
        self.run_cpus[job.assoc] -= cpus
        if self.charge_at_end:
            self._add(job.assoc, self._decayed_run(math.floor(end) - max(self.last_ran, math.floor(job.start_time)))
                      * cpus)

    def run(self, now: float) -> None:
        """One pass of the decay thread at ``now``: decay, running jobs' new usage, factors."""
        self.runs += 1
        now = math.floor(now)  # time(NULL): whole seconds, as every instant below
        delta = now - self.last_ran
        if delta > 0:
            real_decay = max(self.decay_factor ** delta, np.finfo(float).tiny)
            if real_decay != 1.0:
                self.user_usage *= real_decay
                self.acct_usage *= real_decay
                self.root_usage *= real_decay
            # jobs running since before the last run: the same delta for all of them
            steady = self.run_cpus.copy()
            fresh_add: list[tuple[int, float]] = []
            for job, cpus in self.fresh:
                if job.end_time is None and job.start_time is not None:  # still running
                    steady[job.assoc] -= cpus
                    fresh_add.append((job.assoc, self._decayed_run(now - max(self.last_ran, math.floor(job.start_time)))
                                      * cpus))
            add = steady * self._decayed_run(delta)
            for assoc, amount in fresh_add:
                add[assoc] += amount
            self.user_usage += add
            np.add.at(self.acct_usage, np.asarray(self.user_acct, dtype=np.int64), add)
            self.root_usage += float(add.sum())
        self.fresh = []
        self.last_ran = now
        self.compute_factors()

    def compute_factors(self) -> None:
        acct_shares, user_shares = self._shares()
        self.factor = fair_tree_factors(np.asarray(self.user_acct, dtype=np.int64), self.user_usage,
                                        self.acct_usage, self.root_usage, user_shares, acct_shares)


def _level_fs(shares: np.ndarray, level_shares: np.ndarray, usage: np.ndarray,
              parent_usage: np.ndarray) -> np.ndarray:
    """``_calc_assoc_fs``: S / U, infinite when U = 0, 0 when S = 0. In long double, as Slurm
    computes it (x86-64: 80-bit), so that a tiny usage does not overflow into a tie with none."""
    shares, level_shares = shares.astype(np.longdouble), level_shares.astype(np.longdouble)
    usage, parent_usage = usage.astype(np.longdouble), parent_usage.astype(np.longdouble)
    with np.errstate(all="ignore"):
        s = np.where(level_shares > 0, shares / np.where(level_shares > 0, level_shares, 1), 0.0)
        u = np.where(parent_usage > 0, usage / np.where(parent_usage > 0, parent_usage, 1), 0.0)
        lf = np.where(u > 0, s / np.where(u > 0, u, 1), np.inf)
    return np.where(s == 0, 0.0, lf)


def fair_tree_factors(user_acct: np.ndarray, user_usage: np.ndarray, acct_usage: np.ndarray,
                      root_usage: float, user_shares: np.ndarray, acct_shares: np.ndarray) -> np.ndarray:
    """The Fair Tree ``fs_factor`` of every user association (see the module docstring)."""
    n = len(user_acct)
    if n == 0:
        return np.zeros(0)
    n_acct = len(acct_usage)
    acct_lf = _level_fs(acct_shares, np.full(n_acct, acct_shares.sum()), acct_usage,
                        np.full(n_acct, float(root_usage)))
    level = np.bincount(user_acct, weights=user_shares, minlength=n_acct)
    user_lf = _level_fs(user_shares, level[user_acct], user_usage, acct_usage[user_acct])
    acct_order = np.argsort(-acct_lf, kind="stable")  # highest level_fs first, stable on ties
    acct_rank = np.empty(n_acct, dtype=np.int64)
    acct_rank[acct_order] = np.arange(n_acct)
    # users in walk order: by their account's place, then by level_fs (highest first), stable
    order = np.lexsort((np.arange(n), -user_lf, acct_rank[user_acct]))
    lf = user_lf[order]
    acct = user_acct[order]
    first = np.ones(n, dtype=bool)
    first[1:] = acct[1:] != acct[:-1]
    tied = np.zeros(n, dtype=bool)
    tied[1:] = ~first[1:] & (lf[1:] == lf[:-1])
    # the first user of an account is tied when its account's level_fs equals the previous
    # (walked) account's
    acct_lf_sorted = acct_lf[acct_order]
    acct_tied = np.zeros(n_acct, dtype=bool)
    acct_tied[1:] = acct_lf_sorted[1:] == acct_lf_sorted[:-1]
    tied[first] = acct_tied[acct_rank[acct[first]]]
    pos = np.arange(n)
    last_untied = np.maximum.accumulate(np.where(tied, 0, pos))  # position 0 is never tied
    factor = np.empty(n)
    factor[order] = (n - last_untied) / float(n)
    return factor
