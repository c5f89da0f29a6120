"""The README's five-minute tour as `make tour` runs it (tools/tour.py): what is extracted
from the README, and that it can run as written. Nothing is installed or run here."""

from __future__ import annotations

import os
import re

import pytest

from tests.repo_files import ROOT, load_tour


tour = load_tour()


@pytest.fixture(scope="module")
def commands():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        return tour.extract(f.read())


def test_the_tour_has_the_expected_steps_in_order(commands):
    steps = list(dict.fromkeys(c.step for c in commands))
    assert steps == ["1. A model", "2. Convert", "3. Compress", "4. Export", "5. Run it",
                     "6. Benchmark"]
    programs = [c.program for c in commands]
    assert programs.index("albert-tf-finetune") < programs.index("albert-tf-compress") \
        < programs.index("albert-tf-export") < programs.index("albert-tflite-run") \
        < programs.index("albert-tf-benchmark")
    exports = {c.flags()["format"]: c.flags() for c in commands if c.program == "albert-tf-export"}
    assert set(exports) == {"saved_model", "tflite", "openvino", "onnx"}
    # one sequence length: the TFLite export carries the mobile SDKs' metadata (checked)
    assert "," not in exports["tflite"]["seq_lengths"]
    assert {"albert-tf-convert", "albert-tflite-evaluate", "albert-tflite-benchmark",
            "python"} <= set(programs)
    # the tour-sized flags: the tour config, a short compression
    assert any(c.flags().get("config_file") == "finetune_sst2_tour" for c in commands)
    assert any("num_train_steps" in c.flags() for c in commands
               if c.program == "albert-tf-compress")


def test_every_command_is_a_console_script_reading_only_what_the_tour_wrote(commands):
    assert tour.lint(commands, tour.console_scripts(), tour.experiment_names()) == []


def test_network_commands_live_outside_the_bash_blocks(commands):
    """Published weights need the network: they are in the README (a text block) but not
    in the tour, and no tour command reaches for the Hub."""
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        section = "\n".join(tour.tour_section(f.read())[0])
    assert "hf download albert/albert-base-v2" in section
    assert "--input=hf/albert-base-v2" in section
    for c in commands:
        assert "albert-base-v2" not in c.text and not re.search(r"\bhf download\b", c.text)


def test_every_benchmark_runtime_of_the_tour_exists(commands):
    from albert_tf.benchmark import targets   # no TensorFlow import
    for c in commands:
        if c.program == "albert-tf-benchmark":
            assert set(c.flags()["runtimes"].split(",")) <= set(targets.names())


README = """# x

## A five-minute tour

**1. A model**: text

```bash
albert-tf-finetune --task=sst2 --config_file=finetune_sst2_tour \\
    --model_dir=runs/a   # a comment
# a comment line
albert-tf-export --model_dir=runs/a/best --format=onnx --output=server/x
```

```text
albert-tf-convert --from=hf --input=hf/albert-base-v2 --output_dir=models/base
```

**2. Run it**: more

```bash
python -c "from albert_tf.export import OnnxClassifier; OnnxClassifier('server/x').predict(['a'])"
albert-tflite-run --model=edge/missing --text="a b"
albert-nope --x=1
```

## Next section

```bash
albert-tf-info
```
"""


def test_extraction_joins_continuations_and_skips_other_blocks_and_sections():
    commands = tour.extract(README)
    assert [(c.step, c.program, c.line) for c in commands] == [
        ("1. A model", "albert-tf-finetune", 8), ("1. A model", "albert-tf-export", 11),
        ("2. Run it", "python", 21), ("2. Run it", "albert-tflite-run", 22),
        ("2. Run it", "albert-nope", 23)]
    assert commands[0].flags() == {"task": "sst2", "config_file": "finetune_sst2_tour",
                                   "model_dir": "runs/a"}
    assert tour.written_paths(commands[0]) == ["runs/a"]
    assert tour.read_paths(commands[1]) == ["runs/a/best"]
    assert tour.read_paths(commands[2]) == ["server/x"]


def test_lint_names_an_unknown_program_a_path_nothing_wrote_and_an_unshipped_config():
    commands = tour.extract(README.replace("finetune_sst2_tour", "finetune_nope"))
    problems = tour.lint(commands, tour.console_scripts(), tour.experiment_names())
    assert len(problems) == 3, problems
    assert "finetune_nope is not a shipped experiment" in problems[0]
    assert "reads edge/missing, which no earlier tour command writes" in problems[1]
    assert "albert-nope: not a console script" in problems[2]


