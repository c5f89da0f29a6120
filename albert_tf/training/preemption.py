"""Fault tolerance of a training run: preemption notices and lost workers.

What a run does when something outside it stops it:

* **Preemption notice (SIGTERM)** on any worker (spot VMs, Kubernetes and Slurm send
  SIGTERM before killing): the workers agree on a step, all save a checkpoint there
  (the chief into ``model_dir``), and exit with `RESTART_EXIT_CODE`. The agreement and
  the signal handling are TensorFlow's `tf.distribute.experimental.PreemptionCheckpointHandler`
  (it talks through the cluster's coordination service); the checkpoint is the trainer's
  own (``ckpt-<step>``, written by its `tf.train.CheckpointManager`), so a resumed run
  cannot tell a preemption checkpoint from a periodic one. The save happens at the next
  boundary of the trainer's loop (``trainer.steps_per_loop`` steps), so keep a loop
  shorter than the platform's grace period.
* **A lost worker** (SIGKILL, a crashed VM): the others notice the missing heartbeats
  within the coordination service's timeout (about 10 s), their collective ops abort, and
  they exit with one line naming the lost task and the last complete checkpoint, also
  with `RESTART_EXIT_CODE`.

In both cases the user's scheduler (or the user) restarts every worker with the same
command; the trainer resumes from the latest checkpoint of ``model_dir`` and skips the
batches consumed before it, so the run ends with the loss and step count of an
uninterrupted one. TF's handler does nothing on GCE CPU VMs (its own limitation); there
the periodic checkpoints (``trainer.checkpoint_interval``) are what a restart resumes from.
"""

from __future__ import annotations

import re
import signal
import threading
from typing import Callable

from albert_tf.backend import tf

# EX_TEMPFAIL (sysexits.h): "temporary failure; the user is invited to retry". Exit code
# of a run stopped from outside after saving (preemption) or by a lost peer worker.
RESTART_EXIT_CODE = 75

_TASK_NAME = re.compile(r"/job:\w+/replica:\d+/task:\d+")


class RunInterrupted(Exception):
    """The run was stopped by something outside it; rerunning the same command resumes."""

    exit_code = RESTART_EXIT_CODE


class Preempted(RunInterrupted):
    """A preemption notice (SIGTERM) was received and a checkpoint saved."""


class PeerLost(RunInterrupted):
    """Another worker of a multi-worker run stopped (killed, crashed, unreachable)."""


class Interrupted(RunInterrupted):
    """Ctrl-C (SIGINT) stopped the run; it resumes from its last checkpoint."""

    exit_code = 130           # 128 + SIGINT, as a shell reports it


def interrupted(model_dir: str, step: int) -> Interrupted:
    """The `Interrupted` of a run stopped by Ctrl-C at ``step``: where it resumes from and
    the command that resumes it (this one, again)."""
    import shlex
    import sys
    from albert_tf import cli
    latest = tf.train.latest_checkpoint(model_dir)
    where = (f"the last checkpoint is {latest}, where" if latest else
             f"no checkpoint was written yet in {model_dir}, so")
    again = shlex.join([cli.command_name(), *sys.argv[1:]])
    return Interrupted(f"interrupted (Ctrl-C) at step {step}; {where} the same command "
                       f"resumes: {again}")


def is_multi_worker(strategy: tf.distribute.Strategy) -> bool:
    """True for a `MultiWorkerMirroredStrategy` whose ``TF_CONFIG`` names a cluster."""
    resolver = getattr(strategy, "cluster_resolver", None)
    return (isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)
            and resolver is not None and bool(resolver.cluster_spec().jobs))


