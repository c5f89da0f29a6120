"""``albert-tf-run``: vocabulary -> pretraining data -> pretrain each size for its step
budget (a wall-clock guard above it) -> finetune -> compress
(`albert_tf.pipeline.candidates`) -> export -> evaluate + time every artifact -> choose one
on dev and score it once on test -> report.

Each stage runs one of our binaries (their logs go to ``<output_dir>/logs``) and is
recorded in ``<output_dir>/stages``; a rerun skips recorded stages, and a stage
killed half-way resumes from the binary's own checkpoints.
"""

from __future__ import annotations

import glob
import json
import os
from typing import Any, Callable

from albert_tf.pipeline import candidates as compress_lib
from albert_tf.pipeline.pipeline_config import PipelineConfig, resolve_data_dir, validate
from albert_tf.pipeline.pareto_report import Artifact, CompressionRun, choose_final, write_report
from albert_tf.pipeline.stages import Stage, StageRunner, python_module, write_json
from albert_tf.text.vocabulary import FILE_NAMES, SENTENCEPIECE
from albert_tf.training.experiment_config import ConfigValueError


def _suffixed(name: str, kind: str) -> str:
    """Stage and directory names of a vocabulary kind (SentencePiece keeps the plain name)."""
    return name if kind == SENTENCEPIECE else f"{name}_{kind}"


class Paths:
    """Where each stage writes, under the run's output directory."""

    def __init__(self, root: str):
        self.root = os.path.abspath(root)

    def __call__(self, *parts: str) -> str:
        return os.path.join(self.root, *parts)

    @property
    def vocab_prefix(self) -> str:
        return self("vocab", "spm")

    @property
    def vocab_file(self) -> str:
        return self.vocab_prefix + ".model"

    def vocabulary(self, kind: str) -> str:
        """The vocabulary file of ``kind`` (SentencePiece: `vocab_file`)."""
        if kind == SENTENCEPIECE:
            return self.vocab_file
        return self(_suffixed("vocab", kind), FILE_NAMES[kind])

    def pretraining_data(self, kind: str, pattern: str) -> str:
        """``pretraining_data[_wordpiece]/<pattern>``: the MLM + SOP records of ``kind``."""
        return self(_suffixed("pretraining_data", kind), pattern)

    def pretrain_dir(self, model: str) -> str:
        return self("pretrain", model)

    def finetune_dir(self, model: str) -> str:
        return self("finetune", model)

    def finetuned_model(self, model: str) -> str:
        """The finetuned model directory (the best dev checkpoint)."""
        return os.path.join(self.finetune_dir(model), "best")

    def compress_dir(self, candidate: str) -> str:
        return self("compress", candidate)


def split_corpus(config: PipelineConfig, paths: Paths) -> dict[str, Any]:
    """Streams the corpus into train.txt and heldout.txt (whole documents, blank-line
    separated); the last ``heldout_documents`` read are held out."""
    from collections import deque

    from albert_tf.data.documents import iter_documents, resolve_inputs
    corpus = config.corpus
    files = resolve_inputs([config.data_path(corpus.input)])
    os.makedirs(paths("corpus"), exist_ok=True)
    held: deque = deque()
    train_docs = 0
    with open(paths("corpus", "train.txt.tmp"), "w", encoding="utf-8") as train:
        for i, document in enumerate(iter_documents(files)):
            if corpus.max_documents and i >= corpus.max_documents:
                break
            held.append(document)
            if len(held) > corpus.heldout_documents:
                train.write("\n".join(held.popleft()) + "\n\n")
                train_docs += 1
    with open(paths("corpus", "heldout.txt.tmp"), "w", encoding="utf-8") as f:
        for document in held:
            f.write("\n".join(document) + "\n\n")
    for name in ("train.txt", "heldout.txt"):
        os.replace(paths("corpus", name + ".tmp"), paths("corpus", name))
    return {"train_documents": train_docs, "heldout_documents": len(held),
            "train_mib": os.path.getsize(paths("corpus", "train.txt")) / 2**20}


