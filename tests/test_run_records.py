"""A training run's records as a user meets them (issue #44): ``--mode=eval`` and
``--mode=predict`` read the run (its ``experiment.yaml``, checkpoints and model directories)
and leave what training wrote as it was; Ctrl-C is one line that names the command that
resumes, and the command resumes; any command stopped by Ctrl-C leaves nothing behind.

Each case runs the installed console scripts in a fresh directory, on real SST-2 data.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import signal
import subprocess

import pytest

from console_scripts import env, one_error_line, path

RUN_ARGS = ["--task=sst2", "--config_file=tiny_ci", "--model_dir=runs/tiny"]


def _records(run: str) -> dict[str, tuple[str, int]]:
    """``{relative path: (sha256, mtime_ns)}`` of every file training wrote in ``run``."""
    found = {}
    for directory, _, files in os.walk(run):
        for name in files:
            full = os.path.join(directory, name)
            with open(full, "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
            found[os.path.relpath(full, run)] = (digest, os.stat(full).st_mtime_ns)
    return found


def _run(cwd, *args: str, data_dir: str) -> subprocess.CompletedProcess:
    return subprocess.run([path("albert-tf-finetune"), *args], cwd=cwd, text=True,
                          capture_output=True, env=env(ALBERT_TF_DATA_DIR=data_dir),
                          timeout=600)


@pytest.mark.slow
def test_eval_and_predict_read_the_run_and_leave_its_records(tmp_path, data_dir):
    """A run of a non-default size (albert_tiny, seq 32) evaluates and predicts from
    ``--model_dir`` alone (no --task, no --config_file: it used to be a 78-line
    ValueError on the default config); the records training wrote (experiment.yaml,
    eval_results.json, best_metric.json, checkpoints, best/, final/) keep their bytes
    and times; eval writes its own eval_step<N>.json, equal to the training's last
    evaluation of the same weights."""
    trained = _run(tmp_path, *RUN_ARGS, "--num_train_steps=4", data_dir=data_dir)
    assert trained.returncode == 0, trained.stderr
    run = str(tmp_path / "runs" / "tiny")
    before = _records(run)
    assert "experiment.yaml" in before and "eval_results.json" in before

    evaluated = _run(tmp_path, "--mode=eval", "--model_dir=runs/tiny", data_dir=data_dir)
    assert evaluated.returncode == 0, evaluated.stderr
    predicted = _run(tmp_path, "--mode=predict", "--model_dir=runs/tiny", data_dir=data_dir)
    assert predicted.returncode == 0, predicted.stderr

    after = _records(run)
    assert {k: v for k, v in after.items() if k in before} == before
    new = sorted(set(after) - set(before))
    assert [n for n in new if not n.startswith("summaries/")] == \
        ["eval_step4.json", "predictions_test.tsv"], new
    with open(os.path.join(run, "eval_step4.json")) as f:
        record = json.load(f)
    with open(os.path.join(run, "eval_results.json")) as f:
        training = json.load(f)
    assert record["mode"] == "eval" and record["step"] == 4
    assert record["results"]["accuracy"] == pytest.approx(training["accuracy"], abs=1e-6)
    assert "max_seq_length: 32" in record["experiment"]       # the run's own settings
    assert f"wrote {os.path.join(run, 'eval_step4.json')}" in evaluated.stdout
    with open(os.path.join(run, "predictions_test.tsv"), encoding="utf-8") as f:
        rows = f.read().splitlines()
    with open(os.path.join(data_dir, "glue", "SST-2", "test.tsv"), encoding="utf-8") as f:
        assert len(rows) == len(f.read().splitlines())       # a header and one row each
    _predict_into_a_full_disk(tmp_path, data_dir)


def _predict_into_a_full_disk(tmp_path, data_dir: str) -> None:
    """Predictions that do not fit (an 8 KiB tmpfs, in a private mount namespace) are one
    line, and leave no partial file that would block the next try."""
    if subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode != 0:
        return                                          # no mount namespace on this machine
    full = tmp_path / "full"
    full.mkdir()
    script = (f'mount -t tmpfs -o size=8k tmpfs {full} && "$0" "$@"; code=$?; '
              f'ls -A {full}; exit $code')
    done = subprocess.run(["unshare", "-m", "sh", "-c", script, path("albert-tf-finetune"),
                           "--mode=predict", "--model_dir=runs/tiny",
                           f"--predict_output={full / 'p.tsv'}"], cwd=tmp_path, text=True,
                          capture_output=True, env=env(ALBERT_TF_DATA_DIR=data_dir),
                          timeout=600)
    assert done.returncode == 2, done.stderr
    assert "the disk is full" in one_error_line(done.stderr)
    assert done.stdout.splitlines()[-1].startswith("resumed from")   # `ls -A`: nothing


def ctrl_c_able() -> None:
    """(``preexec_fn``) SIGINT at its default in the child, as in a user's terminal: a
    runner that starts the tests in the background (``cmd &``, nohup) has it ignored, and
    an ignored SIGINT is inherited, so Python would never raise KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _wait_for_line(process: subprocess.Popen, text: str) -> list[str]:
    """The stdout lines of ``process`` up to the first holding ``text``."""
    lines = []
    for line in process.stdout:
        lines.append(line)
        if text in line:
            return lines
    raise AssertionError(f"no line with {text!r}: {''.join(lines)}")


