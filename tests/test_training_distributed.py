"""MirroredStrategy (2 logical CPUs) and MultiWorkerMirroredStrategy (2 local worker
processes) give the same loss after N steps as one device with the same global batch (run
here, in the test's process, while the others run)."""

import json
import os
import subprocess
import sys

import pytest
from training_runs import free_ports

from tests import training_fixtures

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "training_fixtures.py")  # run by path: one worker
STEPS = 10
TIMEOUT = 600  # generous: the CPUs may be shared


def _command(model_dir, *extra):
    return [sys.executable, FIXTURES, f"--model_dir={model_dir}",
            f"--steps={STEPS}", "--batch_size=8", *extra]


def _env(**extra):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    env.pop("TF_CONFIG", None)
    env.update(extra)
    return env


def _final_loss(output: str) -> float:
    lines = [l for l in output.splitlines() if l.startswith("FINAL_LOSS ")]
    assert lines, output[-3000:]
    return json.loads(lines[-1].split(" ", 1)[1])


@pytest.mark.slow
def test_mirrored_and_multi_worker_match_one_device(tmp_path):
    ports = free_ports(2)
    cluster = {"worker": [f"127.0.0.1:{p}" for p in ports]}
    procs = {
        "mirrored": subprocess.Popen(_command(tmp_path / "mirrored", "--strategy=mirrored",
                                              "--num_cpu_devices=2"), env=_env(), cwd=ROOT,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True),
    }
    for index in range(2):
        tf_config = json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}})
        procs[f"worker{index}"] = subprocess.Popen(
            _command(tmp_path / "multi", "--strategy=multi_worker_mirrored"),
            env=_env(TF_CONFIG=tf_config), cwd=ROOT, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True)
    outputs = {}
    try:
        # training_fixtures.main's one-device run, here: no TensorFlow start-up
        losses = {"one_device": training_fixtures.run_toy(str(tmp_path / "one"), STEPS,
                                                          8)["train"]["loss"]}
        for name, proc in procs.items():
            outputs[name], _ = proc.communicate(timeout=TIMEOUT)
            assert proc.returncode == 0, f"{name} failed:\n{outputs[name][-3000:]}"
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
    losses.update({name: _final_loss(out) for name, out in outputs.items()})
    reference = losses["one_device"]
    for name, loss in losses.items():
        assert loss == pytest.approx(reference, rel=1e-5, abs=1e-6), losses
    # the strategies really ran with 2 replicas
    assert os.path.exists(tmp_path / "multi" / f"ckpt-{STEPS}.index")
    assert not os.path.exists(tmp_path / "multi" / ".worker_1_tmp")
