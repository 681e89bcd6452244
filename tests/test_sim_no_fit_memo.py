"""``PartitionState.find_nodes`` remembers the shapes that found too few nodes (``no_fit``) until
resources are given back: its answers equal those of the search itself (``_find_nodes``) after
any sequence of allocations, releases and epilogs."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from asad.slurm.sim.cluster import PartitionState
from asad.slurm.sim.config import PartitionSpec

N = 5

op_st = st.one_of(
    st.tuples(st.just("alloc"), st.lists(st.integers(0, N - 1), min_size=1, max_size=3, unique=True),
              st.integers(1, 4), st.integers(0, 600)),
    st.tuples(st.just("release"), st.integers(0, 20), st.booleans()),  # with an epilog?
    st.tuples(st.just("epilog"), st.integers(0, 20)),
    st.tuples(st.just("epilog_end"), st.integers(0, 20)),
    # few shapes, so that a shape is asked again after resources came back
    st.tuples(st.just("ask"), st.integers(1, 3), st.sampled_from([2, 4]), st.sampled_from([0, 800]), st.booleans()),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(op_st, min_size=1, max_size=40), st.sampled_from(["consec", "bestfit"]))
def test_remembered_no_fit_answers_equal_the_search(ops, select) -> None:  # noqa: ANN001
    """Asked shapes (with and without ``completing_ok``) between jobs starting, ending and
    nodes completing an epilog: every answer equals the unremembered search's. Fails when a
    release or an epilog's end does not forget the remembered shapes (checked by breaking each)."""
    part = PartitionState(PartitionSpec("p", N, 4, 1000), 0)
    part.select = select
    running: list = []
    completing: list = []
    for op in ops:
        if op[0] == "alloc":
            _, nodes, c, m = op
            if all(part.free_c[n] >= c and part.free_m[n] >= m for n in nodes):
                running.append((nodes, c, m, part.allocate(nodes, c, m, 100.0)))
        elif op[0] == "release" and running:
            nodes, c, m, slots = running.pop(op[1] % len(running))
            part.release(nodes, c, m, slots)
            if op[2]:
                part.start_completing(nodes)  # the ended job's epilog
                completing.append(nodes)
        elif op[0] == "epilog" and running:
            part.start_completing(running[op[1] % len(running)][0])
            completing.append(running[op[1] % len(running)][0])
        elif op[0] == "epilog_end" and completing:
            part.end_completing(completing.pop(op[1] % len(completing)))
        elif op[0] == "ask":
            _, k, c, m, ok = op
            want = None if k * c > part.free_cores_total else part._find_nodes(k, c, m, None, None, ok)
            assert part.find_nodes(k, c, m, completing_ok=ok) == want


def test_a_release_and_an_epilogs_end_give_a_remembered_shape_its_nodes_again() -> None:
    """The two ways resources come back, each after the shape was found not to fit."""
    part = PartitionState(PartitionSpec("p", 2, 4, 1000), 0)
    part.select = "consec"
    slots = part.allocate([0, 1], 2, 0, 100.0)  # 4 cores free in all, none of the nodes has 4
    assert part.find_nodes(1, 4, 0) is None
    assert (1, 4, 0, False) in part.no_fit
    part.release([0, 1], 2, 0, slots)
    part.start_completing([0])
    assert part.find_nodes(1, 4, 0) == [1]
    assert part.find_nodes(2, 4, 0) is None  # node 0 still runs its epilog
    assert part.find_nodes(2, 4, 0, completing_ok=True) == [0, 1]  # the will-run view: its cores are free
    part.end_completing([0])
    assert part.find_nodes(2, 4, 0) == [0, 1]
