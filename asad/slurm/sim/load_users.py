"""The people behind the background load: users in accounts, who stop submitting when their
jobs pile up.

An open arrival stream at a fixed offered load has no steady state once the scheduler cannot
serve it (the real job mix packs to ~0.85 of ``hpc2n`` under EASY backfill): the queue, and every
wait, grows for as long as the run lasts. Real users do not behave like that: someone with a
screenful of pending jobs waits for some to start before sending more. So each background
arrival belongs to a user, and a user who already has ``cap`` jobs pending lets that submission
go (it is not queued, and not retried: the work is done elsewhere, later, or never). The queue
is then bounded by the sum of the caps, and the system is a closed loop that settles.

Users and accounts follow the concentration of the real queues: in the Cedar/Graham 2021
sample, 779 accounts submitted the CPU jobs and the busiest 1, 10 and 100 of them submitted 13 %,
45 % and 89 % (``account_shares`` below recomputes this from the data); a Zipf law over account
rank with exponent ``account_zipf`` = 1.1 gives 18 %, 49 % and 79 % over 779 accounts (the
exponent with the smallest mean log error over the busiest 300). The number of accounts scales with the
cluster (Cedar and Graham together have ~140,000 cores for 779 accounts). Each account has one or
more users who share its submissions unevenly. A user's cap is ``pile_up_days`` days of that
user's own mean submissions (at least ``min_cap``): heavy users tolerate longer queues.

Names are Slurm-like strings (``user`` ``u0042``, ``account`` ``a017``) so a fair-share model can
key its usage on them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from asad.slurm.backend import JobState

_PENDING, _RUNNING = JobState.PENDING, JobState.RUNNING  # the states ``JobState.is_final`` is False for

# Cores per account in the real sample: ~140,000 cores (Cedar ~100k, Graham ~40k) for 779 accounts.
CORES_PER_ACCOUNT = 180.0


@dataclass(frozen=True)
class UserModel:
    """How many users, how concentrated, and how much pile-up each tolerates."""

    accounts: int | None = None  # None: one per CORES_PER_ACCOUNT cores of the cluster, at least 2
    account_zipf: float = 1.1  # share of the k-th busiest account ~ k ** -account_zipf
    users_per_account_mean: float = 3.0  # 1 + Poisson(mean - 1) users in each account
    user_zipf: float = 1.0  # share of the k-th busiest user inside its account
    pile_up_days: float = 0.35  # a user stops submitting at this many days of own submissions pending
    min_cap: int = 2  # ... but always tolerates this many pending jobs
    closed_loop: bool = True  # False: every arrival is queued (the open stream)

    def validate(self) -> None:
        if self.accounts is not None and self.accounts < 1:
            raise ValueError("user model: accounts must be at least 1")
        if self.users_per_account_mean < 1:
            raise ValueError("user model: users_per_account_mean must be at least 1")
        if self.pile_up_days <= 0 or self.min_cap < 1:
            raise ValueError("user model: pile_up_days must be positive and min_cap at least 1")


class UserPopulation:
    """Users with accounts, submission shares and pending caps; tracks each user's pending jobs.

    ``pick`` assigns arrivals to users (in proportion to their shares, so each user's arrivals are
    a thinned copy of the whole stream, with its daily cycle). ``admit`` is asked at the moment of
    the arrival; ``track`` is told the simulator's job record of every admitted arrival, whose
    ``start_time`` (set when it starts) and ``state`` are read to count what is still pending.
    """

    def __init__(self, model: UserModel, total_cores: int, jobs_per_day: float,
                 rng: np.random.Generator):
        model.validate()
        self.model = model
        n_acc = model.accounts or max(2, round(total_cores / CORES_PER_ACCOUNT))
        acc_share = np.arange(1, n_acc + 1, dtype=float) ** -model.account_zipf
        acc_share /= acc_share.sum()
        users_in = 1 + rng.poisson(model.users_per_account_mean - 1, size=n_acc)
        names, accounts, shares = [], [], []
        for a in range(n_acc):
            inner = np.arange(1, users_in[a] + 1, dtype=float) ** -model.user_zipf
            inner /= inner.sum()
            for share in inner:
                names.append(f"u{len(names):04d}")
                accounts.append(f"a{a:03d}")
                shares.append(acc_share[a] * share)
        self.user_names: list[str] = names
        self.user_accounts: list[str] = accounts
        self.share = np.array(shares)
        self._cum = np.cumsum(self.share)
        self._cum[-1] = 1.0
        per_day = self.share * jobs_per_day
        self.cap = np.maximum(model.min_cap, np.round(per_day * model.pile_up_days)).astype(int)
        self._pending: list[list] = [[] for _ in names]
        self.admitted = 0
        self.dropped = 0

    def __len__(self) -> int:
        return len(self.user_names)

    @property
    def accounts(self) -> list[str]:
        return sorted(set(self.user_accounts))

    def pick(self, rng: np.random.Generator, count: int) -> np.ndarray:
        return np.searchsorted(self._cum, rng.random(count), side="right")

    def pending(self, user: int) -> int:
        jobs = self._pending[user]
        # not started and not final (``state.is_final``'s test, without its property call per
        # job: a user at the cap has ~60 jobs rechecked at each of their arrivals)
        live = [j for j in jobs if j.start_time is None and (j.state is _PENDING or j.state is _RUNNING)]
        if len(live) != len(jobs):
            self._pending[user] = live
        return len(live)

    def admit(self, user: int) -> bool:
        """Will this user submit now? No once ``cap`` of their jobs are pending."""
        jobs = self._pending[user]
        ok = (not self.model.closed_loop or len(jobs) < self.cap[user]
              or self.pending(user) < self.cap[user])
        if ok:
            self.admitted += 1
        else:
            self.dropped += 1
        return ok

    def track(self, user: int, job: object) -> None:
        if self.model.closed_loop:
            self._pending[user].append(job)


def account_shares(source: str) -> np.ndarray:
    """Share of CPU jobs per account, busiest first, in the Cedar/Graham sample (for the record of
    how ``account_zipf`` was chosen; not needed at run time)."""
    import csv
    import gzip
    from collections import Counter

    counts: Counter[str] = Counter()
    with gzip.open(source, "rt", newline="") as fh:
        for row in csv.DictReader(fh):
            if "gpu" not in row["req_tres"]:
                counts[row["account_id"]] += 1
    values = np.array(sorted(counts.values(), reverse=True), dtype=float)
    return values / values.sum()
