"""Bad input, tried as a new user would: each mistake gets a clear message naming the file, the
line and the field, and nothing is submitted; what is legal but dangerous (shell metacharacters,
unicode) reaches Slurm intact and never through a shell."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
import structlog

from asad.daemon.wiring import CommandBuilder, make_runner, run_to_completion
from asad.cli.main import main
from asad.common.config import Settings
from asad.core.engine import Context
from asad.slurm.cli import batch_script, sbatch_args
from asad.slurm.sim import make_simulator
from asad.spec.load import parse_workflow
from asad.store.repo import Store



@pytest.fixture(autouse=True)
def _logging_back_to_defaults():
    """``main()`` points structlog at this test's captured stderr; later tests must not inherit it."""
    yield
    structlog.reset_defaults()


NEW_USER_MISTAKES = {
    # file text -> (line, words the message must contain)
    "tab": ("name: x\nstages:\n\t- name: a\n    run: 'true'\n", 3, ["tab", "spaces"]),
    "cpus-as-word": ("name: x\nstages:\n  - name: a\n    cpus: four\n    run: 'true'\n", 4, ["stages[0].cpus", "four"]),
    "typo-key": ("name: x\nstages:\n  - name: a\n    cpu: 4\n    run: 'true'\n", 4, ["unknown key 'cpu'", "cpus"]),
    "memory-word": ("name: x\nstages:\n  - name: a\n    mem: lots\n    run: 'true'\n", 4, ["stages[0].mem", "4G"]),
    "time-in-words": ("name: x\nstages:\n  - name: a\n    time: 1 hour\n    run: 'true'\n", 4,
                      ["stages[0].time", "2h"]),
    "unclosed-quote": ("name: x\nstages:\n  - name: a\n    run: \"echo hi\n", 4, ["quote"]),
    "no-stages": ("name: x\nstages: []\n", 2, ["no stages"]),
    "space-in-name": ("name: x\nstages:\n  - name: a b\n    run: 'true'\n", 3, ["stages[0].name", "whitespace"]),
    "after-unknown": ("name: x\nstages:\n  - name: a\n    run: 'true'\n    after: [zz]\n", 5, ["after", "zz"]),
    "cycle": ("name: x\nstages:\n  - {name: a, run: 'true', after: [b]}\n  - {name: b, run: 'true', after: [a]}\n",
              3, ["cycle"]),
    "list-not-map": ("- name: a\n  run: 'true'\n", 1, []),
    "unicode-name": ("name: métå\nstages:\n  - name: a\n    run: 'true'\n", 1, ["non-ASCII"]),
    "shell-in-name": ("name: x\nstages:\n  - name: a;rm\n    run: 'true'\n", 3, ["stages[0].name"]),
    "too-big": ("name: x\nstages:\n  - name: a\n    cpus: 100000\n    run: 'true'\n", 3, ["cpus", "100000"]),
    "unknown-partition": ("name: x\nstages:\n  - name: a\n    partition: gpu\n    run: 'true'\n", 3,
                          ["unknown partition 'gpu'", "main"]),
}


