"""The export formats: one record per format, one call for all of them.

    from albert_tf.export import formats
    formats.export("tflite", "runs/sst2", "edge/sst2_int8",
                   formats.ExportOptions(quantization="int8", seq_lengths=(64, 128)))
    formats.export("onnx", "runs/sst2", "server/sst2", formats.ExportOptions(quantization="int8"))

Every format takes the same arguments (TF Model Garden's export module is the model): a
model directory, an output path and one `ExportOptions`, whose fields are ``None`` when not
given. Each `ExportFormat` says which options it takes (`ExportFormat.options`), which
quantizations (`ExportFormat.quantizations`), how many sequence lengths, and the
one-line refusals of options that make no sense for it; `problem` turns a request into that
one line before anything is read. ``albert-tf-export`` takes ``--format`` and the
``--quantization`` choices from here; `albert_tf.benchmark.targets` names a format and a
quantization for each of our deployment targets.

Adding a format: write its exporter (``export_<format>(model_dir, output, ..., source=None)
-> output``) and register one `ExportFormat` below (its test: tests/test_export_formats.py).

This module imports no TensorFlow; the exporters do, when called.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
from typing import Callable

from albert_tf.export import metadata as meta_lib   # no TensorFlow
from albert_tf.export.errors import ExportError, export_inputs

_FORMATS: dict[str, "ExportFormat"] = {}


@dataclasses.dataclass(frozen=True)
class ExportOptions:
    """What an export may be asked for; ``None``: not given (the format's default).

    Common: ``quantization`` (default ``"none"``), ``seq_lengths`` (static sequence
    lengths: TFLite one signature each, ONNX / OpenVINO at most one; default the model's
    ``max_seq_length`` for TFLite, dynamic for the others), ``batch_size`` (static batch;
    default 1 for TFLite, dynamic for ONNX / OpenVINO), ``vocab_file``, ``overwrite``.
    Calibration (int8): ``calibration_file``, ``data_dir``, ``num_calibration``.
    ``sparse_weights``: store the pruned weights sparse for the runtime's sparse kernels (a
    pattern of `albert_tf.export.sparsity.PATTERNS`, or ``"auto"``: the one the zeros form;
    `albert_tf.export.sparsity`). The rest belong to one format or two
    (`ExportFormat.options`).
    """

    quantization: str | None = None
    seq_lengths: tuple[int, ...] | None = None
    batch_size: int | None = None
    vocab_file: str | None = None
    overwrite: bool | None = None
    calibration_file: str | None = None
    data_dir: str | None = None
    num_calibration: int | None = None
    head: str | None = None                  # tflite, openvino: "embedding"
    with_tokenizer: bool | None = None       # tflite: strings in
    qat_model_dir: str | None = None         # tflite: the quantization-aware model
    strict_int8: bool | None = None          # tflite
    int8_float_ops: object = None            # tflite: "xnnpack", "none" or op names
    sdk_metadata: str | None = None          # tflite: auto, on, off
    converter: str | None = None             # tflite: tf.lite, litert, auto
    sparse_weights: str | None = None        # tflite, openvino: a pattern or auto
    name: str | None = None                  # saved_model: model name
    version: int | None = None               # saved_model: version number

    def given(self) -> tuple[str, ...]:
        """The names of the options that were given (not None, not False)."""
        return tuple(f.name for f in dataclasses.fields(self)
                     if getattr(self, f.name) not in (None, False))


COMMON = ("quantization", "seq_lengths", "batch_size", "vocab_file", "overwrite")
CALIBRATION = ("calibration_file", "data_dir", "num_calibration")


@dataclasses.dataclass(frozen=True)
class ExportFormat:
    """One ``--format``.

    Attributes:
      name: the ``--format`` value.
      title: "A TFLite export": the subject of its messages.
      exporter: ``"module:function"``, imported on use; called as
        ``function(model_dir, output, **arguments(options), source=source)``.
      quantizations: the ``--quantization`` choices (a zero-argument callable: the TFLite
        recipe table is read when asked).
      int8_method: how its int8 is made, for messages and docs.
      options: the `ExportOptions` fields it takes (`COMMON` always).
      seq_lengths: ``"many"`` (one signature per length), ``"one"`` (a static length or
        dynamic), ``None`` (takes none).
      refusals: option -> the one line refusing it (instead of the generic one).
      summary: ``summary(path) -> lines`` printed by ``albert-tf-export`` after writing.
      metadata_format: ``metadata.json``'s ``format`` (`albert_tf.export.metadata`).
      runner: ``"module:Class"`` running the export on raw text (None: TF Serving's).
      model_files: the suffixes of its model files (``.tflite``; ``.xml`` and ``.bin``).
      runtime: ``(package, extra)``: the Python package that runs it and the albert-tf
        extra that installs it (None: the base install has it).
      writes_inside: ``output`` is a base directory it writes a new directory inside
        (TF Serving's ``<output>/<name>/<version>/``), not the export directory itself.
    """

    name: str
    title: str
    exporter: str
    quantizations: Callable[[], tuple[str, ...]]
    int8_method: str
    options: tuple[str, ...]
    seq_lengths: str | None
    refusals: dict[str, str]
    summary: Callable[[str], list[str]]
    metadata_format: str | None = None
    runner: str | None = None
    model_files: tuple[str, ...] = ()
    runtime: tuple[str, str] | None = None
    writes_inside: bool = False

    @property
    def token_ids_server(self) -> bool:
        """Token ids in at any (or one static) [batch, seq]: an x86-server export whose
        Python runner tokenizes and buckets (ONNX, OpenVINO)."""
        return self.seq_lengths == "one"

    def takes(self) -> tuple[str, ...]:
        return tuple(o for o in COMMON if o != "seq_lengths" or self.seq_lengths) \
            + self.options

    def problem(self, options: ExportOptions) -> str | None:
        """Why ``options`` make no sense for this format, in one line (None: they do).
        Refusals first, then options it does not take, then the quantization and the number
        of sequence lengths; values are the exporter's to check. ``sparse_weights`` first:
        its refusal names the exports that run sparse weights
        (`albert_tf.export.sparsity.problem`)."""
        if options.sparse_weights is not None:
            from albert_tf.export import sparsity   # no TensorFlow
            line = sparsity.problem(self.name, options.quantization, options.sparse_weights)
            if line:
                return line
        given = options.given()
        for option in given:
            if option in self.refusals:
                return self.refusals[option]
        other = [f"--{o}" for o in given if o not in self.takes()]
        if other:
            return f"{', '.join(other)}: not an option of --format={self.name}; drop it."
        quantization = options.quantization or "none"
        if quantization not in self.quantizations():
            return (f"--quantization={quantization}: {self.title[0].lower()}{self.title[1:]} "
                    f"is {' or '.join(self.quantizations())} (int8: {self.int8_method}).")
        if self.quantizations is _tflite_recipes:
            line = _recipe_problem(quantization, options)
            if line:
                return line
        if self.seq_lengths == "one" and options.seq_lengths and len(options.seq_lengths) > 1:
            return (f"--seq_lengths={','.join(str(s) for s in options.seq_lengths)}: "
                    f"{self.title} has one shape: pass one length for a static export, or "
                    "none for dynamic [batch, seq] inputs.")
        return None

    def arguments(self, options: ExportOptions) -> dict:
        """The exporter's keyword arguments for ``options`` (the given ones it takes)."""
        kwargs = {o: getattr(options, o) for o in self.takes()
                  if getattr(options, o) is not None}
        if self.seq_lengths == "one":
            lengths = kwargs.pop("seq_lengths", None)
            if lengths:
                kwargs["seq_length"] = int(lengths[0])
        elif "seq_lengths" in kwargs:
            kwargs["seq_lengths"] = [int(s) for s in kwargs["seq_lengths"]]
        return kwargs

    def check_output(self, model_dir: str, output: str, options: ExportOptions) -> None:
        """``output`` is a path albert-tf may write (`albert_tf.outputs`), or an
        ``OutputError`` says why not; before any exporter (or TensorFlow) is imported."""
        from albert_tf import outputs
        inputs = export_inputs(model_dir, options.vocab_file, options.calibration_file,
                               options.qat_model_dir)
        if self.writes_inside:
            outputs.check_base_directory(output, inputs=inputs)
        else:
            outputs.check_output(output, kind=outputs.export_kind(self.name), inputs=inputs,
                                 overwrite=bool(options.overwrite))

    def export(self, model_dir: str, output: str, options: ExportOptions = ExportOptions(),
               source=None) -> str:
        """Writes the export; returns its path. A `problem` is an ``ExportError``, an
        output albert-tf may not write an ``OutputError``, both before anything loads."""
        problem = self.problem(options)
        if problem:
            raise ExportError(problem)
        self.check_output(model_dir, output, options)
        module, function = self.exporter.split(":")
        exporter = getattr(importlib.import_module(module), function)
        return exporter(model_dir, output, **self.arguments(options), source=source)


def register(export_format: ExportFormat) -> ExportFormat:
    if export_format.name in _FORMATS:
        raise ValueError(f"export format {export_format.name!r} is registered twice")
    _FORMATS[export_format.name] = export_format
    return export_format


def names() -> tuple[str, ...]:
    """The ``--format`` choices, in registration order."""
    return tuple(_FORMATS)


def get(name: str) -> ExportFormat:
    try:
        return _FORMATS[name]
    except KeyError:
        raise ExportError(f"--format={name!r}: use one of {', '.join(names())}.") from None


def every_quantization() -> tuple[str, ...]:
    """Every format's quantizations, once each (the ``--quantization`` choices)."""
    return tuple(dict.fromkeys(q for f in _FORMATS.values() for q in f.quantizations()))


def every_format() -> tuple[ExportFormat, ...]:
    return tuple(_FORMATS.values())


def export(format_name: str, model_dir: str, output: str,
           options: ExportOptions = ExportOptions(), source=None) -> str:
    """`ExportFormat.export` of the format named ``format_name``."""
    return get(format_name).export(model_dir, output, options, source)


# ------------------------------------------------------------------ what the CLI prints
def _metadata(path: str) -> dict:
    with open(os.path.join(path, "metadata.json"), encoding="utf-8") as f:
        return json.load(f)


def signature_lines(meta: dict, label: str = "") -> list[str]:
    """One line per signature of an export's metadata: its inputs and outputs with shapes."""
    lines = []
    for key, sig in meta["signatures"].items():
        ins = ", ".join(f"{n} {v['dtype']}{v['shape']}" for n, v in sig["inputs"].items())
        outs = ", ".join(f"{n} {v['dtype']}{v['shape']}" for n, v in sig["outputs"].items())
        lines.append(f"  {label}{key}: {ins} -> {outs}")
    return lines


def _saved_model_summary(path: str) -> list[str]:
    return [f"SavedModel written to {path}",
            f"inspect (and run) it: albert-tf-saved-model-cli show --dir {path} --all"]


def _tflite_summary(path: str) -> list[str]:
    from albert_tf.export import quantization as recipes
    meta = _metadata(path)
    size = os.path.getsize(os.path.join(path, meta["model_file"]))
    lines = [f"TFLite model written to {path}/{meta['model_file']} ({size / 1e6:.2f} MB, "
             f"{meta['quantization']})", *signature_lines(meta, "signature ")]
    if meta.get("sdk"):
        runners = ", ".join(meta["sdk"]["runners"]) or "no SDK"
        lines.append(f"  mobile SDK metadata embedded: runs in {runners}; their ids are ours "
                     f"on {meta['sdk']['same_ids_as_albert_tf']}")
        lines += [f"  not in {runner}: {why}"
                  for runner, why in meta["sdk"].get("not_runners", {}).items()]
    elif meta.get("sdk_reason") and meta["sdk_reason"] != "--sdk_metadata=off":
        lines.append(f"  no mobile SDK metadata: {meta['sdk_reason']}")
    if meta["custom_ops"]:
        lines.append(f"  custom ops (register at load time): {meta['custom_ops']}")
    if recipes.get(meta["quantization"]).reports_float_ops:
        lines.append(f"  ops computing in float: {meta['ops']['float_ops'] or 'none'}")
    lines += _sparse_lines(meta)
    return lines


def _sparse_lines(meta: dict) -> list[str]:
    sparse = meta.get("sparse_weights")
    if not sparse:
        return []
    stored = (f"{sparse['tensors']} weights stored in {sparse['pattern']} blocks"
              if "tensors" in sparse else f"{sparse['pattern']} sparse int8 weights")
    return [f"  sparse weights ({100 * sparse['model']['sparsity']:.1f}% zeros): {stored}; "
            f"run with {sparse['run_with']}"]


_FUSED_OPS = ("Attention", "QAttention", "SkipLayerNormalization", "FastGelu", "BiasGelu")


def _onnx_summary(path: str) -> list[str]:
    meta = _metadata(path)
    size = os.path.getsize(os.path.join(path, meta["model_file"]))
    ops = meta["ops"]["by_type"]
    fused = ", ".join(f"{op} {ops[op]}" for op in _FUSED_OPS if op in ops)
    return [f"ONNX model written to {path}/{meta['model_file']} ({size / 2**20:.2f} MiB, "
            f"{meta['quantization']}; fused: {fused})", *signature_lines(meta),
            "  token ids in: tokenize with albert_tf.runtime.onnx.OnnxClassifier"]


def _openvino_summary(path: str) -> list[str]:
    meta = _metadata(path)
    size = sum(os.path.getsize(os.path.join(path, meta[k]))
               for k in ("model_file", "weights_file"))
    return [f"OpenVINO IR written to {path}/{meta['model_file']} (+ {meta['weights_file']}: "
            f"{size / 2**20:.2f} MiB, {meta['quantization']})", *signature_lines(meta),
            "  token ids in: tokenize with albert_tf.runtime.openvino.OpenVinoClassifier",
            *_sparse_lines(meta)]


# ------------------------------------------------------------------ the formats
def _tflite_recipes() -> tuple[str, ...]:
    from albert_tf.export import quantization as recipes
    return recipes.names()


def _recipe_problem(quantization: str, options: ExportOptions) -> str | None:
    """Why the TFLite recipe ``quantization`` cannot make this export, before any work: a
    recipe albert-tf does not export (`albert_tf.export.quantization.Recipe.refused`), or
    calibration (int8) with the tokenizer in the graph (calibration feeds ids)."""
    from albert_tf.export import quantization as recipes
    recipe = recipes.get(quantization)
    if recipe.refused:
        return f"--quantization={quantization}: {recipe.refused}"
    if options.with_tokenizer and recipe.needs_calibration:
        return (f"--with_tokenizer with --quantization={quantization}: calibration runs the "
                "ids signatures; export the int8 model without the tokenizer and tokenize in "
                "the app (see tflite/README.md).")
    return None


_IDS_ONLY = ("--with_tokenizer: {} exports take token ids; tokenize with albert_tf (Python: "
             "albert_tf.export.{}), or export --format=saved_model for raw text in the graph.")

register(ExportFormat(
    name="saved_model", title="A SavedModel", exporter="albert_tf.export.saved_model:"
    "export_saved_model", quantizations=lambda: ("none",), int8_method="none (use tflite, "
    "onnx or openvino)", options=("name", "version"), seq_lengths=None,
    refusals={"head": "--head is a TFLite / OpenVINO export option; the SavedModel's "
                      "`encode` signature serves the encoder outputs."},
    summary=_saved_model_summary, writes_inside=True))
register(ExportFormat(
    name="tflite", title="A TFLite export", exporter="albert_tf.export.tflite:export_tflite",
    quantizations=_tflite_recipes, int8_method="calibrated on the task's train text",
    options=(*CALIBRATION, "head", "with_tokenizer", "qat_model_dir", "strict_int8",
             "int8_float_ops", "sdk_metadata", "converter", "sparse_weights"),
    seq_lengths="many", refusals={}, summary=_tflite_summary,
    metadata_format=meta_lib.FORMAT, runner="albert_tf.runtime.tflite:TFLiteRunner",
    model_files=(".tflite",)))
register(ExportFormat(
    name="openvino", title="An OpenVINO IR",
    exporter="albert_tf.export.openvino:export_openvino",
    quantizations=lambda: ("none", "int8"), int8_method="NNCF post-training quantization",
    options=(*CALIBRATION, "head", "sparse_weights"), seq_lengths="one",
    refusals={"with_tokenizer": (
        "--with_tokenizer: OpenVINO exports take token ids; tokenize with albert_tf (Python: "
        "albert_tf.runtime.openvino.OpenVinoClassifier) - openvino-tokenizers' "
        "SentencePiece conversion differs from the sentencepiece library around user-defined "
        "symbols (243 of 875 texts: SST-2 dev and 3 probes got other ids), and our tf-text "
        "tokenizer graphs do not convert (no OpenVINO conversion for "
        "FastSentencepieceTokenize, SentencepieceTokenizeOp, UnicodeDecode/Encode, "
        "RaggedGather, DenseBincount).")},
    summary=_openvino_summary, metadata_format=meta_lib.OPENVINO_FORMAT,
    runner="albert_tf.runtime.openvino:OpenVinoClassifier", model_files=(".xml", ".bin"),
    runtime=("openvino", "openvino")))
register(ExportFormat(
    name="onnx", title="An ONNX export", exporter="albert_tf.export.onnx:export_onnx",
    quantizations=lambda: ("none", "int8"),
    int8_method="ONNX Runtime dynamic-range quantization, no calibration",
    options=(), seq_lengths="one",
    refusals={"with_tokenizer": _IDS_ONLY.format("ONNX", "onnx_runner.OnnxClassifier")},
    summary=_onnx_summary, metadata_format=meta_lib.ONNX_FORMAT,
    runner="albert_tf.runtime.onnx:OnnxClassifier", model_files=(".onnx",),
    runtime=("onnxruntime", "onnx")))
