"""A multi-worker pretraining run (`albert-tf-pretrain --distribution_strategy=
multi_worker_mirrored`, two worker processes on 127.0.0.1) that loses a worker to SIGKILL
and, restarted with the same command, gets a preemption notice (SIGTERM), ends, restarted
again, with the weights and step count of an uninterrupted run. (One run stopped twice, not
two runs stopped once: each two-worker start costs ~35 CPU-s, mostly fixed.)"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from training_runs import free_ports, reported_checkpoint_step

import albert_tf
from albert_tf.training.preemption import RESTART_EXIT_CODE
from tests import training_fixtures

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STEPS = 100
INTERVAL = 10
TIMEOUT = 600  # generous: the CPUs may be shared


class Cluster:
    """Two `albert-tf-pretrain` worker processes with their own TF_CONFIG."""

    def __init__(self, model_dir, records, steps=STEPS, overrides=""):
        cluster = {"worker": [f"127.0.0.1:{p}" for p in free_ports(2)]}
        command = [sys.executable, "-m", "albert_tf.bin.pretrain", "--config_file=tiny_ci",
                   f"--model_dir={model_dir}", f"--train_files={records}",
                   f"--num_train_steps={steps}", "--mode=train",
                   "--distribution_strategy=multi_worker_mirrored",
                   "--params_override=trainer.steps_per_loop=2,"
                   f"trainer.checkpoint_interval={INTERVAL},trainer.validation_interval=0"
                   + overrides]
        self.model_dir = model_dir
        self.workers = []
        for index in range(2):
            env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", TF_CONFIG=json.dumps(
                {"cluster": cluster, "task": {"type": "worker", "index": index}}))
            self.workers.append(subprocess.Popen(command, env=env, cwd=ROOT, text=True,
                                                 stdout=subprocess.PIPE,
                                                 stderr=subprocess.PIPE))

    def checkpoint_step(self) -> int:
        """The newest checkpoint the chief's manager has recorded (0 when none)."""
        return reported_checkpoint_step(self.model_dir)

    def wait_for_checkpoint(self, step: int) -> None:
        deadline = time.time() + TIMEOUT
        while self.checkpoint_step() < step:
            assert all(w.poll() is None for w in self.workers), self.finish()
            assert time.time() < deadline, f"no checkpoint at step {step} in time"
            time.sleep(0.05)

    def finish(self) -> list[tuple[int, str, str]]:
        """(returncode, stdout, stderr) of each worker once it has exited."""
        results = []
        try:
            for worker in self.workers:
                out, err = worker.communicate(timeout=TIMEOUT)
                results.append((worker.returncode, out, err))
        finally:
            for worker in self.workers:
                if worker.poll() is None:
                    worker.kill()
        return results


def _final_weights(model_dir) -> list[np.ndarray]:
    return albert_tf.load_pretrainer(os.path.join(model_dir, "final")).get_weights()


def _restarts_at(model_dir, records, start_step) -> Cluster:
    """The cluster restarted with the same command, once it has written its second
    periodic checkpoint after ``start_step``."""
    cluster = Cluster(model_dir, records)
    cluster.wait_for_checkpoint(start_step + 2 * INTERVAL)
    return cluster


def _resumed_continuously(chief_out, model_dir, start_step, last_step=None) -> None:
    """The chief's log: resumed from ``ckpt-<start_step>``, its first step the next loop's
    (not a restart from 0), its last ``last_step`` when given."""
    assert f"resumed from {model_dir}/ckpt-{start_step} at step {start_step}" in chief_out, \
        chief_out[-2000:]
    steps = [int(l.split()[1].split("/")[0]) for l in chief_out.splitlines()
             if l.startswith("step ")]
    assert steps[0] == start_step + 2, steps
    assert last_step is None or steps[-1] == last_step, steps


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    path = tmp_path_factory.mktemp("records") / "train.tfrecord"
    return training_fixtures.write_pretraining_tfrecords(str(path), 256, 32, 5, seed=0)


@pytest.fixture(scope="module")
def reference(tmp_path_factory, records):
    """The final weights of an uninterrupted two-worker run (a callable: the run starts
    now, beside the first interrupted one, and is waited for when first needed)."""
    model_dir = str(tmp_path_factory.mktemp("reference"))
    cluster = Cluster(model_dir, records)
    weights = []

    def final_weights():
        if not weights:
            for code, out, err in cluster.finish():
                assert code == 0, out[-2000:] + err[-3000:]
            weights.extend(_final_weights(model_dir))
        return weights

    yield final_weights
    for worker in cluster.workers:
        if worker.poll() is None:
            worker.kill()