def _read_json(path: str) -> dict[str, Any]:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def eval_curve(model_dir: str, origin: float, metric: str = "mlm_loss",
               split: str = "eval") -> list[tuple[float, float]]:
    """``[(seconds since ``origin``, metric), ...]`` from the run's ``split`` summaries.

    ``origin`` is when the stage was first started, so the x axis is the wall-clock
    time the run cost, start-up included.
    """
    from albert_tf.backend import tf
    points = []
    for path in sorted(glob.glob(os.path.join(model_dir, "**", "events.out.tfevents.*"),
                                 recursive=True)):
        if split not in os.path.relpath(path, model_dir):
            continue
        for event in tf.data.TFRecordDataset(path).as_numpy_iterator():
            event = tf.compat.v1.Event.FromString(event)
            for value in event.summary.value:
                if value.tag.split("/")[-1] == metric:
                    number = tf.make_ndarray(value.tensor) if value.HasField("tensor") else \
                        value.simple_value
                    points.append((event.wall_time, float(number)))
    return sorted((t - origin, v) for t, v in points)


def vocabulary_stage(config: PipelineConfig, paths: Paths, kind: str) -> Stage:
    """Trains the ``kind`` vocabulary on the corpora (stage ``vocabulary[_wordpiece]``)."""
    vocab = config.vocabulary
    inputs = [config.data_path(p) for p in vocab.input] or [paths("corpus", "train.txt")]
    common = ("--input=" + ",".join(inputs), f"--vocab_size={vocab.vocab_size}",
              f"--input_sentence_size={vocab.input_sentence_size}",
              f"--do_lower_case={vocab.do_lower_case}")
    if kind == SENTENCEPIECE:
        command = python_module("albert_tf.bin.train_spm", *common,
                                f"--model_prefix={paths.vocab_prefix}")
    else:
        command = python_module("albert_tf.bin.train_vocab", *common, f"--type={kind}",
                                f"--output={os.path.dirname(paths.vocabulary(kind))}",
                                "--overwrite")   # a rerun replaces its own earlier try
    return Stage(_suffixed("vocabulary", kind), command,
                 collect=lambda: {"vocab_file": paths.vocabulary(kind)}, needs=("corpus_split",))


def pretraining_data_stage(config: PipelineConfig, paths: Paths, kind: str,
                           split: str) -> Stage:
    """MLM + SOP records of the ``split`` corpus with the ``kind`` vocabulary."""
    vocab, corpus = config.vocabulary, config.corpus
    summary = paths.pretraining_data(kind, f"{split}_summary.json")
    return Stage(f"{_suffixed('pretraining_data', kind)}_{split}", python_module(
        "albert_tf.bin.create_pretraining_data",
        f"--input_file={paths('corpus', split + '.txt')}",
        f"--output_file={paths.pretraining_data(kind, split + '.tfrecord')}",
        f"--spm_model_file={paths.vocabulary(kind)}", f"--do_lower_case={vocab.do_lower_case}",
        f"--max_seq_length={corpus.max_seq_length}",
        f"--max_predictions_per_seq={corpus.max_predictions_per_seq}",
        f"--dupe_factor={corpus.dupe_factor if split == 'train' else 1}",
        f"--num_workers={corpus.num_workers if split == 'train' else 1}",
        f"--random_seed={config.seed}", f"--summary_file={summary}", "--progress=false"),
        collect=(lambda s=summary: _read_json(s)),
        needs=(_suffixed("vocabulary", kind), "corpus_split"))


def data_stages(config: PipelineConfig, paths: Paths) -> list[Stage]:
    """Corpus split, then per vocabulary kind in use: vocabulary and pretraining data."""
    stages = [Stage("corpus_split", None, collect=lambda: split_corpus(config, paths))]
    for kind in config.pretrain.vocab_kinds():
        stages.append(vocabulary_stage(config, paths, kind))
        stages += [pretraining_data_stage(config, paths, kind, split)
                   for split in ("train", "heldout")]
    return stages


