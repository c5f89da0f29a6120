"""The installed console scripts as a user runs them: from a directory outside the
repository, without ``ALBERT_TF_DATA_DIR`` unless a test sets it.

Each subprocess imports TensorFlow (~5-10 s), so the checks are combined: 10 processes.
"""

from __future__ import annotations

import os

import pytest

# Shared with tests/test_command_failures.py (tests/console_scripts.py).
from console_scripts import NOISE
from console_scripts import finish as _finish
from console_scripts import one_error_line as _one_error_line
from console_scripts import start as _start


@pytest.mark.slow
def test_finetune_errors_are_one_line(tmp_path):
    """No data directory; one without SST-2; an unknown task: one line each, no noise."""
    empty = tmp_path / "empty_data"
    empty.mkdir()
    common = ["--config_file=tiny_ci", f"--model_dir={tmp_path / 'model'}"]
    runs = [_start(tmp_path, "albert-tf-finetune", "--task=sst2", *common),
            _start(tmp_path, "albert-tf-finetune", "--task=sst2", f"--data_dir={empty}",
                   *common),
            _start(tmp_path, "albert-tf-finetune", "--task=no_such_task", *common)]
    (code1, _, err1), (code2, _, err2), (code3, _, err3) = [_finish(p) for p in runs]

    line = _one_error_line(err1)
    assert code1 != 0 and "--data_dir" in line and "ALBERT_TF_DATA_DIR" in line, err1

    line = _one_error_line(err2)
    assert code2 != 0 and os.path.join("glue", "SST-2", "train.tsv") in line, err2
    assert "--data_dir" in line and "ALBERT_TF_DATA_DIR" in line, err2

    line = _one_error_line(err3)
    assert code3 != 0 and "no_such_task" in line, err3
    for name in ("sst2", "cola", "mr", "subj", "squad", "--task=NAME",
                 "--params_override=task.train_file="):
        assert name in line, f"{name!r} not in: {line}"
    assert not (tmp_path / "model" / "checkpoints").exists()


def test_other_binaries_without_data(tmp_path):
    """albert-tf-run and albert-tflite-evaluate name the flag and the variable too."""
    runs = [_start(tmp_path, "albert-tf-run", f"--output_dir={tmp_path / 'run'}"),
            _start(tmp_path, "albert-tflite-evaluate", "--model=missing", "--task=sst2")]
    for process in runs:
        code, _, err = _finish(process)
        line = _one_error_line(err)
        assert code != 0 and "--data_dir" in line and "ALBERT_TF_DATA_DIR" in line, err
    assert not (tmp_path / "run").exists()


def test_quiet_start_and_progress_output(tmp_path):
    good = _start(tmp_path, "albert-tf-info", "--models=albert_tiny")
    misspelled = _start(tmp_path, "albert-tf-info", "--models=albert_bse")
    code, out, err = _finish(good)
    assert code == 0, err
    assert "| albert_tiny |" in out
    noisy = [line for line in err.splitlines() if any(w in line.lower() for w in NOISE)]
    assert not noisy, err
    code, _, err = _finish(misspelled)     # a misspelled name: one line listing the real ones
    line = _one_error_line(err)
    assert code != 0 and "'albert_bse'" in line and "albert_base" in line, err


HELP = {
    "albert-tf-finetune": ["--task", "--data_dir", "--model_dir", "--config_file", "--verbose"],
    "albert-tf-export": ["--model_dir", "--format", "--quantization", "--data_dir"],
    "albert-tf-compress": ["--init_model", "--stages", "--data_dir"],
    "albert-tf-run": ["--experiment", "--data_dir", "--output_dir"],
    "albert-tflite-evaluate": ["--model", "--task", "--data_dir", "--verbose"],
}


def test_help_lists_the_binarys_own_flags_briefly(tmp_path):
    runs = {name: _start(tmp_path, name, "--help") for name in HELP}
    for name, process in runs.items():
        code, out, err = _finish(process)
        assert code == 0, err         # absl's own --help exits 1: run_app makes it 0
        lines = out.splitlines()
        assert len(lines) < 150, f"{name} --help: {len(lines)} lines"
        for flag in HELP[name]:
            assert flag in out or flag.replace("--", "--[no]") in out, \
                f"{name} --help lacks {flag}:\n{out}"
        # absl / TensorFlow internals are not listed (they are under --helpfull).
        assert "--tf_" not in out and "--logtostderr" not in out and "--pdb" not in out, out
        noisy = [line for line in err.splitlines() if any(w in line.lower() for w in NOISE)]
        assert not noisy, err


def console_scripts() -> list[str]:
    """Every console script of the installed albert-tf (its entry points: setup.py's list)."""
    from importlib import metadata
    return sorted(e.name for e in metadata.distribution("albert-tf").entry_points
                  if e.group == "console_scripts")


def test_every_console_script_answers_help_with_exit_0(tmp_path):
    """``--help`` (and absl's ``--helpfull``, ``-h``) is an answer, not an error: exit 0,
    the usage on stdout, nothing on stderr; an unknown flag still exits non-zero in one
    line with the ``<command>: error:`` prefix every failure has."""
    scripts = console_scripts()
    assert len(scripts) >= 16 and "albert-tf-export" in scripts and \
        "albert-tflite-run" in scripts, scripts
    runs = {(name, flag): _start(tmp_path, name, flag) for name in scripts
            for flag in ("--help", "-h")}
    runs[("albert-tf-export", "--helpfull")] = _start(tmp_path, "albert-tf-export", "--helpfull")
    for (name, flag), process in runs.items():
        code, out, err = _finish(process)
        assert code == 0 and out.strip() and not err.strip(), (name, flag, code, err)
    for name in scripts:
        code, _, err = _finish(_start(tmp_path, name, "--no_such_flag=1"))
        line = _one_error_line(err)
        assert code != 0 and line.startswith(f"{name}: error:"), (name, line)
        assert "no_such_flag" in line or "arguments are required" in line, (name, line)


@pytest.mark.slow
def test_importing_and_using_the_library_is_quiet(tmp_path):
    """``import albert_tf`` and its first model (which imports TensorFlow) print nothing:
    no oneDNN / CUDA ``cuInit`` / CPU-feature lines; ``ALBERT_TF_VERBOSE=1`` shows them."""
    import subprocess
    import sys
    code = ("import albert_tf\n"
            "model = albert_tf.build_encoder(albert_tf.load_config('albert_tiny'))\n"
            "print(model.count_params())\n")
    quiet = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                           text=True, env=_env_without_tf_settings())
    assert quiet.returncode == 0 and quiet.stdout.strip().isdigit(), quiet.stderr
    assert quiet.stderr == "", quiet.stderr
    loud = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, env=_env_without_tf_settings(ALBERT_TF_VERBOSE="1"))
    assert loud.returncode == 0 and "oneDNN" in loud.stderr, loud.stderr


def _env_without_tf_settings(**extra: str) -> dict[str, str]:
    from console_scripts import env
    return env(**extra)
