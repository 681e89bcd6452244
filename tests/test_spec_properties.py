"""Properties of workflow.yaml loading: random DAGs order correctly and round-trip; damaged files
fail only with SpecError (never a traceback a user would see)."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asad.spec.load import SpecError, WorkflowSpec, parse_workflow

EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "examples").glob("*.yaml"))
TEXTS = [p.read_text(encoding="utf-8") for p in EXAMPLES]


@st.composite
def dags(draw) -> tuple[int, list[list[int]]]:
    n = draw(st.integers(min_value=1, max_value=25))
    preds = []
    for i in range(n):
        # an edge from any earlier stage, keeping the graph acyclic; listed in a shuffled file order
        preds.append(sorted(set(draw(st.lists(st.integers(0, i - 1), max_size=3))) if i else []))
    return n, preds


@settings(max_examples=100, deadline=None)
@given(dags(), st.randoms(use_true_random=False))
def test_random_dags_load_order_and_round_trip(dag, rnd):
    n, preds = dag
    file_order = list(range(n))
    rnd.shuffle(file_order)
    lines = ["name: random", "stages:"]
    for i in file_order:
        after = "[" + ", ".join(f"t{p}" for p in preds[i]) + "]"
        lines.append(f"  - {{name: t{i}, run: echo {i}, cpus: {1 + i % 4}, after: {after}}}")
    spec = parse_workflow("\n".join(lines) + "\n")
    order = spec.topo_order()
    assert sorted(order) == sorted(f"t{i}" for i in range(n))
    position = {name: k for k, name in enumerate(order)}
    for i in range(n):
        for p in preds[i]:
            assert position[f"t{p}"] < position[f"t{i}"]
            assert f"t{i}" in spec.successors(f"t{p}")
    assert set(spec.roots()) == {f"t{i}" for i in range(n) if not preds[i]}
    again = WorkflowSpec.from_dict(json.loads(json.dumps(spec.to_dict())))
    assert again == spec and again.topo_order() == order


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(TEXTS), st.lists(st.tuples(st.floats(0, 1), st.integers(0, 8),
                                                   st.text(alphabet=" \t\n:-[]{}\"'#&*!|>%@`,?0aZ\x00é", max_size=4)),
                                         min_size=1, max_size=4))
def test_damaged_files_fail_only_with_spec_error(text, edits):
    for where, cut, insert in edits:
        at = int(where * len(text))
        text = text[:at] + insert + text[at + cut:]
    try:
        parse_workflow(text, "damaged.yaml")
    except SpecError as err:
        message = str(err)
        assert message.startswith("damaged.yaml")
        assert err.problem and err.fix and "\n" not in err.field
