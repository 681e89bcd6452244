"""The Fenwick tree and the min-heap of span ends that earlier plan searches kept their window in
(issue 37: the heap until the ninth session, the tree until the tenth; ``plan_maps``' bitmap and
end-ordered spans replaced them). Only ``sim_plan_search_profile.py`` (its counting copy of the
ninth session's search) and ``sim_plan_search_cost.py`` (its edited variants) still call them, so
they live beside those scripts, not in the simulator (eleventh session's cleanup).
"""

from __future__ import annotations

try:
    from numba import njit
except ImportError:  # pragma: no cover
    njit = None


def _tree_add(tree, i, d):  # noqa: ANN001, ANN202
    """Fenwick tree: add ``d`` at 1-based position ``i``."""
    n = len(tree) - 1
    while i <= n:
        tree[i] += d
        i += i & -i


def _tree_select(tree, n, top, k):  # noqa: ANN001, ANN202
    """Fenwick tree: the 0-based position of the k-th 1 (there are at least k); ``top``: the
    largest power of two <= n."""
    pos = 0
    step = top
    while step > 0:
        if pos + step <= n and tree[pos + step] < k:
            pos += step
            k -= tree[pos]
        step //= 2
    return pos


def _heap_push(heap_e, heap_n, size, e, node):  # noqa: ANN001, ANN202
    """Min-heap on ``heap_e`` (``heap_n`` alongside): push; the new size."""
    i = size
    while i > 0:
        up = (i - 1) // 2
        if heap_e[up] <= e:
            break
        heap_e[i] = heap_e[up]
        heap_n[i] = heap_n[up]
        i = up
    heap_e[i] = e
    heap_n[i] = node
    return size + 1


def _heap_pop(heap_e, heap_n, size):  # noqa: ANN001, ANN202
    """Min-heap: drop the top; the new size."""
    size -= 1
    e = heap_e[size]
    node = heap_n[size]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= size:
            break
        if c + 1 < size and heap_e[c + 1] < heap_e[c]:
            c += 1
        if heap_e[c] >= e:
            break
        heap_e[i] = heap_e[c]
        heap_n[i] = heap_n[c]
        i = c
    if size > 0:
        heap_e[i] = e
        heap_n[i] = node
    return size


if njit is not None:
    _tree_add = njit(cache=True)(_tree_add)
    _tree_select = njit(cache=True)(_tree_select)
    _heap_push = njit(cache=True)(_heap_push)
    _heap_pop = njit(cache=True)(_heap_pop)