def pretrain_stage(config: PipelineConfig, paths: Paths, model: str) -> Stage:
    pretrain, corpus = config.pretrain, config.corpus
    model_dir = paths.pretrain_dir(model)

    name = f"pretrain_{model}"
    kind = pretrain.vocab_type(model)
    data = _suffixed("pretraining_data", kind)
    max_steps = pretrain.steps_for(model)

    def collect() -> dict[str, Any]:
        results = _read_json(os.path.join(model_dir, "eval_results.json"))
        start = StageRunner(paths.root, echo=lambda s: None).first_start(name)
        return {"model_dir": os.path.join(model_dir, "final"), "eval": results,
                "curve": eval_curve(model_dir, start), "steps": results.get("step"),
                "max_steps": max_steps}

    return Stage(name, python_module(
        "albert_tf.bin.pretrain", "--config_file=pretrain_albert_mini_imdb",
        f"--model_config={model}", f"--model_dir={model_dir}",
        f"--train_files={paths.pretraining_data(kind, 'train*.tfrecord*')}",
        f"--eval_files={paths.pretraining_data(kind, 'heldout*.tfrecord*')}",
        f"--max_seq_length={corpus.max_seq_length}",
        f"--max_predictions_per_seq={corpus.max_predictions_per_seq}",
        f"--train_batch_size={pretrain.batch_size}",
        f"--learning_rate={pretrain.learning_rates.get(model, pretrain.learning_rate)}",
        f"--num_train_steps={max_steps}",
        f"--warmup_steps={pretrain.warmup_steps}",
        f"--max_seconds={pretrain.seconds}",
        f"--validation_interval={pretrain.validation_interval}",
        f"--checkpoint_interval={pretrain.validation_interval}",
        f"--steps_per_loop={min(100, pretrain.validation_interval)}",
        f"--seed={config.seed}",
        f"--params_override=task.vocab_file={paths.vocabulary(kind)},"
        f"model.vocab_size={config.vocabulary.vocab_size}"),
        collect=collect, needs=(f"{data}_train", f"{data}_heldout"))


def finetune_stage(config: PipelineConfig, paths: Paths, model: str) -> Stage:
    finetune = config.finetune
    model_dir = paths.finetune_dir(model)

    def collect() -> dict[str, Any]:
        best = _read_json(os.path.join(model_dir, "best_metric.json"))
        last = _read_json(os.path.join(model_dir, "eval_results.json"))
        return {"model_dir": os.path.join(model_dir, "best"), "best": best,
                "steps": last.get("step"), "max_steps": finetune.max_steps}

    return Stage(f"finetune_{model}", python_module(
        "albert_tf.bin.finetune", f"--task={finetune.task}",
        "--config_file=finetune_sst2_albert_mini", f"--data_dir={config.data_dir}",
        f"--model_config={model}", f"--model_dir={model_dir}",
        f"--init_checkpoint={os.path.join(paths.pretrain_dir(model), 'final')}",
        f"--vocab_file={paths.vocabulary(config.pretrain.vocab_type(model))}",
        f"--max_seq_length={finetune.max_seq_length}",
        f"--train_batch_size={finetune.batch_size}", f"--learning_rate={finetune.learning_rate}",
        f"--num_train_steps={finetune.max_steps}", f"--warmup_steps={finetune.warmup_steps}",
        f"--max_seconds={finetune.seconds}",
        f"--validation_interval={finetune.validation_interval}",
        f"--checkpoint_interval={finetune.validation_interval}", f"--seed={config.seed}",
        f"--params_override=model.vocab_size={config.vocabulary.vocab_size}"),
        collect=collect, needs=(f"pretrain_{model}",))


SPARSE_SUFFIX = "_sparse"    # an export with sparse weights: "<quantization>_sparse"


def export_stages(config: PipelineConfig, paths: Paths, candidate: str, model_dir: str,
                  needs: str, quantizations: list[str] | None = None,
                  sparse: dict[str, str] | None = None) -> list[Stage]:
    """TFLite export of one candidate model per quantization (default
    ``export.quantizations``), and per ``sparse`` quantization -> pattern one more with
    its weights stored sparse (``<quantization>_sparse``); then score and time each."""
    export, stages = config.export, []
    variants = [(q, q, None) for q in (export.quantizations if quantizations is None
                                       else quantizations)]
    variants += [(q + SPARSE_SUFFIX, q, pattern) for q, pattern in (sparse or {}).items()]
    for label, quantization, pattern in variants:
        name = f"{candidate}__{label}"
        out = paths("export", candidate, label)
        scores, timing = paths("export", candidate, f"{label}_dev.json"), \
            paths("export", candidate, f"{label}_latency.json")
        sparse_flag = [f"--sparse_weights={pattern}"] if pattern else []
        stages += [
            Stage(f"export_{name}", python_module(
                "albert_tf.bin.export", f"--model_dir={model_dir}", "--format=tflite",
                f"--quantization={quantization}", f"--seq_lengths={export.seq_length}",
                *sparse_flag, f"--output={out}", f"--data_dir={config.data_dir}",
                "--overwrite"),
                collect=lambda out=out, q=quantization, p=pattern: {
                    "export_dir": out, "quantization": q, "sparse_weights": p},
                needs=(needs,)),
            Stage(f"score_{name}", python_module(
                "albert_tf.runtime.evaluate", f"--model={out}", f"--task={config.finetune.task}",
                f"--data_dir={config.data_dir}", f"--threads={export.threads}",
                f"--json={scores}", "--overwrite"),
                collect=lambda p=scores: _read_json(p)[0], needs=(f"export_{name}",)),
            Stage(f"time_{name}", python_module(
                "albert_tf.benchmark.tflite_export", f"--model={out}",
                f"--threads={export.threads}", "--runs=30",
                f"--min_seconds={export.timing_seconds}", f"--json={timing}", "--overwrite"),
                collect=lambda p=timing: _read_json(p)[0], needs=(f"export_{name}",)),
        ]
    return stages