def peer_failure(error: Exception, strategy: tf.distribute.Strategy, model_dir: str
                 ) -> PeerLost | None:
    """A `PeerLost` for an error that a lost peer causes in a multi-worker step (collectives
    aborted, coordination service unavailable); ``None`` for any other error."""
    if not is_multi_worker(strategy) or not isinstance(
            error, (tf.errors.UnavailableError, tf.errors.AbortedError,
                    tf.errors.CancelledError, tf.errors.DeadlineExceededError)):
        return None
    message = error.message or str(error)
    tasks = sorted(set(_TASK_NAME.findall(message)))
    who = ", ".join(tasks) if tasks else "a peer worker"
    if "heartbeat" in message:
        what = f"{who} stopped sending heartbeats (killed or crashed)"
    else:
        # The cause, past TF's preamble (``Graph execution error:``, ``Detected at node
        # ... defined at (most recent call last):`` and the indented traceback).
        causes = [line for line in message.splitlines() if line.strip()
                  and not line.startswith((" ", "\t", "Graph execution error", "Detected at"))]
        what = f"{who} failed: {type(error).__name__}: {(causes or [message])[0].strip()}"
    latest = tf.train.latest_checkpoint(model_dir)
    resume = (f"the last complete checkpoint is {latest}" if latest
              else f"no checkpoint was written yet in {model_dir}")
    return PeerLost(f"worker lost: {what}; {resume}. Restart every worker with the same "
                    "command to resume.")


class PreemptionWatch:
    """For the duration of one training run (``with``): SIGTERM on any worker leads, at the
    next `check`, to a checkpoint on every worker at the same step and `Preempted`.

    Args:
      strategy: the run's strategy (one-device, mirrored and multi-worker; TPU runs are
        left to the TPU's own preemption handling).
      model_dir: the directory the trainer restores from.
      save: saves the trainer's checkpoint (every worker calls it).
      step: the current global step, for the messages.
    """

    def __init__(self, strategy: tf.distribute.Strategy, model_dir: str,
                 save: Callable[[], None], step: Callable[[], int]):
        self._strategy = strategy
        self._model_dir = model_dir
        self._save = save
        self._step = step
        self._handler = None
        self._previous_sigterm = None

    @property
    def active(self) -> bool:
        return self._handler is not None

    def __enter__(self) -> "PreemptionWatch":
        if isinstance(self._strategy, tf.distribute.TPUStrategy) \
                or threading.current_thread() is not threading.main_thread():
            return self   # signal handlers can only be installed from the main thread
        self._previous_sigterm = signal.getsignal(signal.SIGTERM)
        config = tf.distribute.experimental.TerminationConfig(
            exit_fn=self._exit, save_fn=self._save)
        # An empty checkpoint: TF's handler restores (nothing) from model_dir and keeps its
        # call counter on it; the trainer's own checkpoint stays free of handler state.
        manager = tf.train.CheckpointManager(tf.train.Checkpoint(), self._model_dir,
                                             max_to_keep=None)
        self._handler = tf.distribute.experimental.PreemptionCheckpointHandler(
            getattr(self._strategy, "cluster_resolver", None), manager,
            termination_config=config)
        return self

    def check(self) -> None:
        """Call once per training loop on every worker (the same number of times on each):
        saves and raises `Preempted` once a preemption notice has reached the cluster."""
        if self._handler is not None:
            self._handler.save_checkpoint_if_preempted()

    def _exit(self) -> None:
        raise Preempted(f"preemption notice (SIGTERM): saved a checkpoint at step "
                        f"{self._step()} in {self._model_dir}. Run the same command again "
                        "to resume.")

    def __exit__(self, *exc) -> None:
        handler, self._handler = self._handler, None
        if handler is None:
            return
        # Stops the handler's watcher threads (what its __del__ would do, but now).
        for stop in ("_stop_poll_termination_signal_thread",
                     "_stop_cluster_wise_termination_watcher_thread"):
            try:
                getattr(handler, stop)()
            except Exception:  # noqa: BLE001  (best effort: a peer may be gone already)
                pass
        if self._previous_sigterm is not None:
            signal.signal(signal.SIGTERM, self._previous_sigterm)


__all__ = ["Interrupted", "PeerLost", "Preempted", "PreemptionWatch", "RESTART_EXIT_CODE",
           "RunInterrupted", "interrupted",
           "is_multi_worker", "peer_failure"]