@pytest.mark.slow
def test_a_killed_worker_then_a_preemption_notice_each_stop_and_restarts_resume(
        tmp_path, records, reference):
    """One run, interrupted twice and restarted with the same command each time: worker 1
    killed (SIGKILL), then, in the restarted cluster, a preemption notice (SIGTERM) to
    worker 1; the third start completes with the uninterrupted run's weights."""
    model_dir = str(tmp_path / "run")
    killed = Cluster(model_dir, records)
    killed.wait_for_checkpoint(2 * INTERVAL)
    os.kill(killed.workers[1].pid, signal.SIGKILL)
    (chief_code, _, chief_err), (victim_code, _, _) = killed.finish()
    assert victim_code == -signal.SIGKILL
    # The survivor notices the lost heartbeats and says what to do, in one line.
    last = killed.checkpoint_step()
    assert 2 * INTERVAL <= last < STEPS - 3 * INTERVAL     # room for the second stop
    assert chief_code == RESTART_EXIT_CODE, chief_err[-3000:]
    line = chief_err.strip().splitlines()[-1]
    assert line.split(": ", 1)[1].startswith("stopped: worker lost: "
                                             "/job:worker/replica:0/task:1"), line
    assert f"ckpt-{last}" in line and "same command" in line
    assert not os.path.exists(os.path.join(model_dir, "final"))

    preempted = _restarts_at(model_dir, records, last)
    os.kill(preempted.workers[1].pid, signal.SIGTERM)
    results = preempted.finish()
    saved = []
    for code, _, err in results:
        assert code == RESTART_EXIT_CODE, err[-3000:]
        line = err.strip().splitlines()[-1]
        assert line.split(": ", 1)[1].startswith("stopped: preemption notice (SIGTERM): "
                                                 "saved a checkpoint at step "), line
        saved.append(int(line.split("at step ")[1].split()[0]))
    # Both workers saved at the step they agreed on, which need not be a periodic one.
    assert saved[0] == saved[1] == preempted.checkpoint_step()
    assert last + 2 * INTERVAL <= saved[0] < STEPS
    assert os.path.exists(os.path.join(model_dir, f"ckpt-{saved[0]}.index"))
    assert not os.path.exists(os.path.join(model_dir, "final"))
    _resumed_continuously(results[0][1], model_dir, last)

    results = Cluster(model_dir, records).finish()
    for code, out, err in results:
        assert code == 0, out[-2000:] + err[-3000:]
    _resumed_continuously(results[0][1], model_dir, saved[0], STEPS)
    assert os.path.exists(os.path.join(model_dir, f"ckpt-{STEPS}.index"))
    weights = _final_weights(model_dir)
    assert len(weights) == len(reference())
    for got, want in zip(weights, reference()):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_a_wall_clock_budget_stops_every_worker_at_the_same_step(tmp_path, records):
    """``trainer.max_seconds`` is read from each worker's clock; the workers agree before
    stopping (one stopping alone would leave the other waiting in a collective)."""
    model_dir = str(tmp_path / "run")
    results = Cluster(model_dir, records, steps=100_000,
                      overrides=",trainer.max_seconds=1").finish()
    for code, out, err in results:
        assert code == 0, out[-2000:] + err[-3000:]
    line = next(l for l in results[0][1].splitlines() if "max_seconds=1 reached" in l)
    stopped = int(line.rsplit("step ", 1)[1].rstrip("."))
    assert 0 < stopped < 100_000
    assert os.path.exists(os.path.join(model_dir, f"ckpt-{stopped}.index"))
    assert os.path.exists(os.path.join(model_dir, "final", "config.json"))


@pytest.mark.slow
def test_sigterm_on_one_device_saves_at_the_next_loop_and_restores_the_handler(tmp_path):
    """In process (one device): SIGTERM during training saves a checkpoint at the end of
    the running loop, raises `Preempted`, and gives SIGTERM its previous handler back."""
    from albert_tf.training.preemption import Preempted
    from albert_tf.training.trainer import run_experiment
    config = training_fixtures.tiny_experiment(str(tmp_path), steps=40)
    config.trainer.checkpoint_interval = 0      # no periodic checkpoints: only the save
    previous = signal.getsignal(signal.SIGTERM)

    def log(line):
        if line.startswith("step 10/"):
            os.kill(os.getpid(), signal.SIGTERM)

    with pytest.raises(Preempted, match="saved a checkpoint at step 15"):
        run_experiment(config, "train", task=training_fixtures.ToyClassificationTask(config),
                       log=log)
    assert signal.getsignal(signal.SIGTERM) is previous
    assert os.path.exists(tmp_path / "ckpt-15.index")
    assert not os.path.exists(tmp_path / "final")
    # The same call again resumes there and finishes.
    result = run_experiment(config, "train", task=training_fixtures.ToyClassificationTask(config))
    assert result["step"] == 40


def test_a_lost_peer_is_named_with_the_checkpoint_to_resume_from(tmp_path, monkeypatch):
    """The survivor's line, from the error texts TF gives (seen in the runs above): lost
    heartbeats (a worker killed) and a reset connection (the chief killed)."""
    from albert_tf.backend import tf
    from albert_tf.training import preemption
    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    heartbeat = tf.errors.UnavailableError(None, None, (
        "Graph execution error:\n\nCollective ops is aborted by: Error reported from "
        "/job:worker/task:1: The following tasks are unhealthy (stopped sending heartbeats):\n"
        "/job:worker/replica:0/task:1\nThe tasks have crashed."))
    # A single-worker strategy has no peers: nothing is a peer failure.
    assert preemption.peer_failure(heartbeat, strategy, str(tmp_path)) is None
    monkeypatch.setattr(preemption, "is_multi_worker", lambda strategy: True)
    lost = preemption.peer_failure(heartbeat, strategy, str(tmp_path))
    assert str(lost).startswith("worker lost: /job:worker/replica:0/task:1 stopped sending "
                                "heartbeats")
    assert f"no checkpoint was written yet in {tmp_path}" in str(lost)
    reset = tf.errors.UnavailableError(None, None, (
        "Graph execution error:\n\nDetected at node while/CollectiveReduceV2_2 defined at "
        "(most recent call last):\n  File \"trainer.py\", line 216, in train_fn\n\n"
        "recvmsg:Connection reset by peer\nAdditional GRPC error information from remote "
        "target /job:worker/replica:0/task:0 while calling CompleteInstance"))
    assert "/job:worker/replica:0/task:0 failed: UnavailableError: recvmsg:Connection reset" \
        in str(preemption.peer_failure(reset, strategy, str(tmp_path)))
    bad_input = tf.errors.InvalidArgumentError(None, None, "bad")
    assert preemption.peer_failure(bad_input, strategy, str(tmp_path)) is None
