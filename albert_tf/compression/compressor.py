"""The stages of ``albert-tf-compress``: a finetuned model directory in, a compressed one out.

`run` checks everything it can before training (config values, pruning targets,
teacher/student shapes, the data), then applies ``config.stages`` in order, each
trained with ``fit`` and scored on the dev split, and writes to ``model_dir``:

* ``model/``: the compressed model directory (``config.json``, weights, ``task.json``,
  the vocabulary: ``vocab.model`` or ``vocab.txt``); after QAT also ``qat.json`` and the
  learned ranges, which `albert_tf.compression.qat.load_qat_model` (used by
  ``albert-tf-export --quantization=qat``) rebuilds;
* ``model.tflite`` (and ``model_int8.tflite`` after QAT) when ``export.tflite``;
* ``report.json``: dev metrics after every stage, the sparsity report, the
  structured-pruning plan; ``sparsity.md`` after pruning.

`compress_model` is the same for a model already in memory (a finetuning experiment
can call it at its end with the ``compression`` section of its config).
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from typing import Callable

from albert_tf import outputs
from albert_tf.backend import keras
from albert_tf.checkpoints import (TaskInfo, build_task_model, load_config_from_dir,
                                   load_task_model, save_model_dir, vocab_path)
from albert_tf.compression import data as data_lib
from albert_tf.compression.compression_config import (FLOAT_DIR, INT8_DIR, MODEL_DIR,
                                                     RUN_KIND, RUN_RECORD, CompressionConfig,
                                                     CompressionConfigError, check_run,
                                                     record_init_model, run_inputs,
                                                     structured_stage_config, validate)
from albert_tf.config import load_config

def _log(message: str) -> None:
    print(f"[albert-tf-compress] {message}", flush=True)


@dataclasses.dataclass
class Context:
    config: CompressionConfig
    task_info: TaskInfo
    inputs: data_lib.TaskInputs
    log: Callable[[str], None]
    report: dict

    def train_dataset(self):
        return self.inputs.train_dataset(self.config.data.batch_size, self.config.seed)

    def evaluate(self, model, label: str) -> dict:
        result = self.inputs.evaluate(model, self.config.data.eval_batch_size)
        self.report.setdefault("dev", {})[label] = result
        self.log(f"dev after {label}: {result}")
        return result

    def fit(self, model, steps: int, learning_rate: float, callbacks=()):
        data_lib.compile_stage(model, self.config.optimizer, steps, learning_rate,
                               self.inputs.is_regression, self.config.run_eagerly,
                               self.inputs.loss, self.inputs.fit_metrics())
        start = time.time()
        logs = data_lib.fit_steps(model, self.train_dataset(), steps, callbacks,
                                  log_every=max(1, steps // 10))
        self.log(f"trained {steps} steps in {time.time() - start:.0f}s: {logs}")
        return logs


# -------------------------------------------------------------------------------- stages
def student_config(cfg, teacher_config):
    """The student's `AlbertConfig` (vocabulary and positions follow the teacher)."""
    config = load_config(cfg.distillation.student_config)
    return config.replace(vocab_size=teacher_config.vocab_size,
                          type_vocab_size=teacher_config.type_vocab_size,
                          max_position_embeddings=teacher_config.max_position_embeddings)


def precheck(model: keras.Model, ctx: Context) -> None:
    """Every check that can fail without training, before the first stage runs."""
    from albert_tf.compression import distillation, pruning
    cfg = ctx.config
    config = model.albert_config
    for stage in cfg.stages:
        if stage == "structured":
            config = structured_stage_config(config, cfg.structured)
        elif stage == "distillation":
            teacher = load_config_from_dir(cfg.distillation.teacher) \
                if cfg.distillation.teacher else config
            config = student_config(cfg, teacher)
            distillation.check_compatible(config, teacher, cfg.distillation)
        elif stage == "pruning":
            pruning.make_schedule(cfg.pruning)
            probe = build_task_model(config, ctx.task_info)
            pruning.check_blocks(probe, cfg.pruning)   # resolves the targets first
    others = [stage for stage in cfg.stages if stage not in ("pruning", "qat")]
    if isinstance(ctx.inputs, data_lib.HeadTaskInputs):
        head = ctx.task_info.head
        if others:
            raise CompressionConfigError(f"stages: a {head} model compresses with pruning "
                                         f"and qat only; drop {', '.join(others)}.")
        if "qat" in cfg.stages and cfg.export.tflite:
            raise CompressionConfigError(f"export.tflite: the full-int8 export of a {head} "
                                         "model after qat is not supported yet; set it to "
                                         "false (albert-tf-export exports model/).")
    s = cfg.structured
    if ctx.inputs.is_regression and "structured" in cfg.stages and \
            (s.distill_alpha or s.distill_hidden_weight):
        raise CompressionConfigError("structured.distill_alpha: distillation of regression "
                                     "tasks is not supported yet; set it to 0.")
    if ctx.inputs.is_regression and "distillation" in cfg.stages:
        raise CompressionConfigError("distillation: regression tasks are not supported yet.")