@pytest.mark.parametrize("case", sorted(NEW_USER_MISTAKES))
def test_new_user_mistake_is_named_and_nothing_is_submitted(tmp_path, capsys, case):
    text, line, words = NEW_USER_MISTAKES[case]
    wf = tmp_path / "workflow.yaml"
    wf.write_text(text)
    assert main(["submit", str(wf), "--backend", "sim"]) == 3
    err = capsys.readouterr().err
    assert err.startswith(f"asad: error: {wf}:{line}:"), err
    for w in words:
        assert w in err, (w, err)
    assert "Nothing was submitted" in err and "Traceback" not in err
    assert main(["status", "--all", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["stages"] == []


def test_refusal_by_slurm_is_shown_verbatim_and_explained(db_url, capsys):
    """A partition that went away between ``asad submit`` and the stage's turn: the simulator's
    sbatch refuses the job; the workflow fails with Slurm's words and what to do about them."""
    spec = parse_workflow("name: gone\nstages:\n"
                          "  - {name: a, cpus: 2, time: 10m, run: 'true', simulate: {runtime: 5m}}\n"
                          "  - {name: b, cpus: 2, time: 10m, partition: gpu, run: 'true', simulate: {runtime: 5m}}\n")
    sim = make_simulator("small", load=0.0, seed=1)
    store = Store(db_url)
    runner = make_runner(Settings(), store, sim)
    wf = store.add_workflow(spec, sim.now(), strategy="per-stage")  # stored without validation against sim
    runner.load()
    run_to_completion(runner, sim, [wf.id])
    (row,) = store.workflow_rows([wf.id])
    (loaded,) = store.load_workflows([wf.id])
    tags = [st.comment for st in sim.find(f"asad:{store.store_id}:").values()]
    store.close()
    verbatim = "sbatch: error: Batch job submission failed: Invalid partition name specified"
    assert row.state == "FAILED"
    assert verbatim in row.message and "sinfo -s" in row.message
    assert verbatim in loaded.stages["b"].message
    assert len(tags) == 1  # a ran; b never reached the queue, nothing half-submitted
    main(["show", str(wf.id), "--db", db_url])
    out = capsys.readouterr().out
    assert verbatim in out and "fix 'partition:'" in out


DANGEROUS_RUN = ("echo \"$HOME\" 'it''s' $(whoami) `id -u` ; ünïcødé ✓ | cat > /dev/null && echo done "
                 "# \\ \\\\ \" ' $((1+2)) {a,b} *")
DANGEROUS_ENV = "héllo $(rm -rf /nonexistent) ; `false` 'q' \"dq\" \\n"


def _danger_spec():  # noqa: ANN202
    text = ("name: danger\nstages:\n  - name: stage_1.x-y\n    cpus: 1\n"
            f"    run: {json.dumps(DANGEROUS_RUN)}\n    env: {{GREETING: {json.dumps(DANGEROUS_ENV)}}}\n")
    return parse_workflow(text)


def test_metacharacters_and_unicode_survive_the_batch_script(tmp_path, monkeypatch):
    """The generated batch script parses (bash -n) and hands the stage wrapper the exact texts."""
    import asad.daemon.wiring

    spec = _danger_spec()
    assert spec.stages[0].run == DANGEROUS_RUN
    stub = tmp_path / "stub-wrapper.sh"
    stub.write_text('#!/bin/bash\nprintf "%s\\n" "$ASAD_STAGE" "$ASAD_COMMAND" "$GREETING"\n')
    stub.chmod(0o755)
    monkeypatch.setattr(asad.daemon.wiring, "WRAPPER", stub)
    store = Store(f"sqlite:///{tmp_path / 'a.db'}")
    wf = store.add_workflow(spec, 0.0, strategy="per-stage")
    store.close()
    script = CommandBuilder(tmp_path / "runs")(wf, "stage_1.x-y", None)
    assert DANGEROUS_ENV not in script  # env: values travel in the job's environment (asad/core/job_env.py)
    path = tmp_path / "job.sh"
    path.write_text(script)
    assert subprocess.run(["bash", "-n", str(path)], capture_output=True).returncode == 0
    # as sbatch --export=ALL,GREETING hands the job the value from sbatch's own environment
    env = {**os.environ, **wf.spec.stage("stage_1.x-y").env_dict()}
    out = subprocess.run(["bash", str(path)], capture_output=True, text=True, check=True, env=env).stdout
    assert out == f"stage_1.x-y\n{DANGEROUS_RUN}\n{DANGEROUS_ENV}\n"


def test_sbatch_gets_arguments_as_a_list_and_the_script_on_stdin(tmp_path):
    """No shell between asad and sbatch: every option is one argv element; the command travels in
    the batch script (stdin), never on the command line."""
    from asad.core.engine import EngineConfig
    from asad.core.learned import Learned

    spec = _danger_spec()
    store = Store(f"sqlite:///{tmp_path / 'a.db'}")
    wf = store.add_workflow(spec, 0.0, strategy="per-stage")
    store.close()
    ctx = Context(EngineConfig(store_id="abc123"), Learned(lambda *_: None, "last"), [])
    req = ctx.request_for(wf, "stage_1.x-y")
    args = sbatch_args(req)
    assert isinstance(args, list) and all(isinstance(a, str) for a in args)
    assert f"--comment={req.comment}" in args and req.comment == f"asad:abc123:{wf.id}:stage_1.x-y:1"
    assert not any(DANGEROUS_RUN in a for a in args)
    script = batch_script(req.__class__(**{**req.__dict__, "command": "echo hi"}))
    assert script.startswith("#!")


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_stage_wrapper_runs_the_command_text_exactly(tmp_path):
    """End to end with the real stage wrapper: the command runs as written (a shell command is
    what the user wrote, run inside the allocation by the wrapper, not by asad on the login node)."""
    command = "printf '%s|' \"$GREETING\" 'a b' \"ü ✓\" > out.txt"
    spec = parse_workflow(f"name: w\nstages:\n  - name: s\n    run: {json.dumps(command)}\n"
                          f"    env: {{GREETING: {json.dumps(DANGEROUS_ENV)}}}\n")
    store = Store(f"sqlite:///{tmp_path / 'a.db'}")
    wf = store.add_workflow(spec, 0.0, strategy="per-stage")
    store.close()
    script = CommandBuilder(tmp_path / "runs")(wf, "s", None)
    path = tmp_path / "job.sh"
    path.write_text(script)
    proc = subprocess.run(["bash", str(path)], capture_output=True, text=True, cwd=tmp_path,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), **wf.spec.stage("s").env_dict()},
                          timeout=60)
    out = tmp_path / "out.txt"
    assert out.exists(), proc.stdout + proc.stderr
    assert out.read_text() == f"{DANGEROUS_ENV}|a b|ü ✓|"