def steps_per_second(config: PipelineConfig, paths: Paths, model: str) -> float:
    """The dense finetuning speed compression budgets are converted with:
    ``compress.steps_per_second``, else the median of the finetuning's
    ``steps_per_sec`` summaries."""
    if config.compress.steps_per_second > 0:
        return config.compress.steps_per_second
    model_dir = paths.finetune_dir(model)
    values = sorted(v for _, v in eval_curve(model_dir, 0.0, "steps_per_sec", split="train"))
    if not values:
        raise ConfigValueError(
            f"compress.steps_per_second: the finetuning of {model} recorded no speed (no "
            f"steps_per_sec in {model_dir}/summaries/train); set compress.steps_per_second.")
    return values[len(values) // 2]


def compress_stage(config: PipelineConfig, paths: Paths, model: str,
                   compression: compress_lib.Compression) -> Stage:
    """One albert-tf-compress run on a finetuned model. Its step budget
    (``budget.json``) and config (``compression.yaml``) are written when the stage
    starts, into the compress run's directory (marked as one first, so that
    albert-tf-compress takes it: `albert_tf.outputs.check_run_directory`):
    ``compress.steps``, else ``compress.seconds`` at the finetuning's measured speed."""
    out = paths.compress_dir(compression.candidate(model))

    def command() -> list[str]:
        from albert_tf import outputs    # the compress run's directory, prepared by us
        outputs.mark_run_directory(out, outputs.RUN_KINDS["albert-tf-compress"])
        budget = bool(compression.budget_of)
        fixed = config.compress.steps > 0 or (budget and config.compress.latency_steps > 0)
        speed = None if fixed else steps_per_second(config, paths, model)
        steps = compress_lib.stage_steps(config.compress, speed, compression.stage, budget)
        budget_ms = latency_budget(paths, compression) if budget else 1.0
        settings = compress_lib.compression_config(config, compression, model, steps,
                                                   paths.finetuned_model(model), out,
                                                   budget_ms)
        config_file = compress_lib.write_compression_config(
            os.path.join(out, "compression.yaml"), settings)
        if compression.stage == "distillation":
            compress_lib.write_student(config.compress, model, out)
        write_json(os.path.join(out, "budget.json"), {
            "budget_seconds": config.compress.seconds, "steps_per_second": speed,
            "steps": steps, "budget": "steps" if fixed else "seconds",
            "latency_budget_ms": budget_ms if budget else None})
        return python_module("albert_tf.bin.compress", f"--config_file={config_file}")

    def collect() -> dict[str, Any]:
        report = _read_json(os.path.join(out, "report.json"))
        return {**_read_json(os.path.join(out, "budget.json")), "method": compression.label,
                "model_dir": report["model_dir"], "dev": report["dev"][compression.stage],
                "params": report.get("params"),
                "sparsity": report.get("sparsity", {}).get("total"),
                "speedup": report.get("speedup")}

    needs = (f"finetune_{model}",) + ((f"time_{compression.budget_of}__int8",)
                                      if compression.budget_of else ())
    return Stage(f"compress_{compression.candidate(model)}", command, collect=collect,
                 needs=needs)


def latency_budget(paths: Paths, compression: compress_lib.Compression) -> float:
    """The latency budget of a ``compress.latency_of`` compression: the measured median of
    the named model's int8 export (its ``time_`` stage), divided by the factor."""
    timing = _read_json(compress_lib.latency_file(paths, compression.budget_of))[0]
    return float(timing["median_ms"]) / compression.factor


def compression_stages(config: PipelineConfig, paths: Paths, model: str) -> list[Stage]:
    """Every compression of one finetuned model, each followed by its exports."""
    stages = []
    for compression in compress_lib.compressions(config.compress):
        candidate = compression.candidate(model)
        stages.append(compress_stage(config, paths, model, compression))
        stages += export_stages(
            config, paths, candidate, os.path.join(paths.compress_dir(candidate), "model"),
            needs=f"compress_{candidate}",
            quantizations=compress_lib.export_quantizations(config, compression),
            sparse=compress_lib.sparse_exports(config, compression))
    return stages


def collect_artifacts(config: PipelineConfig, runner: StageRunner) -> list[Artifact]:
    """Every exported TFLite model with its dev accuracy, latency and file size."""
    from albert_tf.benchmark import targets
    artifacts = []
    results = runner.results()
    for name, result in results.items():
        if not name.startswith("score_"):
            continue
        key = name[len("score_"):]
        timing = results.get(f"time_{key}")
        export = results.get(f"export_{key}")
        if not timing or not export:
            continue
        candidate, label = key.split("__")
        model, _, method = candidate.partition("+")
        model_file = os.path.join(export["export_dir"], "model.tflite")
        # runs before the sparse exports recorded no quantization: the label is it
        quantization = export.get("quantization", label)
        rounds = results.get(TIMING_ROUNDS, {}).get("rows", {}).get(export["export_dir"])
        latency = rounds or {"median_ms": timing["median_ms"]}
        artifacts.append(Artifact(
            name=f"{candidate}/{label}", model=model, method=method or "dense",
            runtime=targets.export_label("tflite", quantization,
                                         sparse=bool(export.get("sparse_weights"))),
            accuracy=float(result["accuracy"]),
            latency_ms=float(latency["median_ms"]),
            size_mib=os.path.getsize(model_file) / 2**20,
            latency_low=latency.get("low_ms"), latency_high=latency.get("high_ms")))
    return artifacts


TIMING_ROUNDS = "timing_rounds"     # the stage that times every export in interleaved rounds


def timing_rounds_stage(config: PipelineConfig, paths: Paths, runner: StageRunner,
                        stages: list[Stage]) -> Stage:
    """Every export timed together in ``export.timing_rounds`` interleaved rounds
    (`albert_tf.benchmark.tflite_export.benchmark_rounds`): the drift of a shared machine
    falls on all of them alike. Recorded like every stage (``rows``: per export directory,
    the median and spread of its round medians)."""
    out = paths("export", "interleaved_latency.json")
    rounds, export = config.export.timing_rounds, config.export

    def command() -> list[str]:
        results = runner.results()
        dirs = [results[s.name]["export_dir"] for s in stages if s.name.startswith("export_")]
        return python_module("albert_tf.benchmark.tflite_export",
                             *[f"--model={d}" for d in dirs], f"--rounds={rounds}",
                             f"--threads={export.threads}", f"--runs={3 * rounds}",
                             f"--min_seconds={export.timing_seconds}", f"--json={out}",
                             "--overwrite")

    def collect() -> dict[str, Any]:
        return {"rounds": rounds, "rows": {
            r["model"]: {"median_ms": r["median_ms"], "low_ms": r["low_ms"],
                         "high_ms": r["high_ms"]} for r in _read_json(out)}}

    return Stage(TIMING_ROUNDS, command, collect=collect,
                 needs=tuple(s.name for s in stages if s.name.startswith("time_")))


def equal_latency_pairs(config: PipelineConfig) -> list[tuple[str, str]]:
    """(compressed artifact, the model it was budgeted against) for the report."""
    pairs = []
    for model in compress_lib.compressed_models(config):
        for compression in compress_lib.compressions(config.compress):
            if compression.budget_of:
                pairs.append((f"{compression.candidate(model)}/int8",
                              f"{compression.budget_of}/int8"))
    return pairs


def collect_compressions(results: dict[str, dict[str, Any]]) -> list[CompressionRun]:
    """One row per finished compression stage."""
    return [CompressionRun(
        name=name[len("compress_"):], method=r["method"], steps=int(r["steps"]),
        budget_seconds=(None if r.get("budget") == "steps" else float(r["budget_seconds"])),
        seconds=float(r["seconds"]),
        accuracy=r["dev"].get("accuracy"), params=r.get("params"), sparsity=r.get("sparsity"))
        for name, r in results.items() if name.startswith("compress_")]


def final_test_stage(config: PipelineConfig, paths: Paths, runner: StageRunner) -> Stage:
    """Chooses the artifact to ship on dev (`report.choose_final`) and scores it on the
    test split, once: a recorded stage, so a rerun reports the same choice and score."""
    drop = config.final_test.max_dev_drop
    choice_file, scores = paths("final_test", "choice.json"), paths("final_test", "test.json")
    rule = (f"the fastest artifact within {drop:g} points of the best dev accuracy (latencies "
            "inside each other's interleaved-round spread are ties: the more accurate), chosen "
            "before test was read")

    def command() -> list[str]:
        chosen = choose_final(collect_artifacts(config, runner), drop)
        os.makedirs(paths("final_test"), exist_ok=True)
        export_dir = runner.results()[f"export_{chosen.name.replace('/', '__')}"]["export_dir"]
        write_json(choice_file, {"artifact": chosen.name, "export_dir": export_dir,
                                 "dev_accuracy": chosen.accuracy,
                                 "latency_ms": chosen.latency_ms, "size_mib": chosen.size_mib,
                                 "rule": rule})
        return python_module("albert_tf.runtime.evaluate", f"--model={export_dir}",
                             f"--task={config.finetune.task}", f"--data_dir={config.data_dir}",
                             f"--threads={config.export.threads}", "--split=test",
                             f"--json={scores}", "--overwrite")

    def collect() -> dict[str, Any]:
        test = _read_json(scores)[0]
        return {**_read_json(choice_file), "test_accuracy": test["accuracy"],
                "test_examples": test["examples"]}

    return Stage("final_test", command, collect=collect)


def budget_meta(config: PipelineConfig, results: dict[str, dict[str, Any]]) -> dict[str, str]:
    """The report's budget lines: steps per stage, the wall-clock guards, and every
    stage a guard stopped before its steps (recorded final step < the budget)."""
    pretrain, finetune, compress = config.pretrain, config.finetune, config.compress
    meta = {"pretraining steps per model": ", ".join(
                f"{m} {pretrain.steps_for(m)}" for m in pretrain.models) +
            f" (held-out loss every {pretrain.validation_interval}; wall-clock guard "
            f"{pretrain.seconds:g} s)",
            "finetuning steps per model": f"{finetune.max_steps} (dev every "
            f"{finetune.validation_interval}; wall-clock guard {finetune.seconds:g} s)"}
    if compress.enabled:
        meta["compression steps per stage"] = (
            f"{compress.steps} (compress.seconds={compress.seconds:g} not enforced: "
            "albert-tf-compress has no wall-clock stop)" if compress.steps > 0 else
            f"compress.seconds={compress.seconds:g} turned into steps at the measured "
            "finetuning speed (see the compression table)")
    short = [f"{name} at step {r['steps']} of {r['max_steps']}"
             for name, r in sorted(results.items())
             if name.startswith(("pretrain_", "finetune_")) and r.get("steps") is not None
             and r.get("max_steps") and r["steps"] < r["max_steps"]]
    meta["stopped by a wall-clock guard"] = "; ".join(short) if short else "none"
    return meta


def report_stage(config: PipelineConfig, paths: Paths, runner: StageRunner) -> Stage:
    def collect() -> dict[str, Any]:
        results = runner.results()
        curves = {name[len("pretrain_"):]: [tuple(p) for p in r.get("curve", [])]
                  for name, r in results.items() if name.startswith("pretrain_")}
        artifacts = collect_artifacts(config, runner)
        meta = {"experiment output": paths.root, "task": config.finetune.task,
                **budget_meta(config, results),
                "latency": f"TFLite, batch 1, seq {config.export.seq_length}, "
                           f"{config.export.threads} threads, " + (
                               f"median of {config.export.timing_rounds} interleaved rounds' "
                               "medians (spread: their lowest-highest)"
                               if TIMING_ROUNDS in results else "median")}
        for name, r in sorted(results.items()):
            if name.startswith("finetune_"):
                meta[f"{name} best dev {r['best']['metric']}"] = round(r["best"]["value"], 4)
        write_report(paths("report"), artifacts, curves, meta, collect_compressions(results),
                     results.get("final_test"), equal_latency_pairs(config))
        return {"report": paths("report", "report.md"), "artifacts": len(artifacts)}
    return Stage("report", None, collect=collect)


def all_stages(config: PipelineConfig, paths: Paths) -> list[Stage]:
    stages = data_stages(config, paths)
    for model in config.pretrain.models:
        stages.append(pretrain_stage(config, paths, model))
    for model in config.pretrain.models:
        stages.append(finetune_stage(config, paths, model))
    for model in config.pretrain.models:
        stages += export_stages(config, paths, model, paths.finetuned_model(model),
                                needs=f"finetune_{model}")
    for model in compress_lib.compressed_models(config):
        stages += compression_stages(config, paths, model)
    return stages


SETTINGS_FILE = "experiment.yaml"    # the settings a pipeline run directory was made with


def _settings(config: PipelineConfig) -> dict[str, Any]:
    """``config`` as dotted keys, but where it runs (``output_dir``, ``data_dir``)."""
    from albert_tf import hyperparams
    flat: dict[str, Any] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                walk(f"{prefix}.{key}" if prefix else key, item)
        else:
            flat[prefix] = value
    walk("", hyperparams.as_dict(config))
    return {k: v for k, v in flat.items() if k not in ("output_dir", "data_dir")}


def check_same_settings(config: PipelineConfig, paths: Paths) -> None:
    """A run directory's finished stages are kept on a rerun, so a rerun with other
    settings would report results it did not compute: refused, naming what differs."""
    import yaml
    path = paths(SETTINGS_FILE)
    if not os.path.isfile(path):
        return                       # a new run, or one from before the record
    with open(path, encoding="utf-8") as f:
        earlier = yaml.safe_load(f) or {}
    now = _settings(config)
    changed = sorted(k for k in set(now) | set(earlier) if now.get(k) != earlier.get(k))
    if changed:
        shown = "; ".join(f"{k}: {earlier.get(k)!r} -> {now.get(k)!r}" for k in changed[:3])
        raise ConfigValueError(
            f"--output_dir={config.output_dir} holds a run made with other settings ({shown}"
            f"{'; ...' if len(changed) > 3 else ''}; its {SETTINGS_FILE}): its finished "
            "stages would be kept and reported as if run with these; pass a new "
            "--output_dir, or the settings it was made with.")


def record_settings(config: PipelineConfig, paths: Paths) -> None:
    """Writes the settings of the run (`check_same_settings` compares the next ones)."""
    import yaml
    from albert_tf import outputs
    outputs.write_text(paths(SETTINGS_FILE), yaml.safe_dump(_settings(config), sort_keys=True))


def run_pipeline(config: PipelineConfig, echo: Callable[[str], None] = print) -> dict:
    """Runs every unfinished stage, then rebuilds the report; ``config`` and every
    compression config are validated first, so a bad value fails before anything is
    written. ``config.data_dir`` becomes absolute here (`resolve_data_dir`)."""
    validate(config)
    compress_lib.check_compression_configs(config)
    paths = Paths(config.output_dir)
    resolve_data_dir(config, corpus_needed=not os.path.exists(
        os.path.join(paths.root, "stages", "corpus_split.json")))
    from albert_tf import outputs   # a run directory: written into, resumed, never replaced
    kind = outputs.RUN_KINDS["albert-tf-run"]
    outputs.check_run_directory(config.output_dir, kind=kind,
                                inputs=[("--data_dir", config.data_dir)], flag="--output_dir")
    stages = all_stages(config, paths)
    if config.final_test.enabled and not any(s.name.startswith("export_") for s in stages):
        raise ConfigValueError(
            "final_test: nothing is exported to choose from (export.quantizations is empty "
            "and no compression exports anything); list a quantization in "
            "export.quantizations (e.g. [dynamic]) or set final_test.enabled=false.")
    check_same_settings(config, paths)
    outputs.mark_run_directory(config.output_dir, kind)
    record_settings(config, paths)
    runner = StageRunner(paths.root, echo=echo)
    for stage in stages:
        runner.run(stage)
    if config.export.timing_rounds and any(s.name.startswith("export_") for s in stages):
        runner.run(timing_rounds_stage(config, paths, runner, stages))
    if config.final_test.enabled:
        runner.run(final_test_stage(config, paths, runner))
    # The report is rebuilt on every run from whatever stages have finished.
    if os.path.exists(runner.result_path("report")):
        os.remove(runner.result_path("report"))
    runner.run(report_stage(config, paths, runner))
    echo(f"report: {paths('report', 'report.md')}")
    return runner.results()
