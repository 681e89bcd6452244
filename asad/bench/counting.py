"""A backend proxy that counts the calls asad makes, per method and per tick.

Slurm sites ban users whose tools hammer slurmctld; the overhead bench wraps the backend in
this proxy to show that asad's status traffic stays at one batched call of each kind per
poll interval, however many workflows it tracks.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

# What asks slurmctld/slurmdbd about jobs (as opposed to changing them: submit, cancel).
STATUS_CALLS = ("poll", "usage", "find")
COUNTED = ("submit", "cancel", "poll", "usage", "find", "estimate_start", "partitions")


class CountingBackend:
    """Delegates everything to ``inner``; counts the protocol's calls (``total`` and since
    :meth:`take`) and the job ids each status call asked about."""

    def __init__(self, inner: Any):
        self._inner = inner
        self.name = inner.name
        self.total: Counter[str] = Counter()
        self._since: Counter[str] = Counter()
        self.ids_asked: Counter[str] = Counter()

    def take(self) -> Counter[str]:
        """Calls since the previous ``take`` (one tick's worth, when called once per tick)."""
        out, self._since = self._since, Counter()
        return out

    def _count(self, method: str) -> None:
        self.total[method] += 1
        self._since[method] += 1

    def submit(self, req):  # noqa: ANN001, ANN201
        self._count("submit")
        return self._inner.submit(req)

    def cancel(self, job_ids):  # noqa: ANN001, ANN201
        self._count("cancel")
        return self._inner.cancel(job_ids)

    def poll(self, job_ids):  # noqa: ANN001, ANN201
        self._count("poll")
        self.ids_asked["poll"] += len(job_ids)
        return self._inner.poll(job_ids)

    def usage(self, job_ids):  # noqa: ANN001, ANN201
        self._count("usage")
        self.ids_asked["usage"] += len(job_ids)
        return self._inner.usage(job_ids)

    def find(self, tag):  # noqa: ANN001, ANN201
        self._count("find")
        return self._inner.find(tag)

    def estimate_start(self, req):  # noqa: ANN001, ANN201
        self._count("estimate_start")
        return self._inner.estimate_start(req)

    def pending_load(self):  # noqa: ANN201
        self._count("pending_load")
        return self._inner.pending_load()

    def partitions(self):  # noqa: ANN201
        self._count("partitions")
        return self._inner.partitions()

    def __getattr__(self, item: str) -> Any:  # now, run_until, cluster_name ...
        return getattr(self._inner, item)