def run_structured(model, ctx: Context):
    cfg = ctx.config.structured
    if cfg.schedule == "polynomial_decay":
        return run_structured_scheduled(model, ctx)
    from albert_tf.compression import structured
    loss = data_lib.task_loss(ctx.inputs.is_regression)
    build = lambda c: build_task_model(c, ctx.task_info)   # noqa: E731
    if cfg.num_layers and cfg.num_layers != model.albert_config.num_hidden_layers:
        model = structured.keep_layers(model, cfg.num_layers, build)
    plan = structured.plan(model, cfg, ctx.train_dataset(), loss)
    new = structured.apply_plan(model, plan, build)
    ctx.report["structured"] = {"plan": plan.summary(), "params_before": model.count_params(),
                                "params_after": new.count_params()}
    ctx.log(f"structured: {plan.summary()}")
    ctx.evaluate(new, "structured (before fine-tuning)")
    ctx.fit(new, cfg.train_steps, cfg.learning_rate)
    return new


def run_structured_scheduled(model, ctx: Context):
    """The structured stage on its polynomial-decay schedule, distilling from ``model``
    (`albert_tf.compression.structured_schedule`)."""
    from albert_tf.compression import distillation, structured_schedule
    cfg = ctx.config.structured
    steps, rate = cfg.train_steps, cfg.learning_rate

    def fit(student, callbacks):
        ctx.fit(student, steps, rate, callbacks)

    def distil(student, teacher, distill_cfg, callbacks):
        distiller = distillation.Distiller(student, teacher, distill_cfg)
        distiller.compile(optimizer=data_lib.make_optimizer(ctx.config.optimizer, steps, rate),
                          run_eagerly=ctx.config.run_eagerly)
        start = time.time()
        history = distiller.fit(ctx.train_dataset(), steps_per_epoch=max(1, steps),
                                epochs=1 if steps else 0, verbose=2, callbacks=callbacks)
        ctx.log(f"trained {steps} steps (distilling) in {time.time() - start:.0f}s: "
                f"{ {k: round(float(v[-1]), 4) for k, v in history.history.items()} }")

    batches = iter(ctx.inputs.train_dataset(ctx.config.data.batch_size,
                                            ctx.config.seed + 1))
    new, report = structured_schedule.train_scheduled(
        model, cfg, fit, distil, batches, lambda c: build_task_model(c, ctx.task_info),
        data_lib.task_loss(ctx.inputs.is_regression), ctx.log)
    ctx.report["structured"] = report
    ctx.log(f"structured: {report['plan']}, {report['params_before']} -> "
            f"{report['params_after']} parameters")
    return new


def run_distillation(model, ctx: Context):
    from albert_tf.compression import distillation
    cfg = ctx.config.distillation
    if cfg.teacher:
        teacher, _ = load_task_model(cfg.teacher)
    else:
        teacher = model
    student = build_task_model(student_config(ctx.config, teacher.albert_config), ctx.task_info)
    if cfg.student_init == "teacher":
        copied = distillation.init_student_from_teacher(student, teacher, cfg.layer_map or None)
        ctx.log(f"student initialised from the teacher: {len(copied['copied'])} weights copied")
    distiller = distillation.Distiller(student, teacher, cfg)
    distiller.compile(optimizer=data_lib.make_optimizer(ctx.config.optimizer, cfg.train_steps,
                                                        cfg.learning_rate),
                      run_eagerly=ctx.config.run_eagerly)
    start = time.time()
    history = distiller.fit(ctx.train_dataset(), steps_per_epoch=max(1, cfg.train_steps),
                            epochs=1 if cfg.train_steps else 0, verbose=2)
    ctx.log(f"distilled {cfg.train_steps} steps in {time.time() - start:.0f}s: "
            f"{ {k: float(v[-1]) for k, v in history.history.items()} }")
    ctx.report["distillation"] = {"student": student.albert_config.to_dict(),
                                  "student_params": student.count_params(),
                                  "teacher_params": teacher.count_params()}
    return student