@pytest.mark.slow
def test_ctrl_c_in_training_is_one_line_naming_the_command_that_resumes(tmp_path, data_dir):
    """SIGINT while training: exit 130, one stderr line with the step, the checkpoint it
    resumes from and the command; that command, run again, resumes there and finishes."""
    args = [*RUN_ARGS, "--num_train_steps=400", "--steps_per_loop=10",
            "--checkpoint_interval=20", "--validation_interval=0"]
    process = subprocess.Popen([path("albert-tf-finetune"), *args], cwd=tmp_path, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env=env(ALBERT_TF_DATA_DIR=data_dir), preexec_fn=ctrl_c_able)
    try:
        _wait_for_line(process, "step 30/400")
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode == 130, err
    line = one_error_line(err)
    again = shlex.join(["albert-tf-finetune", *args])
    assert line.startswith("albert-tf-finetune: stopped: interrupted (Ctrl-C) at step "), line
    assert "the last checkpoint is " in line and line.endswith(f"the same command resumes: {again}")
    checkpoint = line.split("the last checkpoint is ")[1].split(",")[0]
    resumed = _run(tmp_path, *args, data_dir=data_dir)
    assert resumed.returncode == 0, resumed.stderr
    assert f"resumed from {checkpoint}" in resumed.stdout
    assert "training done at step 400" in resumed.stdout


def _imported_tensorflow(pid: int) -> bool:
    """Whether process ``pid`` has loaded TensorFlow's native library."""
    try:
        with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as f:
            return "_pywrap_tensorflow" in f.read()
    except OSError:
        return False


@pytest.mark.slow
@pytest.mark.parametrize("signum, code, said", [
    (signal.SIGINT, 130, "interrupted (Ctrl-C)"), (signal.SIGTERM, 143, "terminated (SIGTERM)")])
def test_ctrl_c_during_an_export_leaves_nothing(tmp_path, signum, code, said):
    """SIGINT (or SIGTERM: ``kill``, ``timeout``) once the export has loaded TensorFlow:
    exit 130 (143), one line, no output and no staging directory left in the working
    directory."""
    from tests.compression_fixtures import tiny_model_dir
    model = tiny_model_dir(str(tmp_path / "model"))
    work = tmp_path / "work"
    work.mkdir()
    process = subprocess.Popen(
        [path("albert-tf-export"), f"--model_dir={model}", "--format=tflite",
         "--output=edge", "--quantization=dynamic"], cwd=work, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env(), preexec_fn=ctrl_c_able)
    try:
        while process.poll() is None and not _imported_tensorflow(process.pid):
            try:
                process.wait(timeout=0.05)
            except subprocess.TimeoutExpired:
                pass
        assert process.poll() is None, "the export ended before it loaded TensorFlow"
        process.send_signal(signum)
        _, err = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode == code, err
    line = one_error_line(err)
    assert line.startswith(f"albert-tf-export: {said}: nothing half-written"), line
    assert os.listdir(work) == []
