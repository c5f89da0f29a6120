"""kill -9 during training, then the same command again: resumes from the last checkpoint
with a continuous step count, and ends with the metrics of an uninterrupted run (run here,
in the test's process, while the killed one runs)."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from training_runs import reported_checkpoint_step

from tests import training_fixtures

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "training_fixtures.py")  # run by path: one worker
STEPS = 40


def _command(model_dir, delay):
    return [sys.executable, FIXTURES, f"--model_dir={model_dir}",
            f"--steps={STEPS}", "--checkpoint_interval=10", "--steps_per_loop=5",
            "--mode=train_and_eval", f"--delay={delay}"]


def _env():
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    env.pop("TF_CONFIG", None)
    return env


def _parse(output, prefix):
    lines = [l for l in output.splitlines() if l.startswith(prefix)]
    assert lines, output[-3000:]
    return json.loads(lines[-1].split(" ", 1)[1])


@pytest.mark.slow
def test_kill_and_resume_matches_uninterrupted(tmp_path):
    killed_dir = tmp_path / "killed"
    victim = subprocess.Popen(_command(killed_dir, 0.3), env=_env(), cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    deadline = time.time() + 600  # generous: the CPUs may be shared
    try:
        while reported_checkpoint_step(killed_dir) < 20:
            assert victim.poll() is None, "the run finished before it could be killed"
            assert time.time() < deadline, "no checkpoint at step 20 in time"
            time.sleep(0.05)
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait(timeout=30)
    finally:
        if victim.poll() is None:
            victim.kill()
    assert victim.returncode == -signal.SIGKILL
    assert not os.path.exists(killed_dir / "final")
    # The manager may have recorded a later checkpoint between our poll and the kill.
    last_complete = reported_checkpoint_step(killed_dir)
    assert 20 <= last_complete < STEPS
    resuming = subprocess.Popen(_command(killed_dir, 0.0), env=_env(), cwd=ROOT,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # The uninterrupted reference, meanwhile: training_fixtures.main's run, here.
        reference = training_fixtures.run_toy(str(tmp_path / "reference"), STEPS,
                                              checkpoint_interval=10, steps_per_loop=5,
                                              mode="train_and_eval")
        out, err = resuming.communicate(timeout=600)
    finally:
        if resuming.poll() is None:
            resuming.kill()
    resumed = subprocess.CompletedProcess(resuming.args, resuming.returncode, out, err)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]

    lines = resumed.stdout.splitlines()
    resume_line = next(l for l in lines if l.startswith("resumed from"))
    start = int(resume_line.rsplit(" ", 1)[1])
    assert start == last_complete and f"ckpt-{start}" in resume_line
    steps = [int(l.split()[1].split("/")[0]) for l in lines if l.startswith("step ")]
    assert steps == list(range(start + 5, STEPS + 1, 5))     # continuous, no restart at 0

    assert _parse(resumed.stdout, "FINAL_LOSS") == pytest.approx(reference["train"]["loss"],
                                                                 rel=1e-5)
    resumed_eval = _parse(resumed.stdout, "FINAL_EVAL")
    reference_eval = reference["eval"]
    assert resumed_eval["step"] == reference_eval["step"] == STEPS
    for key in ("accuracy", "loss", "f1"):
        assert resumed_eval[key] == pytest.approx(reference_eval[key], rel=1e-5, abs=1e-6), key