def run_pruning(model, ctx: Context):
    from albert_tf.compression import pruning
    cfg = ctx.config.pruning
    pruned = pruning.prune_model(model, cfg)
    names = pruning.pruned_weight_names(pruned)
    curve = pruning.SparsityCurve(pruning.make_schedule(cfg), cfg.frequency)
    ctx.fit(pruned, cfg.train_steps, cfg.learning_rate, [pruning.PruningStepCallback(), curve])
    ctx.report["sparsity_curve"] = curve.curve
    final = pruning.strip_pruning(pruned)
    report = pruning.sparsity_report(final, names, cfg.block_size)
    ctx.report["sparsity"] = report.as_dict()
    if ctx.config.model_dir:
        os.makedirs(ctx.config.model_dir, exist_ok=True)
        with open(os.path.join(ctx.config.model_dir, "sparsity.md"), "w") as f:
            f.write(report.table() + "\n")
    ctx.log(f"pruned {len(names)} weights, total sparsity {report.total():.4f}")
    ctx.report["pruned_weights"] = names
    return final


def run_qat(model, ctx: Context):
    from albert_tf.compression import qat
    cfg = ctx.config.qat
    from albert_tf.compression.pruning import (KeepSparsity, sparse_weight_names,
                                                sparsity_report)
    names = ctx.report.get("pruned_weights") or \
        (sparse_weight_names(model) if cfg.keep_sparsity else [])
    quantized = qat.quantize_model(model, cfg)
    callbacks = [KeepSparsity(names)] if names else []   # prune -> QAT: zeros stay zeros
    ctx.fit(quantized, cfg.train_steps, cfg.learning_rate, callbacks)
    if callbacks:
        block = ctx.config.pruning.block_size if "pruning" in ctx.config.stages else "1x1"
        kept = sparsity_report(quantized, names, block)
        ctx.report["sparsity_after_qat"] = kept.as_dict()
        ctx.log(f"sparsity after QAT {kept.total():.4f}")
    return quantized


STAGES = {"structured": run_structured, "distillation": run_distillation,
          "pruning": run_pruning, "qat": run_qat}


# ---------------------------------------------------------------------------- top level
def compress_model(model: keras.Model, task_info: TaskInfo, vocab_file: str,
                   config: CompressionConfig, log: Callable[[str], None] = _log):
    """Runs ``config.stages`` on ``model``; returns ``(compressed model, report dict)``."""
    validate(config)
    keras.utils.set_random_seed(config.seed)
    inputs = data_lib.load_task_inputs(task_info, data_lib.default_data_dir(config.data.data_dir),
                                       vocab_file, config.data.task, config.data.max_seq_length)
    ctx = Context(config, task_info, inputs, log, {"stages": list(config.stages)})
    precheck(model, ctx)
    ctx.evaluate(model, "start")
    for stage in config.stages:
        log(f"stage {stage}")
        model = STAGES[stage](model, ctx)
        ctx.evaluate(model, stage)
    ctx.report["params"] = model.count_params()
    return model, ctx.report


def save_compressed(model: keras.Model, directory: str, task_info: TaskInfo, vocab_file: str,
                    config: CompressionConfig) -> str:
    """A model directory; a QAT model also gets ``qat.json`` and its range variables."""
    from albert_tf.compression import qat
    save_model_dir(model, directory, model.albert_config, task_info, vocab_file,
                   inputs=_inputs(config))
    if qat.quantize_wrappers(model):
        qat.save_qat_config(directory, config.qat)
    return directory


def run(config: CompressionConfig, log: Callable[[str], None] = _log) -> dict:
    """``albert-tf-compress``: reads ``init_model``, compresses, writes ``model_dir``."""
    check_run(config)
    choice = choose_structure(config, log) if config.speedup.active else None
    with outputs.run_directory(config.model_dir, RUN_KIND, own_files=[RUN_RECORD]):
        record_init_model(config)
        model, task_info = load_task_model(config.init_model)
        vocab = vocab_path(config.init_model)
        model, report = compress_model(model, task_info, vocab, config, log)
        out = os.path.join(config.model_dir, MODEL_DIR)
        save_compressed(model, out, task_info, vocab, config)
        report["model_dir"] = out
        if config.export.tflite:
            report["tflite"] = export(out, config, "qat" in config.stages, log)
        if choice is not None:
            report["speedup"] = choice.as_dict()
            if config.speedup.measure_result:
                report["speedup"]["measured"] = measure_speedup(config, out, log)
        with open(os.path.join(config.model_dir, "report.json"), "w") as f:
            json.dump(report, f, indent=2, default=str)
    written = [out] + [os.path.dirname(f) for f in report.get("tflite", {}).values()]
    log(f"wrote {', '.join(written)} and {os.path.join(config.model_dir, 'report.json')}")
    return report


