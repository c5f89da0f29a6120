"""SST-2 dev end to end: raw text in, labels out, all 872 dev sentences, bucketed by length.

    python -m albert_tf.benchmark.end_to_end --model=EXPORT_DIR [--data_dir=DIR] \\
        [--threads=2] [--min_seconds=3]

``EXPORT_DIR`` is a TFLite export of a classifier with one static ``[batch, seq]`` signature
per sequence-length bucket (``albert-tf-export --format=tflite --seq_lengths=16,32,64,128
--batch_size=8``). One *pass* is what an application does with the whole dev set, through
`albert_tf.runtime.tflite.TFLiteRunner.predict` (its preprocessor,
`albert_tf.runtime.preprocessor.Preprocessor`): tokenize every sentence with the Python
SentencePiece tokenizer (ALBERT preprocessing included), put it in the smallest bucket that
holds it (only sentences longer than the largest bucket are truncated), run each bucket in
batches of the signature's static size (the last partial batch padded), and take the argmax
label. Loading the interpreter and the vocabulary, and one warm-up batch per bucket, are not
timed; then whole passes run until ``--min_passes`` and ``--min_seconds`` are both met and
the median pass gives sentences/s. Prints one JSON object (`EndToEndResult.summary` + peak RSS).

Accuracy against the dev labels is reported only for models finetuned on SST-2 (metadata
``task`` ``sst2``); for anything else (random weights, a random head on a pretrained encoder,
another task) it is ``None``: the labels are still produced and timed.

``EXPORT_DIR`` may also be an OpenVINO export (`albert_tf.export.openvino`, dynamic
``[batch, seq]``): it runs through `albert_tf.runtime.openvino.OpenVinoClassifier`, a
runner on the same preprocessor (Python tokenization, bucketing and batching),
compiled per ``[--batch_size, bucket]`` of ``--buckets`` (the warm-up compiles every shape)
at ``--precision`` (``f32``, ``bf16``; default OpenVINO's), so its sentences/s compare with
TFLite's on the same buckets and batch sizes. An ONNX export (`albert_tf.export.onnx`) runs
the same way through `albert_tf.runtime.onnx.OnnxClassifier` (one ONNX Runtime
session for every shape).

`benchmark_end_to_end` is the `albert-tf-benchmark --sst2_end_to_end` driver: it builds a
classifier model directory when the given one has no classification head (random 2-class
head on the same encoder weights), exports it per quantization and batch size with
`albert_tf.benchmark.suite.ArtifactBuilder` (and, for the ``ir_*`` runtimes, once per
OpenVINO quantization), and times each export in a fresh process that never imports
TensorFlow.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any, Callable, Sequence

from albert_tf import cli
from albert_tf.data.task_data import expected_glue_file   # no TensorFlow
from albert_tf.export import formats   # no TensorFlow
from albert_tf.export import metadata as meta_lib   # no TensorFlow
from albert_tf.export.signatures import bucket_lengths   # no TensorFlow

SST2_DEV = expected_glue_file("", "sst2", "dev")   # glue/SST-2/dev.tsv under the data root
SST2_LABELS = ("0", "1")
SST2_TASKS = ("sst2", "sst-2")
RANDOM_HEAD_TASK = "sst2-random-head"   # a task name no accuracy is reported for
# Every 8 tokens up to 80 (SST-2 dev's longest sentence), then 96 and 128: against
# 16/32/64/128 this cuts the padded tokens a sentence from 44.3 to 35.5 (batch 8) and ran
# ALBERT-base dynamic int8 at 116 vs 94 sentences/s (README, CPU benchmark).
DEFAULT_BUCKETS = (16, 24, 32, 40, 48, 56, 64, 72, 80, 96, 128)
DEFAULT_BATCH_SIZES = (1, 8, 32)
# Server exports (token ids in, any [batch, seq]): their metadata format -> (module, class)
# of their runner, and their --format names.
SERVER_RUNNERS = {f.metadata_format: tuple(f.runner.split(":"))
                  for f in formats.every_format() if f.token_ids_server}
END_TO_END_SERVERS = tuple(f.name for f in formats.every_format() if f.token_ids_server)


class EndToEndError(ValueError):
    """The dev data or the model cannot be used; the message says why and what to do."""


# ----------------------------------------------------------------------------------------
# Inputs: the dev set and the model.


def sst2_dev_file(data_dir: str | None) -> str:
    """``<data_dir>/glue/SST-2/dev.tsv`` (``data_dir`` default ``$ALBERT_TF_DATA_DIR``); a
    clear error naming the path when it is absent."""
    from albert_tf import resources
    try:
        data_dir = resources.data_dir(data_dir or None)
    except resources.DataDirError as e:
        raise EndToEndError(f"the SST-2 end-to-end benchmark reads <data_dir>/{SST2_DEV}: "
                            f"{e}") from None
    path = os.path.join(data_dir, SST2_DEV)
    if not os.path.isfile(path):
        raise EndToEndError(
            f"SST-2 dev file not found: {path}. The end-to-end benchmark reads the 872 GLUE "
            f"SST-2 dev sentences (TSV with a 'sentence<TAB>label' header) from "
            f"<data_dir>/{SST2_DEV}: {resources.data_dir_fix()} for a directory holding it.")
    return path


def load_sst2_dev(dev_file: str) -> tuple[list[str], list[str]]:
    """(sentences, labels) of an SST-2 dev TSV, in file order."""
    from albert_tf.data.task_data import TaskDataError, read_examples
    if not os.path.isfile(dev_file):
        raise EndToEndError(f"SST-2 dev file not found: {dev_file}. Pass the path of GLUE "
                            f"SST-2 dev.tsv (or --data_dir=DIR with DIR/{SST2_DEV}).")
    try:
        examples = read_examples(dev_file, ["sentence"], "label", has_header=True,
                                 label_list=SST2_LABELS)
    except TaskDataError as e:
        raise EndToEndError(f"{dev_file}: not an SST-2 TSV with a 'sentence<TAB>label' "
                            f"header ({e}).") from e
    if not examples:
        raise EndToEndError(f"{dev_file}: no labeled sentences (expected a 'sentence<TAB>"
                            "label' header and rows with label 0 or 1).")
    return [ex.text_a for ex in examples], [ex.label for ex in examples]


def _runner_class():
    """`albert_tf.runtime.tflite.TFLiteRunner` (imported on use; it loads the LiteRT
    runtime when it makes an interpreter)."""
    from albert_tf.runtime.tflite import TFLiteRunner
    return TFLiteRunner


def check_export(model: str) -> dict[str, Any]:
    """The metadata of an export with token-id bucket signatures and a classification head;
    a clear `EndToEndError` otherwise (nothing is loaded)."""
    meta, error = None, None
    for fmt in (meta_lib.FORMAT, *SERVER_RUNNERS):
        try:
            meta = meta_lib.read_metadata(model, fmt)
            break
        except meta_lib.MetadataError as e:
            error = error or e
    if meta is None:
        raise EndToEndError(
            f"{model}: {error} The end-to-end benchmark needs an export directory written by "
            "albert-tf-export --format=tflite --seq_lengths=16,32,64,128 (model.tflite "
            "with its metadata.json), or --format=openvino / --format=onnx.")
    buckets = sorted(sig["seq_length"] for sig in meta.get("signatures", {}).values()
                     if "seq_length" in sig)
    if meta["format"] in SERVER_RUNNERS:
        buckets = [0]       # token ids in; the runner buckets (dynamic or its static length)
    if meta.get("tokenizer", {}).get("in_graph") or not buckets:
        raise EndToEndError(
            f"{model}: no [batch, seq] token-id bucket signatures (signatures: "
            f"{sorted(meta.get('signatures', {}))}); the end-to-end benchmark tokenizes in "
            "Python and runs one static signature per sequence-length bucket. Export with "
            "albert-tf-export --format=tflite --seq_lengths=16,32,64,128 (without "
            "--with_tokenizer).")
    if meta.get("head") != "classification" or not meta.get("labels"):
        raise EndToEndError(
            f"{model}: head {meta.get('head')!r}; labels out needs a classification export "
            "(a model directory with task.json head 'classification'; albert-tf-benchmark "
            "adds a random 2-class head to encoder-only model directories).")
    return meta


def open_model(model: str, threads: int = 2, buckets: Sequence[int] | None = None,
               batch_size: int | None = None, precision: str | None = None):
    """A `albert_tf.runtime.tflite.TFLiteRunner` for an export that passes
    `check_export`; for an OpenVINO export an
    `albert_tf.runtime.openvino.OpenVinoClassifier` with ``buckets``, ``batch_size``
    and ``precision``, for an ONNX export an `albert_tf.runtime.onnx.OnnxClassifier`
    with ``buckets`` and ``batch_size``
    (TFLite exports have their own)."""
    fmt = check_export(model)["format"]
    if fmt in SERVER_RUNNERS:
        module, name = SERVER_RUNNERS[fmt]
        runner_class = getattr(importlib.import_module(module), name)
        if fmt == meta_lib.ONNX_FORMAT:
            if precision:
                raise EndToEndError(f"{model}: an ONNX export runs at float32 / its int8; "
                                    f"no precision option (got {precision!r}).")
            return runner_class(model, threads, buckets, batch_size)
        return runner_class(model, threads, precision, buckets, batch_size)
    if buckets or batch_size or precision:
        raise EndToEndError(f"{model}: a TFLite export has its own buckets and batch size "
                            "(its signatures) and no precision option.")
    return _runner_class()(model, num_threads=threads)


def accuracy_applies(meta: dict[str, Any]) -> tuple[bool, str]:
    """Whether accuracy on SST-2 dev means something for this export, and why (not)."""
    task = str(meta.get("task") or "")
    if task.lower() not in SST2_TASKS:
        return False, (f"task {task!r} is not SST-2 (random weights, a random head or another "
                       "task): accuracy not meaningful")
    if sorted(meta.get("labels") or ()) != sorted(SST2_LABELS):
        return False, f"labels {meta.get('labels')} are not SST-2's {list(SST2_LABELS)}"
    return True, "SST-2 finetuned model"


# ----------------------------------------------------------------------------------------
# Measurement.


@dataclasses.dataclass
class EndToEndResult:
    """One export timed on the dev sentences (see the module docstring)."""

    model: str
    quantization: str | None
    task: str | None
    batch_size: int
    buckets: list[int]
    threads: int
    sentences: int
    bucket_counts: dict[int, int]      # sentences per bucket (sequence length)
    rows_run: int                      # rows through the model, last partial batches padded
    truncated: int                     # sentences longer than the largest bucket
    tokenize_seconds: float            # tokenizing + packing all sentences once (in each pass)
    pass_seconds: list[float]          # every timed pass
    seconds: float                     # median pass: wall time for all sentences
    sentences_per_s: float
    accuracy: float | None
    accuracy_note: str
    predictions: list[str]             # label per sentence, input order
    bucket_of: list[int]               # bucket (sequence length) per sentence

    def summary(self) -> dict[str, Any]:
        """Everything but the per-sentence lists (JSON keys are strings)."""
        out = dataclasses.asdict(self)
        del out["predictions"], out["bucket_of"]
        out["bucket_counts"] = {str(k): v for k, v in self.bucket_counts.items()}
        return out


def measure(model: str, sentences: Sequence[str], labels: Sequence[str] | None = None,
            threads: int = 2, min_seconds: float = 3.0, min_passes: int = 2,
            max_passes: int = 50, runner=None, label: str | None = None) -> EndToEndResult:
    """Times whole passes over ``sentences`` through ``model`` (an export directory).
    ``label``: what the report calls it (default: its quantization)."""
    sentences = list(sentences)
    if not sentences:
        raise EndToEndError("no sentences to run.")
    if labels is not None and len(labels) != len(sentences):
        raise EndToEndError(f"{len(sentences)} sentences but {len(labels)} labels.")
    runner = runner or open_model(model, threads)
    rows, by_bucket = runner.assign(sentences)
    seq_of_key = {key: seq for seq, key in runner.buckets}
    bucket_of = [0] * len(sentences)
    for key, indices in by_bucket.items():
        for i in indices:
            bucket_of[i] = seq_of_key[key]
    largest = runner.buckets[-1][0]
    # [CLS] ids [SEP] longer than the largest bucket: truncated (`TFLiteRunner.pack`).
    truncated = sum(1 for i, r in enumerate(rows) if bucket_of[i] == largest
                    and r["input_mask"][-1] == 1
                    and len(runner.tokenizer.encode(sentences[i])) + 2 > largest)
    sizes = {key: runner.batch_size(key) for key in by_bucket}
    rows_run = sum(-(-len(ix) // sizes[key]) * sizes[key] for key, ix in by_bucket.items())

    # Warm-up (untimed): one batch per bucket creates the signature runners and lets
    # XNNPACK pack its weights.
    runner.predict([sentences[i] for key, ix in by_bucket.items() for i in ix[:sizes[key]]])
    start = time.perf_counter()   # the tokenizer's share of a pass (its tables now built)
    runner.assign(sentences)
    tokenize_seconds = time.perf_counter() - start
    passes: list[float] = []
    predictions: list[dict] = []
    while len(passes) < max(1, min_passes) or (sum(passes) < min_seconds
                                                and len(passes) < max_passes):
        t0 = time.perf_counter()
        predictions = runner.predict(sentences)
        passes.append(time.perf_counter() - t0)
    predicted = [p["label"] for p in predictions]
    seconds = statistics.median(passes)

    applies, note = accuracy_applies(runner.meta)
    accuracy = None
    if labels is None:
        note = "no labels given"
    elif applies:
        accuracy = sum(p == str(y) for p, y in zip(predicted, labels)) / len(labels)
    batch_sizes = sorted({runner.batch_size(key) for _, key in runner.buckets})
    return EndToEndResult(
        model=model, quantization=label or runner.meta.get("quantization"),
        task=runner.meta.get("task"),
        batch_size=batch_sizes[0] if len(batch_sizes) == 1 else max(batch_sizes),
        buckets=[seq for seq, _ in runner.buckets], threads=threads, sentences=len(sentences),
        bucket_counts={seq: bucket_of.count(seq) for seq, _ in runner.buckets},
        rows_run=rows_run, truncated=truncated, tokenize_seconds=tokenize_seconds,
        pass_seconds=passes, seconds=seconds, sentences_per_s=len(sentences) / seconds,
        accuracy=accuracy, accuracy_note=note, predictions=predicted, bucket_of=bucket_of)


# ----------------------------------------------------------------------------------------
# The worker process and the albert-tf-benchmark driver.


def run_in_worker(model: str, dev_file: str, threads: int = 2, min_seconds: float = 3.0,
                  min_passes: int = 2, buckets: Sequence[int] | None = None,
                  batch_size: int | None = None, precision: str | None = None,
                  label: str | None = None) -> dict[str, Any]:
    """`measure` in a fresh process (no TensorFlow, its own peak RSS); returns its JSON.
    ``buckets``, ``batch_size``: server exports (OpenVINO, ONNX); ``precision``: OpenVINO
    (`open_model`)."""
    command = [sys.executable, "-m", "albert_tf.benchmark.end_to_end", f"--model={model}",
               f"--dev_file={dev_file}", f"--threads={threads}",
               f"--min_seconds={min_seconds}", f"--min_passes={min_passes}"]
    if buckets:
        command.append("--buckets=" + ",".join(str(b) for b in buckets))
    command += [f"--{k}={v}" for k, v in (("batch_size", batch_size), ("precision", precision),
                                          ("label", label)) if v]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"SST-2 end-to-end run of {model} failed:\n{result.stderr[-2000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def classifier_model_dir(model_dir: str, work_dir: str, max_seq_length: int = 128,
                         seed: int = 0) -> str:
    """``model_dir`` when it holds a classification head; otherwise (an encoder or a
    pretrained model) a model directory under ``work_dir`` with the same encoder weights
    and a seeded random 2-class head, task `RANDOM_HEAD_TASK` (no accuracy reported)."""
    from albert_tf.checkpoints import (TASK_FILE, CheckpointError, TaskInfo,
                                       load_config_from_dir, load_task_info, vocab_path)
    if os.path.exists(os.path.join(model_dir, TASK_FILE)):
        import albert_tf.heads.registry as heads
        from albert_tf.heads.classification import ClassificationHead
        if isinstance(heads.get(load_task_info(model_dir).head), ClassificationHead):
            return model_dir
    out = os.path.join(work_dir, "model")
    if os.path.exists(os.path.join(out, "config.json")):
        return out
    import albert_tf
    from albert_tf.backend import keras
    keras.utils.set_random_seed(seed)
    config = load_config_from_dir(model_dir)
    model = albert_tf.build_classifier(config, len(SST2_LABELS))
    albert_tf.restore_weights(model, model_dir)
    try:
        vocab = vocab_path(model_dir)            # vocab.model or vocab.txt
    except CheckpointError:
        vocab = None
    info = TaskInfo(task=RANDOM_HEAD_TASK, head="classification", label_list=SST2_LABELS,
                    max_seq_length=max_seq_length)
    albert_tf.save_model_dir(model, out, task_info=info,
                             vocab_file=vocab)
    return out


def benchmark_end_to_end(name: str, model_dir: str, quantizations: Sequence[str],
                         batch_sizes: Sequence[int], buckets: Sequence[int], work_dir: str,
                         data_dir: str, threads: int = 2, min_seconds: float = 3.0,
                         echo: Callable[[str], None] = print,
                         servers: Sequence[str] = ()):
    """One `EndToEndMeasurement` per (quantization, batch size) of one model directory,
    and per (``servers`` runtime, batch size): our OpenVINO export (``ir_none``, ``ir_bf16``,
    ``ir_int8``) or ONNX export (``ort_none``, ``ort_int8``) run at the same buckets and
    batch sizes."""
    from albert_tf.benchmark.tables import EndToEndMeasurement
    from albert_tf.benchmark.artifacts import ArtifactBuilder
    dev_file = sst2_dev_file(data_dir)
    from albert_tf import resources
    data_dir = resources.data_dir(data_dir or None)   # exists: sst2_dev_file checked it
    buckets = bucket_lengths(buckets)
    classifier = classifier_model_dir(model_dir, os.path.join(work_dir, name, "sst2_classifier"),
                                      buckets[-1])
    builder = ArtifactBuilder(classifier, os.path.join(work_dir, name), data_dir, echo)
    rows = []
    for quantization in quantizations:
        for batch in batch_sizes:
            export = builder.tflite_buckets(quantization, int(batch), buckets)
            echo(f"  SST-2 end to end: {name} {quantization} batch {batch} buckets {buckets}")
            rows.append(EndToEndMeasurement.from_result(
                name, run_in_worker(export, dev_file, threads, min_seconds)))
            echo("    " + rows[-1].describe())
    if servers:
        from albert_tf.benchmark import targets
        from albert_tf.runtime.sessions import OPENVINO_PRECISIONS
        # Its own work directory: the per-shape benchmark's exports of ``name`` may be of an
        # encoder without this classifier head.
        server_builder = ArtifactBuilder(
            classifier, os.path.join(work_dir, name, "sst2_classifier"), data_dir, echo)
    for runtime in servers:
        target = targets.get(runtime)
        export = os.path.dirname(target.build(server_builder, []))
        precision = OPENVINO_PRECISIONS.get(target.worker)
        for batch in batch_sizes:
            echo(f"  SST-2 end to end: {name} {runtime} batch {batch} buckets {buckets}")
            rows.append(EndToEndMeasurement.from_result(name, run_in_worker(
                export, dev_file, threads, min_seconds, buckets=buckets, batch_size=int(batch),
                precision=precision, label=runtime)))
            echo("    " + rows[-1].describe())
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    from albert_tf.benchmark.worker import peak_rss_mib
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="TFLite export directory (buckets)")
    parser.add_argument("--data_dir", default=None,
                        help="data root holding glue/SST-2/dev.tsv (default $ALBERT_TF_DATA_DIR)")
    parser.add_argument("--dev_file", default=None, help=f"default <data_dir>/{SST2_DEV}")
    parser.add_argument("--threads", type=int, default=2, help="interpreter threads")
    parser.add_argument("--min_seconds", type=float, default=3.0,
                        help="minimum timed seconds")
    parser.add_argument("--min_passes", type=int, default=2, help="minimum passes over dev")
    parser.add_argument("--buckets", default=None, help="OpenVINO exports: comma-separated "
                        "sequence-length buckets (default: the runner's)")
    parser.add_argument("--batch_size", type=int, default=None,
                        help="OpenVINO exports: rows per call (default: the runner's)")
    parser.add_argument("--precision", default=None, help="OpenVINO exports: "
                        "INFERENCE_PRECISION_HINT, f32 or bf16 (default: OpenVINO's)")
    parser.add_argument("--label", default=None, help="the report's name for this run "
                        "(default: the export's quantization)")
    args = parser.parse_args(list(argv) if argv is not None else None)
    try:
        dev_file = args.dev_file or sst2_dev_file(args.data_dir)
        sentences, labels = load_sst2_dev(dev_file)
        buckets = [int(b) for b in args.buckets.split(",")] if args.buckets else None
        runner = open_model(args.model, args.threads, buckets, args.batch_size, args.precision)
        result = measure(args.model, sentences, labels, args.threads, args.min_seconds,
                         args.min_passes, runner=runner, label=args.label)
    except EndToEndError as e:
        cli.error(e)
        return 2
    json.dump(dict(result.summary(), dev_file=dev_file, peak_rss_mib=peak_rss_mib(),
                   imported_tensorflow="tensorflow" in sys.modules), sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