def test_the_step_checks_read_what_the_tools_print(tmp_path):
    def result(text, stdout="", stderr=""):
        return tour.Result(tour.Command("s", text, 1), 1.0, stdout, stderr, 0)

    notes = {}
    ok = result("albert-tflite-evaluate --model=edge/x --task=sst2",
                "edge/x (int8): accuracy 0.7729 on 872 dev examples (1.0s)\n")
    assert tour.check_step(ok, str(tmp_path), notes) == []
    assert notes == {"edge/x dev accuracy": 0.7729}
    low = result(ok.command.text, "edge/x (int8): accuracy 0.5000 on 872 dev examples\n")
    assert "learned too little" in tour.check_step(low, str(tmp_path), {})[0]
    noisy = result("albert-tf-info", "| albert_base | 30000 | 128 | 768 |",
                   "I0000 00:00:17.1 port.cc:153] oneDNN custom operations are on.\n")
    assert "library lines" in tour.check_step(noisy, str(tmp_path), {})[0]
    # Python-level library lines count on stdout too (in the tour; the newest-in-range
    # smoke, where new releases may warn, checks C++ log lines only).
    warned = result("albert-tf-info", "| albert_base | 30000 | 128 | 768 |\n"
                    "WARNING:tensorflow:From x.py:3: is deprecated\n")
    assert "library lines without --verbose (1)" in tour.check_step(warned, str(tmp_path), {})[0]
    assert tour.check_step(warned, str(tmp_path), {}, peers=True) == []
    assert "library lines" in tour.check_step(noisy, str(tmp_path), {}, peers=True)[0]
    bench = "albert-tf-benchmark --runtimes=tflite_dynamic,torch_int8"
    timed = "    best             tflite_dynamic    1 x   64: median      0.5 ms\n"
    skip = ("  torch_int8: skipped: the Python package 'torch' is not installed "
            "(pip install 'albert-tf[peers]' or pip install torch)\n")
    assert tour.check_step(result(bench, timed + skip), str(tmp_path), {}) == []
    silent = tour.check_step(result(bench, timed), str(tmp_path), {})
    assert silent and "torch_int8: neither timed nor skipped" in silent[0]


def test_the_setup_extras_are_pinned_and_the_tests_hold_the_peers():
    """`peers` (the benchmark's peers) is a user-facing extra that `test` includes, and
    every requirement of every extra has its exact version in constraints.txt."""
    import runpy
    import setuptools
    captured = {}
    original = setuptools.setup
    setuptools.setup = lambda **kwargs: captured.update(kwargs)
    try:
        runpy.run_path(os.path.join(ROOT, "setup.py"), run_name="__main__")
    finally:
        setuptools.setup = original
    extras = captured["extras_require"]
    assert {"onnx", "openvino", "peers", "test"} <= set(extras)
    assert set(extras["peers"]) <= set(extras["test"])
    assert {"torch", "transformers", "sympy", "onnxruntime", "openvino", "nncf"} <= {
        re.split(r"[<>=!~ ]", r)[0] for r in extras["peers"]}
    with open(os.path.join(ROOT, "constraints.txt"), encoding="utf-8") as f:
        pinned = {line.split("==")[0].strip().lower().replace("_", "-")
                  for line in f if "==" in line}
    names = {re.split(r"[<>=!~ \[]", r)[0].lower().replace("_", "-")
             for r in captured["install_requires"] + [r for v in extras.values() for r in v]}
    assert not names - pinned, f"not in constraints.txt (make constraints): {names - pinned}"


def test_the_newest_in_range_smoke_names_what_differs_from_the_pins(tmp_path):
    """--newest (CI): the upgraded venv's versions against constraints.txt, and a benchmark
    runtime skipped although the peers are installed is a failure there."""
    constraints = "# pins\ntorch==2.13.0\nonnxruntime==1.31.1\nMarkupSafe==3.0.4\n"
    freeze = ("torch==2.14.1\nonnxruntime==1.31.1\nmarkupsafe==3.0.4\ntriton==3.8.0\n"
              "albert-tf @ file:///tmp/albert_tf-0.1.0-py3-none-any.whl\n")
    assert tour.version_changes(constraints, freeze) == (["torch 2.13.0 -> 2.14.1"],
                                                         ["triton==3.8.0"])
    # the tested set installs PyTorch's +cpu build of the pinned version
    assert tour.version_changes(constraints, "torch==2.13.0+cpu\n") == ([], [])
    skip = ("  torch_int8: skipped: the Python package 'torch' is not installed "
            "(pip install 'albert-tf[peers]' or pip install torch)\n")
    bench = tour.Result(tour.Command("s", "albert-tf-benchmark --runtimes=torch_int8", 1), 1.0,
                        skip, "", 0)
    assert tour.check_step(bench, str(tmp_path), {}) == []
    [problem] = tour.check_step(bench, str(tmp_path), {}, peers=True)
    assert problem.startswith("benchmark runtime torch_int8: skipped with the peers installed")