def _training_texts(config: CompressionConfig):
    """``(base config, task info, vocabulary, (text_a, text_b) training pairs)`` of the
    ``init_model``, for the speedup search's int8 calibration (no weights loaded)."""
    from albert_tf.checkpoints import load_task_info
    task_info = load_task_info(config.init_model)
    vocab = vocab_path(config.init_model)
    inputs = data_lib.load_task_inputs(task_info, data_lib.default_data_dir(config.data.data_dir),
                                       vocab, config.data.task, config.data.max_seq_length)
    if not isinstance(inputs, data_lib.TaskInputs):
        raise CompressionConfigError(f"speedup: a {task_info.head} model compresses with "
                                     "pruning and qat only.")
    texts = [(ex.text_a, getattr(ex, "text_b", None)) for ex in inputs.train[:512]]
    return load_config_from_dir(config.init_model), task_info, vocab, texts


def choose_structure(config: CompressionConfig, log):
    """``--target_speedup`` / ``--latency_budget_ms``: what the structured stage keeps,
    from latencies timed on this CPU (`albert_tf.compression.speedup`), before anything is
    written; sets ``config.structured``."""
    from albert_tf.compression import speedup
    base, task_info, vocab, texts = _training_texts(config)
    return speedup.choose_structure(config, base, task_info, vocab, texts, log)


def measure_speedup(config: CompressionConfig, model_dir: str, log) -> dict:
    """The compressed model's export timed against the ``init_model``'s."""
    from albert_tf.compression import speedup
    base, task_info, vocab, texts = _training_texts(config)
    return speedup.measure_result(config, model_dir, base, task_info, vocab, texts, log)


def _inputs(config: CompressionConfig) -> list[tuple[str, str | None]]:
    """What compression reads (`compression_config.run_inputs`)."""
    return run_inputs(config)


def write_int8_metadata(directory: str, source, content: bytes, calibrated: int) -> None:
    """The files of an export directory beside the full-int8 ``model.tflite`` (the export
    library's `albert_tf.export.metadata.write_metadata`: ``metadata.json``, the
    vocabulary, ``labels.txt``), so that ``albert-tflite-run`` and the mobile apps take
    ``tflite_int8/`` as they take an ``albert-tf-export`` directory."""
    from albert_tf.export import analysis, metadata
    extra = {"integer_only": analysis.integer_only(analysis.op_report(content)),
             "calibration_examples": calibrated, "sdk": None,
             "sdk_reason": "albert-tf-compress embeds no mobile-SDK metadata in its int8 "
                           "file"}
    metadata.write_metadata(directory, metadata.MODEL_FILE, dict(vars(source.task_info)),
                            source.vocab_file, "qat", extra)


def export(model_dir: str, config: CompressionConfig, quantized: bool, log) -> dict:
    """``tflite/`` (float, export library) and, after QAT, ``tflite_int8/``: full integer
    (the export's ``qat`` recipe with ``strict_int8``, `qat.convert_int8`, calibrated on
    ``qat.calibration_examples`` training sentences for what QAT does not cover); each an
    export directory (``model.tflite``, ``metadata.json``, vocabulary, labels) that
    ``albert-tflite-run`` runs as it is."""
    from albert_tf.export import metadata
    from albert_tf.export.tflite import export_tflite
    seq = config.export.seq_length or None
    out = {}
    if quantized:
        from albert_tf.compression import qat   # registers the QAT loader with the export
        from albert_tf.export.common import load_source
        from albert_tf.export.quantization import load_qat_model
        source = load_source(model_dir)
        inputs = data_lib.load_task_inputs(
            source.task_info, data_lib.default_data_dir(config.data.data_dir),
            source.vocab_file, config.data.task, config.data.max_seq_length)
        seq = seq or inputs.max_seq_length
        features, _ = inputs.encoded(inputs.train[:config.qat.calibration_examples], seq)
        content = qat.convert_int8(load_qat_model(model_dir), source, features, seq)
        target = os.path.join(config.model_dir, INT8_DIR)
        with outputs.staged_output(target, kind="compressed tflite", inputs=_inputs(config),
                                   overwrite=True, flag="--model_dir/tflite_int8") as tmp:
            with open(os.path.join(tmp, metadata.MODEL_FILE), "wb") as f:
                f.write(content)
            write_int8_metadata(tmp, source, content, len(features["input_word_ids"]))
        out["int8"] = os.path.join(target, "model.tflite")
        log(f"exported full-int8 TFLite: {out['int8']}")
    target = os.path.join(config.model_dir, FLOAT_DIR)
    export_tflite(model_dir, target, quantization="none", seq_lengths=[seq] if seq else None,
                  overwrite=True)
    out["float"] = os.path.join(target, "model.tflite")
    log(f"exported float TFLite: {out['float']}")
    return out
