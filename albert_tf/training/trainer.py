"""The custom training loop shared by pretraining and every finetuning task.

One code path for every strategy: the model, optimizer and checkpoint are created
under ``strategy.scope()``, inputs come from ``distribute_datasets_from_function``,
and each step runs ``strategy.run``. Per step, on each replica:

1. forward + loss (the replica's share of the global mean, see `metrics`),
2. gradients (loss-scaled under ``mixed_float16``),
3. all-reduce SUM of the gradients over replicas (exactly the one-device gradient
   of the global batch), global-norm clipping, optimizer update.

State: a `tf.train.Checkpoint` (model, optimizer, whose ``iterations`` is the
global step) managed by `tf.train.CheckpointManager` in ``model_dir`` (keeps
``max_to_keep``; the TF checkpoint writer is atomic). A run resumes automatically
from the latest checkpoint of ``model_dir``; the input pipeline is deterministic
(seeded) and skips the batches consumed before the checkpoint, so a resumed run
sees exactly the data of an uninterrupted one. Otherwise ``--init_checkpoint``
initializes the weights (name-keyed, shapes checked).

Outputs in ``model_dir``: ``ckpt-N.*`` + ``checkpoint`` (training state),
``summaries/{train,eval}`` (TensorBoard: loss, metrics, learning rate,
steps/s, examples/s, tokens/s), ``final/`` and ``best/`` (model directories
written with `albert_tf.save_model_dir`), ``eval_results.json``,
``best_metric.json``, ``experiment.yaml``.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import sys
import tempfile
import time
from typing import Callable

import numpy as np

from albert_tf.backend import keras, tf  # noqa: I001  (first: selects Keras 2)
from tensorflow.core.framework import summary_pb2  # noqa: E402
from albert_tf import outputs
from albert_tf.checkpoints import save_model_dir
from albert_tf.training import distribute, preemption, preflight
from albert_tf.training.experiment_config import ExperimentConfig
from albert_tf.training.optimization import (build_optimizer, clip_gradients,
                                             current_learning_rate, inner_optimizer)
from albert_tf.training.preflight import InputDataError
from albert_tf.training.tasks import Task


def format_duration(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "?"
    seconds = int(max(0, seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m{seconds:02d}s" if hours else f"{minutes}m{seconds:02d}s"


def progress_line(step: int, total: int, logs: dict, steps_per_sec: float,
                  tokens_per_sec: float, elapsed: float) -> str:
    """``step 200/1000 (20%) | loss 3.1416 | ... | 4.20 steps/s | 9,876 tok/s | ETA 3m10s``."""
    parts = [f"step {step}/{total} ({100.0 * step / max(total, 1):.0f}%)"]
    for key, value in logs.items():
        parts.append(f"{key} {value:.3g}" if key == "learning_rate" else f"{key} {value:.4f}")
    eta = (total - step) / steps_per_sec if steps_per_sec > 0 else float("inf")
    parts.append(f"{steps_per_sec:.2f} steps/s")
    parts.append(f"{tokens_per_sec:,.0f} tok/s")
    parts.append(f"elapsed {format_duration(elapsed)}")
    parts.append(f"ETA {format_duration(eta)}")
    return " | ".join(parts)


def write_scalar(tag: str, value: float, step: int) -> None:
    """A TensorBoard scalar (same record as ``tf.summary.scalar``, without needing the
    tensorboard package installed to write it)."""
    metadata = summary_pb2.SummaryMetadata(
        plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars"))
    tf.summary.write(tag, tf.constant(float(value), tf.float32), step=step, metadata=metadata)


class Trainer:
    """Builds the model/optimizer/checkpoint for a task and runs train / eval / predict.

    ``mode`` (``train``, ``eval``, ``train_and_eval``, ``predict``): what the run directory
    is checked for (`preflight.check_run_directory`); a predict whose output goes elsewhere
    only reads it."""

    def __init__(self, config: ExperimentConfig, task: Task, strategy: tf.distribute.Strategy,
                 model_dir: str | None = None, log: Callable[[str], None] | None = None,
                 mode: str = "train"):
        self.config = config
        self.task = task
        self.strategy = strategy
        self.is_chief = distribute.is_chief(strategy)
        # A run directory is written into, never replaced (`preflight.check_run_directory`:
        # a new or empty directory, or a run of the same command); the other workers of a
        # multi-worker run share the chief's and check only where it is.
        model_dir = model_dir or config.model_dir
        if self.is_chief:
            self.model_dir = preflight.check_run_directory(config, model_dir, mode)
            if not preflight.reads_only(config, mode):
                outputs.mark_run_directory(self.model_dir, preflight.run_kind(config))
        else:
            self.model_dir = outputs.check_location(
                model_dir, flag="--model_dir",
                inputs=[("--init_checkpoint", config.model.init_checkpoint)])
            os.makedirs(self.model_dir, exist_ok=True)
        self._log = log or (lambda line: (print(line, flush=True)))
        trainer = config.trainer
        with strategy.scope():
            self.model = task.build_model()
            self.optimizer = build_optimizer(config.optimizer, trainer.train_steps,
                                             config.runtime.mixed_precision_dtype,
                                             config.runtime.loss_scale)
            # Create the slots now so that a restore is immediate (not deferred).
            inner_optimizer(self.optimizer).build(self.model.trainable_variables)
            self.checkpoint = tf.train.Checkpoint(model=self.model, optimizer=self.optimizer)
        self.global_step = self.optimizer.iterations
        checkpoint_dir = self.model_dir if self.is_chief else os.path.join(
            self.model_dir, f".worker_{distribute.worker_id(strategy)}_tmp")
        self.manager = tf.train.CheckpointManager(
            self.checkpoint, checkpoint_dir, max_to_keep=max(1, trainer.max_to_keep),
            step_counter=self.global_step)
        self._train_fn = None
        self._eval_fn = None
        self._writers: dict[str, tf.summary.SummaryWriter] = {}

    def log(self, line: str) -> None:
        if self.is_chief:
            self._log(line)

    # ------------------------------------------------------------------- state
    def restore_or_initialize(self) -> int:
        """Resumes from the latest checkpoint of model_dir, else applies init_checkpoint."""
        latest = tf.train.latest_checkpoint(self.model_dir)
        if latest:
            self._restore(latest)
            self.log(f"resumed from {latest} at step {int(self.global_step.numpy())}")
        elif self.config.model.init_checkpoint:
            report = self.task.initialize(self.model, self.config.model.init_checkpoint)
            self.log(f"initialized from {self.config.model.init_checkpoint}: {report.summary()}")
        return int(self.global_step.numpy())

    def _restore(self, latest: str) -> None:
        """Restores the training checkpoint ``latest``; one `CheckpointError` when it does
        not fit this experiment's model (another config) or cannot be read (damaged)."""
        from albert_tf.checkpoints import CheckpointError, UnreadableWeights, unreadable_weights
        try:
            with unreadable_weights(latest):
                self.checkpoint.restore(latest).assert_existing_objects_matched()
        except UnreadableWeights as e:    # damaged files: the run's own fix, not a model's
            raise CheckpointError(
                f"--model_dir={self.model_dir}: its latest checkpoint {latest} cannot be read "
                f"({e.cause}): its files are truncated or "
                "damaged; restore them from a copy, or start again with a new --model_dir "
                "(the run's best/ and final/ are model directories of their own).") from None
        except (AssertionError, ValueError) as e:
            cause = str(e).splitlines()[0][:200]
            raise CheckpointError(
                f"--model_dir={self.model_dir}: its checkpoint {latest} does not fit the model "
                f"of this experiment ({cause}); run with the settings it was trained with (for "
                "--mode=eval / predict: leave out --config_file, --model_config and model "
                "overrides; its experiment.yaml is read), or pass a new --model_dir.") from None

    def save_checkpoint(self) -> None:
        self.manager.save(checkpoint_number=int(self.global_step.numpy()))
        if not self.is_chief:
            shutil.rmtree(self.manager.directory, ignore_errors=True)

    def export(self, name: str) -> str | None:
        """Writes ``model_dir/<name>`` as a model directory (config.json + weights)."""
        if not self.is_chief:
            return None
        task_info, vocab = self.task.export_info()
        return save_model_dir(self.model, os.path.join(self.model_dir, name),
                              self.task.albert_config, task_info=task_info, vocab_file=vocab,
                              inputs=[("--init_checkpoint", self.config.model.init_checkpoint)],
                              flag=f"--model_dir/{name}")

    # -------------------------------------------------------------- summaries
    def writer(self, name: str):
        if name not in self._writers:
            if self.is_chief:
                self._writers[name] = tf.summary.create_file_writer(
                    os.path.join(self.model_dir, "summaries", name))
            else:
                self._writers[name] = tf.summary.create_noop_writer()
        return self._writers[name]

    def write_summaries(self, name: str, logs: dict, step: int) -> None:
        with self.writer(name).as_default(step=step):
            for key, value in logs.items():
                write_scalar(key, value, step)
        self.writer(name).flush()

    # ------------------------------------------------------------------- inputs
    def distributed_dataset(self, data_config, skip_steps: int = 0):
        task = self.task

        def dataset_fn(input_context):
            dataset = task.build_inputs(data_config, input_context)
            if data_config.is_training:
                if dataset.cardinality() != tf.data.INFINITE_CARDINALITY:
                    dataset = dataset.repeat()
                per_pipeline = max(1, input_context.num_replicas_in_sync
                                   // max(1, input_context.num_input_pipelines))
                # A resumed run skips the batches it trained on, unless a tf.data service
                # serves them: its job is not replayed from the start (skipping would only
                # make the workers mask and send batches for nothing).
                if skip_steps and not getattr(data_config, "data_service", ""):
                    dataset = dataset.skip(skip_steps * per_pipeline)
            return dataset.prefetch(tf.data.AUTOTUNE)

        return self.strategy.distribute_datasets_from_function(dataset_fn)

    # --------------------------------------------------------------- train step
    def _build_train_fn(self):
        task, model, optimizer, strategy = self.task, self.model, self.optimizer, self.strategy
        clip_norm = self.config.optimizer.clip_norm
        float16 = self.config.runtime.mixed_precision_dtype == "mixed_float16"
        names = [f"{m}_{part}" for m in task.train_metric_names() for part in ("num", "den")]

        def forward_backward(inputs):
            with tf.GradientTape() as tape:
                outputs = model(task.features(inputs), training=True)
                loss, sums = task.train_loss(inputs, outputs)
                scaled = optimizer.get_scaled_loss(loss) if float16 else loss
            variables = model.trainable_variables
            grads = tape.gradient(scaled, variables)
            if float16:
                grads = optimizer.get_unscaled_gradients(grads)
            return loss, sums, grads

        if self.config.runtime.jit_compile:
            forward_backward = tf.function(forward_backward, jit_compile=True, autograph=False)

        def step_fn(inputs):
            loss, sums, grads = forward_backward(inputs)
            variables = model.trainable_variables
            context = tf.distribute.get_replica_context()
            if context.num_replicas_in_sync > 1:
                grads = context.all_reduce(tf.distribute.ReduceOp.SUM, grads)
            grads, norm = clip_gradients(grads, clip_norm)
            optimizer.apply_gradients(zip(grads, variables), skip_gradients_aggregation=True)
            out = {"loss": loss, "tokens": task.tokens(inputs),
                   "examples": tf.cast(tf.shape(task.features(inputs)["input_mask"])[0],
                                       tf.float32),
                   "grad_norm": norm / float(strategy.num_replicas_in_sync)}
            out.update({k: tf.cast(sums[k], tf.float32) for k in names})
            return out

        keys = ["loss", "tokens", "examples", "grad_norm"] + names

        def train_fn(iterator, num_steps):
            """``num_steps`` (int32 scalar) steps on batches of ``iterator``; the sums of
            `keys` over them, each a float32 scalar."""
            def one_step(step, totals):
                per_replica = strategy.run(step_fn, args=(next(iterator),))
                return step + 1, {k: totals[k] + strategy.reduce(
                    tf.distribute.ReduceOp.SUM, per_replica[k], axis=None) for k in keys}

            totals = {k: tf.constant(0.0) for k in keys}
            _, totals = tf.while_loop(lambda step, _: step < num_steps, one_step,
                                      (tf.constant(0, tf.int32), totals))
            return totals

        # Without AutoGraph (the loop is an explicit while_loop, and nothing the step calls
        # branches on a tensor): converting the step's code, the task's losses and every
        # layer's `call` was a fifth of a fresh training process's start-up.
        return tf.function(train_fn, autograph=False)

    def _step_logs(self, totals: dict, num_steps: int) -> dict[str, float]:
        totals = {k: float(v) for k, v in totals.items()}
        logs = {"loss": totals["loss"] / num_steps}
        for name in self.task.train_metric_names():
            logs[name] = totals[f"{name}_num"] / max(totals[f"{name}_den"], 1e-9)
        logs["grad_norm"] = totals["grad_norm"] / num_steps
        return logs

    # ------------------------------------------------------------------- eval
    def _build_eval_fn(self):
        task, model, strategy = self.task, self.model, self.strategy

        def step_fn(inputs):
            outputs = model(task.features(inputs), training=False)
            return task.eval_outputs(inputs, outputs)

        def eval_fn(inputs):
            per_replica = strategy.run(step_fn, args=(inputs,))
            return {k: strategy.gather(v, axis=0) for k, v in per_replica.items()}

        return tf.function(eval_fn, autograph=False)   # see _build_train_fn

    def _run_split(self, data_config, max_steps: int = -1) -> dict[str, np.ndarray]:
        if self._eval_fn is None:
            self._eval_fn = self._build_eval_fn()
        collected: dict[str, list[np.ndarray]] = {}
        dataset = self.distributed_dataset(data_config)
        for i, inputs in enumerate(dataset):
            if 0 <= max_steps <= i:
                break
            for key, value in self._eval_fn(inputs).items():
                collected.setdefault(key, []).append(value.numpy())
        return {k: np.concatenate(v, axis=0) for k, v in collected.items()}

    def evaluate(self, step: int | None = None, record: bool = True) -> dict[str, float]:
        """Metrics of the validation split (the whole split unless validation_steps);
        ``record``: also written to ``eval_results.json``, the training's record of its
        latest evaluation (``--mode=eval`` writes its own, `record_evaluation`)."""
        step = int(self.global_step.numpy()) if step is None else step
        start = time.time()
        outputs = self._run_split(self.config.task.validation_data,
                                  self.config.trainer.validation_steps)
        results = self.task.reduce_eval(outputs)
        self.write_summaries("eval", results, step)
        results = dict(results, step=step)
        shown = " | ".join(f"{k} {v:.4f}" for k, v in results.items() if k != "step")
        self.log(f"eval at step {step}: {shown} ({time.time() - start:.1f}s)")
        if self.is_chief and record:
            write_json(os.path.join(self.model_dir, "eval_results.json"), results)
        return results

    def record_evaluation(self, results: dict) -> str:
        """Writes ``eval_step<N>.json`` (the metrics and the experiment they were computed
        with) for ``--mode=eval``, which leaves the training's records alone; returns its
        path."""
        step = int(results.get("step", self.global_step.numpy()))
        path = os.path.join(self.model_dir, f"eval_step{step}.json")
        if self.is_chief:
            write_json(path, {"mode": "eval", "step": step, "results": results,
                              "experiment": self.config.to_yaml()})
            self.log(f"wrote {path}")
        return path

    def predict(self) -> str:
        """Writes the predictions of the predict split (``task.predict_output``, else
        ``predictions_<split>.tsv`` in the run directory), staged in a hidden directory
        beside the file and renamed into place: a full disk leaves no partial file."""
        outputs = self._run_split(self.config.task.predict_data)
        path = self.config.task.predict_output or os.path.join(
            self.model_dir, f"predictions_{self.config.task.predict_data.split}.tsv")
        if self.is_chief:
            parent = os.path.dirname(os.path.abspath(path))
            os.makedirs(parent, exist_ok=True)
            stage = tempfile.mkdtemp(prefix=f".{os.path.basename(path)}.tmp-", dir=parent)
            try:
                written = self.task.predict(self.model, outputs,
                                            os.path.join(stage, os.path.basename(path)))
                path = os.path.join(parent, os.path.basename(written))
                os.replace(written, path)
            finally:
                shutil.rmtree(stage, ignore_errors=True)
            self.log(f"wrote {len(next(iter(outputs.values())))} predictions to {path}")
        return path

    # ------------------------------------------------------------------ best
    def _best_metric_name(self) -> tuple[str, str]:
        trainer = self.config.trainer
        if trainer.best_checkpoint_metric:
            return trainer.best_checkpoint_metric, trainer.best_checkpoint_metric_comp
        return self.task.main_metric, self.task.main_metric_comp

    def maybe_export_best(self, results: dict, step: int) -> None:
        name, comp = self._best_metric_name()
        if name not in results:
            raise KeyError(f"trainer.best_checkpoint_metric {name!r} is not an eval metric; "
                           f"available: {sorted(results)}.")
        path = os.path.join(self.model_dir, "best_metric.json")
        best = None
        if os.path.exists(path):
            with open(path) as f:
                best = json.load(f).get("value")
        value = results[name]
        better = best is None or (value > best if comp == "higher" else value < best)
        if better and self.is_chief:
            self.export("best")
            write_json(path, {"metric": name, "value": value, "step": step,
                              "results": results})
            self.log(f"new best {name} {value:.4f} at step {step}: exported {self.model_dir}/best")

    def _last_eval_step(self) -> int:
        path = os.path.join(self.model_dir, "eval_results.json")
        if not os.path.exists(path):
            return -1
        try:
            with open(path) as f:
                return int(json.load(f).get("step", -1))
        except (ValueError, OSError):
            return -1

    # ------------------------------------------------------------------ train
    def train(self, evaluate: bool = False) -> dict[str, float]:
        """Trains to ``trainer.train_steps`` (resuming), evaluating every
        ``validation_interval`` steps when ``evaluate``; returns the last logs."""
        cfg = self.config.trainer
        total = cfg.train_steps
        step = self.restore_or_initialize()
        if self._train_fn is None:
            self._train_fn = self._build_train_fn()
        if step >= total:
            self.log(f"model_dir already at step {step} >= train_steps {total}.")
        if evaluate and 0 < step < total and cfg.validation_interval > 0 \
                and step % cfg.validation_interval == 0 and self._last_eval_step() < step:
            # Killed between the checkpoint and the evaluation of this step: do it now.
            self.maybe_export_best(self.evaluate(step), step)
        dataset = self.distributed_dataset(self.config.task.train_data, skip_steps=step)
        watch = preemption.PreemptionWatch(self.strategy, self.model_dir, self.save_checkpoint,
                                           lambda: int(self.global_step.numpy()))
        try:
            with watch:
                last_logs, step = self._train_loop(iter(dataset), step, evaluate, watch)
        except KeyboardInterrupt:
            raise preemption.interrupted(self.model_dir, int(self.global_step.numpy())) from None
        self.export("final")
        self.log(f"training done at step {step}; wrote {self.model_dir}/final")
        return last_logs

    def _train_loop(self, iterator, step: int, evaluate: bool,
                    watch: preemption.PreemptionWatch) -> tuple[dict[str, float], int]:
        """Runs loops of ``steps_per_loop`` steps to ``train_steps``; checkpoints, evaluates
        and answers a preemption notice (``watch.check``) between loops."""
        cfg = self.config.trainer
        total = cfg.train_steps
        start_time = time.time()
        start_step = step
        last_logs: dict[str, float] = {}
        summary_every = max(cfg.summary_interval, 1)
        next_summary = (step // summary_every + 1) * summary_every
        while step < total:
            boundaries = [total, (step // cfg.steps_per_loop + 1) * cfg.steps_per_loop]
            if cfg.checkpoint_interval > 0:
                boundaries.append((step // cfg.checkpoint_interval + 1) * cfg.checkpoint_interval)
            if evaluate and cfg.validation_interval > 0:
                boundaries.append((step // cfg.validation_interval + 1) * cfg.validation_interval)
            num_steps = min(boundaries) - step
            loop_start = time.time()
            totals = self._run_steps(iterator, num_steps)
            loop_time = time.time() - loop_start
            step = int(self.global_step.numpy())
            logs = self._step_logs(totals, num_steps)
            logs["learning_rate"] = current_learning_rate(self.optimizer)
            steps_per_sec = num_steps / max(loop_time, 1e-9)
            tokens_per_sec = float(totals["tokens"]) / max(loop_time, 1e-9)
            overall = (step - start_step) / max(time.time() - start_time, 1e-9)
            self.log(progress_line(step, total, logs, overall, tokens_per_sec,
                                   time.time() - start_time))
            if step >= next_summary or step >= total:
                self.write_summaries("train", dict(
                    logs, steps_per_sec=steps_per_sec, tokens_per_sec=tokens_per_sec,
                    examples_per_sec=float(totals["examples"]) / max(loop_time, 1e-9)), step)
                next_summary = (step // summary_every + 1) * summary_every
            last_logs = logs
            out_of_time = cfg.max_seconds > 0 and self._any_worker(
                time.time() - start_time >= cfg.max_seconds)
            if (cfg.checkpoint_interval > 0 and step % cfg.checkpoint_interval == 0) \
                    or step >= total or out_of_time:
                self.save_checkpoint()
            if evaluate and ((cfg.validation_interval > 0 and step % cfg.validation_interval == 0)
                             or step >= total or out_of_time):
                results = self.evaluate(step)
                self.maybe_export_best(results, step)
            if out_of_time:
                self.log(f"trainer.max_seconds={cfg.max_seconds:g} reached at step {step}.")
                break
            watch.check()
        return last_logs, step

    def _any_worker(self, flag: bool) -> bool:
        """True when ``flag`` is true on any worker: decisions taken from a local clock
        (``max_seconds``) must be the same on every worker of a multi-worker run, or the
        others would wait in the next step's collectives for a worker that stopped."""
        if not preemption.is_multi_worker(self.strategy):
            return flag
        strategy = self.strategy
        value = strategy.run(lambda: tf.constant(int(flag)))
        return bool(strategy.reduce(tf.distribute.ReduceOp.SUM, value, axis=None).numpy() > 0)

    def time_steps(self, warmup: int, steps: int, iterator=None) -> dict[str, float]:
        """Times the training step `train` runs, without checkpoints, summaries or
        evaluation (a throughput measurement): ``warmup`` untimed steps, then ``steps``
        timed ones on batches of ``iterator`` (default: the task's training data).
        Returns ``{"seconds": wall time of the timed steps, "loss": their mean loss}``;
        the model's weights and optimizer state change as in training."""
        train_fn = self._build_train_fn()
        if iterator is None:
            iterator = iter(self.distributed_dataset(self.config.task.train_data))
        train_fn(iterator, tf.constant(warmup, tf.int32))["loss"].numpy()
        start = time.perf_counter()
        totals = train_fn(iterator, tf.constant(steps, tf.int32))
        loss = float(totals["loss"]) / steps
        return {"seconds": time.perf_counter() - start, "loss": loss}

    def _run_steps(self, iterator, num_steps: int) -> dict:
        try:
            return self._train_fn(iterator, tf.constant(num_steps, tf.int32))
        except tf.errors.OpError as e:
            lost = preemption.peer_failure(e, self.strategy, self.model_dir)
            if lost is not None:
                raise lost from None
            if not isinstance(e, (tf.errors.DataLossError, tf.errors.InvalidArgumentError)):
                raise
            message = e.message.splitlines()[0] if e.message else str(e)
            if isinstance(e, tf.errors.DataLossError) or "Feature" in message \
                    or "record" in message.lower():
                raise InputDataError(
                    f"reading the training data {self.config.task.train_data.input_path!r} "
                    f"failed: {message}") from None
            raise


def write_json(path: str, value) -> None:
    """``value`` as JSON at ``path``, written beside it and renamed into place."""
    with open(path + ".tmp", "w") as f:
        json.dump(value, f, indent=2)
    os.replace(path + ".tmp", path)


def run_experiment(config: ExperimentConfig, mode: str = "train_and_eval",
                   task: Task | None = None, strategy: tf.distribute.Strategy | None = None,
                   log: Callable[[str], None] | None = None) -> dict:
    """Runs ``mode`` (``train``, ``eval``, ``train_and_eval``, ``predict``) and returns
    ``{"train": last train logs, "eval": eval metrics, "predictions": path}``."""
    from albert_tf.training.optimization import set_mixed_precision
    from albert_tf.training.tasks import build_task
    runtime = config.runtime
    if mode not in ("train", "eval", "train_and_eval", "predict"):
        raise ValueError(f"--mode={mode!r}: use train, eval, train_and_eval or predict.")
    check_weights_to_run(config, mode)
    preflight.check_sequence_length(config)
    model_dir = os.path.abspath(config.model_dir) if config.model_dir else ""
    created = bool(model_dir) and not os.path.exists(model_dir)
    distribute.configure_runtime(runtime.num_cpu_devices, runtime.intra_op_threads,
                                 runtime.inter_op_threads, runtime.deterministic)
    if strategy is None:
        strategy = distribute.get_strategy(runtime.distribution_strategy, runtime.num_gpus,
                                           runtime.tpu, runtime.num_cpu_devices)
    set_mixed_precision(runtime.mixed_precision_dtype)
    keras.utils.set_random_seed(runtime.seed)
    try:
        task = task or build_task(config)
        trainer = Trainer(config, task, strategy, config.model_dir, log=log, mode=mode)
        if trainer.is_chief and mode in ("train", "train_and_eval"):   # the training's record
            with open(os.path.join(trainer.model_dir, "experiment.yaml"), "w") as f:
                f.write(config.to_yaml())
        result: dict = {}
        if mode in ("train", "train_and_eval"):
            result["train"] = trainer.train(evaluate=(mode == "train_and_eval"))
            if mode == "train_and_eval":
                path = os.path.join(trainer.model_dir, "eval_results.json")
                with open(path) as f:
                    result["eval"] = json.load(f)
        elif mode == "eval":
            _restore_trained(trainer, mode)
            result["eval"] = trainer.evaluate(record=False)
            result["record"] = trainer.record_evaluation(result["eval"])
        else:
            _restore_trained(trainer, mode)
            result["predictions"] = trainer.predict()
        result["step"] = int(trainer.global_step.numpy())
        result["trainer"] = trainer
        return result
    except Exception:
        if created:                   # a failed start leaves no directory behind
            outputs.remove_if_unused(model_dir, ["experiment.yaml"])
        raise
    finally:
        set_mixed_precision("float32")


def pretraining_step_config(model_config: str, batch_size: int, seq_length: int,
                            max_predictions: int, model_dir: str,
                            jit_compile: bool = False) -> ExperimentConfig:
    """The experiment `time_pretraining_steps` times: pretraining of ``model_config``
    (a shipped name or a config path) with AdamW at 1e-4, ``batch_size`` sequences of
    ``seq_length`` tokens with ``max_predictions`` masked positions each."""
    config = ExperimentConfig(model_dir=model_dir)
    config.model.config = model_config
    config.task.type = "pretraining"
    config.task.max_seq_length = seq_length
    config.task.max_predictions_per_seq = max_predictions
    config.task.train_data.global_batch_size = batch_size
    config.optimizer.type = "adamw"
    config.optimizer.learning_rate = 1e-4
    config.runtime.jit_compile = jit_compile
    config.trainer.train_steps = 10 ** 6
    return config


def time_pretraining_steps(config: ExperimentConfig, batch: dict, warmup: int,
                           steps: int) -> dict[str, float]:
    """`Trainer.time_steps` of ``config``'s pretraining step on one CPU device, fed one
    in-memory ``batch`` (numpy arrays, `albert_tf.data.pretraining.synthetic_batch`'s
    layout) over and over: the step's cost without the input pipeline."""
    from albert_tf.training.tasks import PretrainingTask

    class InMemoryTask(PretrainingTask):
        def build_inputs(self, data_config, input_context=None):
            return tf.data.Dataset.from_tensors(batch).repeat()

    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    trainer = Trainer(config, InMemoryTask(config), strategy, log=lambda line: None)
    return trainer.time_steps(warmup, steps)


def check_weights_to_run(config: ExperimentConfig, mode: str) -> None:
    """`albert_tf.training.preflight.check_weights_to_run`, a ``model_dir``'s checkpoint
    files confirmed by ``tf.train.latest_checkpoint``."""
    preflight.check_weights_to_run(config, mode, tf.train.latest_checkpoint)


def _restore_trained(trainer: Trainer, mode: str) -> None:
    """`Trainer.restore_or_initialize` for eval / predict: an ``--init_checkpoint`` that
    lacks some of the model's weights (a pretrained encoder for a task model: its head)
    would leave them random, so it is refused naming them."""
    from albert_tf.checkpoints import CheckpointError
    from albert_tf.training.tasks import resolve_path
    if tf.train.latest_checkpoint(trainer.model_dir):
        trainer.restore_or_initialize()
        return
    init = trainer.config.model.init_checkpoint
    report = trainer.task.initialize(trainer.model, init)
    missing = report.missing_in_checkpoint
    if missing:
        raise CheckpointError(
            f"--mode={mode}: --init_checkpoint={resolve_path(init)} lacks {len(missing)} of "
            f"the model's weights ({', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''})"
            ", which would stay random: pass a model directory finetuned for this task (its "
            "best/ or final/).")
    trainer.log(f"initialized from {init}: {report.summary()}")


def main_guard(fn: Callable[[], int | None]) -> int:
    """Runs ``fn`` and turns the package's expected errors into one clear line
    (`albert_tf.cli.expected_error`, exit 2), a stopped run into its resume line (exit 75,
    or 130 for Ctrl-C)."""
    from albert_tf import cli
    try:
        return fn() or 0
    except preemption.RunInterrupted as e:
        print(f"{cli.command_name()}: stopped: {e}", file=sys.stderr, flush=True)
        return e.exit_code
    except KeyboardInterrupt:
        cli.interrupted()
    except Exception as e:  # noqa: BLE001  (re-raised unless expected)
        line = cli.expected_error(e)
        if line is None:
            raise
        print(f"{cli.command_name()}: error: {line}", file=sys.stderr, flush=True)
        return 2


__all__ = ["Trainer", "format_duration", "main_guard", "progress_line", "run_experiment",
           "pretraining_step_config", "time_pretraining_steps"]