def test_huge_workflow_validates_stores_and_plans(tmp_path):
    """10,000 stages: validated, stored and planned (the first 100 submitted) in seconds, not
    minutes; the whole run is measured by ``asad bench overhead --huge 10000`` (docs/results/ops.md)."""
    from asad.bench.overhead import measure_huge

    result = measure_huge(10_000, 100, run=False)
    assert result.first_tick_submitted == 100
    assert result.state == "ACTIVE"


@pytest.mark.slow
def test_huge_workflow_runs_to_completion():
    from asad.bench.overhead import measure_huge

    result = measure_huge(2_000, 100, run=True)
    assert result.state == "COMPLETED"


def test_a_node_configuration_refusal_names_the_gpus_the_job_asked_for():
    """The audit's stage asked for 'gres: gpu:3' on nodes of 2 GPUs; the hint spoke of CPUs and memory."""
    from asad.slurm.refusals import refusal_text
    from asad.slurm.backend import JobRequest

    slurm = "sbatch: error: Batch job submission failed: Requested node configuration is not available"
    plain = refusal_text(slurm, JobRequest(name="x", command="c", cpus_per_task=64))
    assert "that many CPUs or that much memory" in plain
    gpus = refusal_text(slurm, JobRequest(name="x", command="c", gres="gpu:3"))
    assert gpus.startswith(f"Slurm refused the job: {slurm}") and "gres gpu:3" in gpus and "%G" in gpus


def test_a_list_of_mail_types_unquoted_in_braces_is_explained_and_a_yaml_list_works():
    """The audit pasted the old hint, mail: {type: END,FAIL, ...}: YAML reads FAIL as a key."""
    from asad.spec.load import SpecError

    def mail_of(value: str):  # noqa: ANN202
        spec = parse_workflow(f"name: m\nstages:\n  - {{name: a, time: 5m, run: 'true', mail: {value}}}\n")
        return spec.stages[0].slurm.mail_type, spec.stages[0].slurm.mail_user

    with pytest.raises(SpecError) as refused:
        mail_of("{type: END,FAIL, user: me@example.org}")
    assert "'FAIL' reads as a key of its own" in str(refused.value) and 'type: "END,FAIL"' in str(refused.value)
    assert mail_of('{type: "END,FAIL", user: me@example.org}') == ("END,FAIL", "me@example.org")
    assert mail_of("{type: [END, FAIL], user: me@example.org}") == ("END,FAIL", "me@example.org")


def test_jobs_run_a_copy_of_the_wrapper_that_never_changes_under_them(tmp_path, monkeypatch):
    """Bash reads a script as it runs it: a job whose wrapper was rewritten in place while it ran
    failed with a syntax error half-way through (seen 2026-11-27, the wrapper edited during a real
    bench). Jobs run a copy in the run folder, named by its content and never written again."""
    import asad.daemon.wiring

    wrapper = tmp_path / "asad-stage.sh"
    wrapper.write_text("#!/bin/bash\necho first version\n")
    monkeypatch.setattr(asad.daemon.wiring, "WRAPPER", wrapper)
    store = Store(f"sqlite:///{tmp_path / 'a.db'}")
    wf = store.add_workflow(_danger_spec(), 0.0, strategy="per-stage")
    store.close()
    runs = tmp_path / "runs"
    first = CommandBuilder(runs)(wf, "stage_1.x-y", None)
    (copy,) = runs.glob("asad-stage-*.sh")
    assert str(copy) in first and str(wrapper) not in first
    assert copy.read_text() == "#!/bin/bash\necho first version\n"
    wrapper.write_text("#!/bin/bash\necho second version\n")  # asad upgraded or edited in place
    second = CommandBuilder(runs)(wf, "stage_1.x-y", None)
    assert copy.read_text() == "#!/bin/bash\necho first version\n"  # the running job's file is untouched
    assert str(copy) not in second and len(list(runs.glob("asad-stage-*.sh"))) == 2
    assert CommandBuilder(runs)(wf, "stage_1.x-y", None) == second  # one copy per content
    dry = CommandBuilder(tmp_path / "dry", create=False)(wf, "stage_1.x-y", None)
    assert str(wrapper) in dry and not (tmp_path / "dry").exists()  # --dry-run writes nothing
