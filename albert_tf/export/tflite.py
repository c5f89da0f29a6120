"""TFLite export: static ``[batch, seq]`` signatures, quantization, optional in-graph tokenizer.

    export_tflite("runs/sst2", "edge/sst2_int8", quantization="int8", seq_lengths=(64, 128))

Every signature is a concrete function with static int32 ``[batch, seq]`` inputs
(``input_word_ids``, ``input_mask``, ``input_type_ids``), so the converted graph has no
shape ops. With several ``seq_lengths`` (buckets) the model holds one signature
``seq_<n>`` per bucket over the same weights. ``with_tokenizer=True`` instead builds the
signatures ``serving_default`` (string ``text`` [batch] -> task outputs) and ``tokenize``
(string -> the three ids) around the vocabulary's TFLite tokenizer
(`albert_tf.export.tokenizers.lite_tokenizer`: SentencePiece, custom op
``FastSentencepieceTokenize``; WordPiece, four tf-text custom ops; ``metadata.json`` lists
the ``tflite_registrar`` functions that register them).

Quantization (``quantization=``: a recipe of `albert_tf.export.quantization`, the one table
the binaries and the pipeline read):

=========  ==============================================================================
none       float32
float16    float16 weights (dequantized at load; XNNPACK computes in float32)
dynamic    int8 weights, float activations quantized on the fly (dynamic range)
int8       int8 weights and activations, calibrated on real task text; int32 ids in,
           float outputs; only TFLite builtins. ``int8_float_ops="xnnpack"`` (default)
           keeps the ops XNNPACK cannot run in int8 in float (`XNNPACK_FLOAT_OPS`), so the
           whole graph runs in XNNPACK; ``"none"`` makes every op integer (for
           integer-only accelerators; slower on CPUs). The report lists float ops.
int16x8    refused (`Recipe.refused`): LiteRT has no int16 SQUARED_DIFFERENCE kernel for the
           LayerNorms, so such an export would fail at its first call
qat        a quantization-aware trained Keras model (`load_qat_model`: loaders registered by
           the package that trains it) converted to int8 with its learned ranges (task text,
           or packed features, calibrates the tensors QAT leaves uncovered;
           ``strict_int8=True`` makes every op an int8 builtin)
=========  ==============================================================================

The converter (``converter=``, default ``$ALBERT_TF_TFLITE_CONVERTER`` or ``"auto"``):
``"tf.lite"`` is TensorFlow's ``tf.lite.TFLiteConverter``, every recipe above; ``"litert"``
is LiteRT's converter (the ``litert-converter`` package: the signatures lowered to
StableHLO by XLA, then LiteRT's StableHLO-to-TFLite passes), float exports of ids
signatures only; ``"auto"`` takes tf.lite while TensorFlow ships it and LiteRT's where it
does not. ``metadata.json`` records which one made the model (``converter``). Why two:
TensorFlow 2.20 deprecated ``tf.lite`` (docs/export.md, "The converter after tf.lite").

The export directory holds ``model.tflite`` and the metadata files of
`albert_tf.export.metadata`; it is written to a temporary directory and moved into place.
"""

from __future__ import annotations

import dataclasses
import json
import os
import warnings
from typing import Iterable, Sequence

from albert_tf import cli
from albert_tf.backend import keras, tf
from albert_tf.export import quantization as recipes
from albert_tf import outputs
from albert_tf.export.common import (ExportError, ExportSource, export_inputs, load_source,
                                     with_export_head, without_keras_traces)
from albert_tf.export.quantization import (QAT_DIR, load_qat_model,  # noqa: F401 (API)
                                           register_qat_loader)
from albert_tf.export.quantization import (DEFAULT_CALIBRATION_SIZE, calibration_texts,
                                           representative_dataset)
from albert_tf.export.signatures import bucket_lengths, concrete_functions, signature_key
from albert_tf.networks import INPUT_NAMES

QUANTIZATIONS = recipes.names()   # the recipe table's keys, in order
KIND = outputs.export_kind("tflite")   # what its output marker records

# Ops kept in float by ``int8_float_ops="xnnpack"``: every op but the FULLY_CONNECTED
# layers (and the data-movement ops), because XNNPACK, the CPU backend of LiteRT, has no
# signed-int8 kernel for them (SQUARED_DIFFERENCE, RSQRT, SOFTMAX, GELU), or none for the
# scales/zero points calibration gives them (BATCH_MATMUL with an asymmetric second
# operand, the LayerNorm epsilon ADD and SUB): in a pure int8 model they fall back to the
# slow builtin int8 kernels and cut the graph into ~100 delegate partitions, which made full
# int8 slower than float. See studies/export/README.md for the op-by-op measurements.
XNNPACK_FLOAT_OPS = ("ADD", "SUB", "MUL", "MEAN", "SQUARED_DIFFERENCE", "RSQRT", "SOFTMAX",
                     "GELU", "BATCH_MATMUL", "TANH", "ARG_MAX")
INT8_FLOAT_OPS_PRESETS = {"none": (), "xnnpack": XNNPACK_FLOAT_OPS}
# ----------------------------------------------------------------------------------------
# Conversion.


def _float_ops_denylist(recipe: recipes.Recipe, int8_float_ops: str | Sequence[str],
                        strict_int8: bool) -> tuple[str, ...]:
    """The ops kept in float (``int8_float_ops``) where the recipe takes a denylist."""
    if not recipe.float_ops_denylist:
        return ()
    if isinstance(int8_float_ops, str):
        if int8_float_ops not in INT8_FLOAT_OPS_PRESETS:
            raise ExportError(f"--int8_float_ops={int8_float_ops!r}: use one of "
                              f"{sorted(INT8_FLOAT_OPS_PRESETS)} or a list of op names.")
        denylist = tuple(INT8_FLOAT_OPS_PRESETS[int8_float_ops])
    else:
        denylist = tuple(op.upper() for op in int8_float_ops)
    if denylist and strict_int8:
        raise ExportError("--strict_int8 forbids float ops: pass --int8_float_ops=none.")
    return denylist


# ----------------------------------------------------------------------------------------
# The converter: tf.lite today; LiteRT's (litert-converter) where tf.lite is gone.

CONVERTERS = ("auto", "tf.lite", "litert")
CONVERTER_ENV = "ALBERT_TF_TFLITE_CONVERTER"
LITERT_INSTALL = ("pip install --no-deps --target DIR litert-converter==0.5.0 and put DIR on "
                  "PYTHONPATH (its pins conflict with TensorFlow's; docs/export.md)")
# The TF 2.19-2.21 deprecation warning of tf.lite.Interpreter, which QuantizationDebugger
# creates inside convert(): ours to silence, not the user's to act on.
_TF_LITE_INTERPRETER_WARNING = r"\s*Warning: tf\.lite\.Interpreter is deprecated"


def tf_lite_problem() -> str | None:
    """Why TensorFlow's converter cannot convert (None: it can)."""
    lite = getattr(tf, "lite", None)
    if lite is None or not hasattr(lite, "TFLiteConverter"):
        return (f"TensorFlow {tf.__version__} has no tf.lite.TFLiteConverter (tf.lite, "
                "deprecated in TF 2.20, is gone from its Python package)")
    return None


def _litert_api():
    """LiteRT's converter API (litert-converter's MLIR bindings and converter_api_ext)."""
    from litert_converter.mlir import ir, passmanager  # type: ignore
    from litert_converter.mlir._mlir_libs import converter_api_ext  # type: ignore
    return ir, passmanager, converter_api_ext


def litert_problem(quantization: str, with_tokenizer: bool) -> str | None:
    """Why LiteRT's converter cannot make this export (None: it can)."""
    if quantization != "none":
        return (f"--quantization={quantization}: LiteRT's converter converts float models "
                "only here (its quantizer, ai-edge-quantizer, is not wired in: "
                "docs/export.md, \"The converter after tf.lite\")")
    if with_tokenizer:
        return ("--with_tokenizer: the tokenizer's custom ops have no StableHLO lowering, "
                "which LiteRT's converter starts from")
    try:
        with cli.quiet_native():      # its native library logs at load
            _litert_api()
    except ImportError as e:
        return f"LiteRT's converter is not installed ({LITERT_INSTALL}; {e})"
    return None


def pick_converter(converter: str | None, quantization: str = "none",
                   with_tokenizer: bool = False) -> str:
    """``"tf.lite"`` or ``"litert"``: the converter for this export. ``converter``: one of
    `CONVERTERS` (None: ``$ALBERT_TF_TFLITE_CONVERTER``, else ``"auto"``); an `ExportError`
    says why the requested one, or with ``"auto"`` both, cannot convert."""
    converter = converter or os.environ.get(CONVERTER_ENV) or "auto"
    if converter not in CONVERTERS:
        raise ExportError(f"converter={converter!r} (${CONVERTER_ENV}): use one of "
                          f"{CONVERTERS}.")
    tf_lite = None if converter == "litert" else tf_lite_problem()
    if converter == "tf.lite" or (converter == "auto" and tf_lite is None):
        if tf_lite:
            raise ExportError(f"the tf.lite converter: {tf_lite}.")
        return "tf.lite"
    litert = litert_problem(quantization, with_tokenizer)
    if litert:
        why = f"LiteRT's converter: {litert}"
        raise ExportError(f"{tf_lite}, and {why}." if tf_lite else f"{why}.")
    return "litert"


def _litert_convert(functions) -> bytes:
    """``functions`` (concrete functions of ids in, a dict of tensors out) converted by
    LiteRT's converter: each frozen, lowered to StableHLO by XLA and named as tf.lite names
    it (its function name; ``serving_default`` for a model's only signature), the modules
    merged, LiteRT's passes to TFLite run, the flatbuffer exported. Float only."""
    from tensorflow.python.framework import convert_to_constants
    ir, passmanager, api = _litert_api()
    context = ir.Context()
    api.prepare_mlir_context(context)
    modules = []
    for fn in functions:
        specs = list(fn.structured_input_signature[0])
        if not isinstance(fn.structured_outputs, dict):
            raise ExportError("LiteRT's converter: the signatures must return a dict.")
        frozen = convert_to_constants.convert_variables_to_constants_v2(fn)
        lowered = tf.function(frozen.__call__, jit_compile=True)
        stablehlo = lowered.experimental_get_compiler_ir(
            *[tf.TensorSpec(s.shape, s.dtype) for s in specs])(stage="stablehlo")
        name = "serving_default" if len(functions) == 1 else fn.graph.name
        with context, ir.Location.unknown():
            module = ir.Module.parse(stablehlo)
            # XLA returns a dict's values in sorted key order (tf.nest).
            api.set_signature(module.operation, name, [s.name for s in specs],
                              sorted(fn.structured_outputs))
        modules.append(module)
    with context, ir.Location.unknown():
        merged = api.merge_modules(modules) if len(modules) > 1 else modules[0]
        api.run_convert_to_tfl_passes(merged, passmanager.PassManager(),
                                      api.ConvertToTFLConfig())
        return bytes(api.export_flatbuffer_to_bytes(merged.operation))


def convert(source: ExportSource, quantization: str = "none",
            seq_lengths: Sequence[int] | None = None, batch_size: int = 1,
            with_tokenizer: bool = False, calibration=None,
            qat_model: keras.Model | None = None, strict_int8: bool = False,
            int8_float_ops: str | Sequence[str] = "xnnpack",
            keep_outputs: Sequence[str] | None = None,
            converter: str | None = None) -> bytes:
    """The ``.tflite`` bytes of ``source`` (see the module docstring for the options).

    ``calibration``: (text_a, text_b) pairs, or a dict of packed int32 ``[n, seq]``
    features (`albert_tf.export.quantization.representative_dataset`); ``qat_model``: the
    model of a recipe that converts a quantization-aware model (``qat``); ``keep_outputs``:
    the outputs to keep (all of the head's by default); ``converter``: `pick_converter`.
    """
    recipe = recipes.get(quantization)
    seq_lengths = bucket_lengths(seq_lengths or [source.task_info.max_seq_length])
    max_pos = source.config.max_position_embeddings
    if seq_lengths[0] < 3 or seq_lengths[-1] > max_pos:
        raise ExportError(f"--seq_lengths={seq_lengths}: each must be in [3, {max_pos}] "
                          "(max_position_embeddings).")
    if batch_size < 1:
        raise ExportError(f"--batch_size must be >= 1, got {batch_size}.")
    if with_tokenizer and len(seq_lengths) > 1:
        raise ExportError("--with_tokenizer builds one sequence length; pass one --seq_lengths.")
    if with_tokenizer and recipe.needs_calibration:
        raise ExportError(f"--with_tokenizer with --quantization={quantization}: calibration "
                          "runs the ids signatures; export the int8 model without the "
                          "tokenizer and tokenize in the app (see tflite/README.md).")
    model = source.model
    if recipe.needs_qat_model:
        if qat_model is None:
            raise ExportError(f"--quantization={quantization}: no QAT model given (see "
                              "load_qat_model).")
        model = qat_model
    calibrated = recipe.uses_calibration and recipes.calibration_size(calibration) > 0
    if recipe.needs_calibration and not calibrated:
        raise ExportError(f"--quantization={quantization} needs calibration text.")
    denylist = _float_ops_denylist(recipe, int8_float_ops, strict_int8)
    which = pick_converter(converter, quantization, with_tokenizer)
    holder, functions = concrete_functions(source, model, seq_lengths, batch_size,
                                           with_tokenizer, keep_outputs)
    if which == "litert":
        try:
            with cli.quiet_native():
                return _litert_convert(functions)
        except ExportError:
            raise
        except Exception as e:  # noqa: BLE001
            raise ExportError(f"LiteRT conversion ({quantization}) failed: {e}") from e
    converter = tf.lite.TFLiteConverter.from_concrete_functions(functions, holder)
    if with_tokenizer:
        converter.allow_custom_ops = True
    if calibrated:
        converter.representative_dataset = representative_dataset(
            calibration, source.vocab_file, source.task_info.do_lower_case, seq_lengths,
            batch_size, [signature_key(s) for s in seq_lengths])
    recipe.configure(converter, calibrated, strict_int8)
    try:
        # The quantizer prints "fully_quantize: 0, inference_type: 6, ..." from C++.
        with cli.quiet_native(), warnings.catch_warnings(), without_keras_traces():
            warnings.filterwarnings("ignore", message=_TF_LITE_INTERPRETER_WARNING,
                                    category=UserWarning)
            if denylist:
                debugger = tf.lite.experimental.QuantizationDebugger(
                    converter=converter, debug_dataset=converter.representative_dataset,
                    debug_options=tf.lite.experimental.QuantizationDebugOptions(
                        denylisted_ops=list(denylist)))
                return debugger.get_nondebug_quantized_model()
            return converter.convert()
    except Exception as e:  # noqa: BLE001  (converter errors are long; keep the cause)
        raise ExportError(f"TFLite conversion ({quantization}) failed: {e}") from e


SDK_METADATA_MODES = ("auto", "on", "off")


def _sdk_shape_problem(source: ExportSource, seq_lengths: Sequence[int] | None,
                       batch_size: int, with_tokenizer: bool) -> str | None:
    """Why the SDKs cannot run this export's signatures (None: they can)."""
    seq_lengths = seq_lengths or [source.task_info.max_seq_length]
    if with_tokenizer or batch_size != 1 or len(set(seq_lengths)) != 1:
        return ("the mobile SDKs run one [1, seq] signature of ids; pass one --seq_lengths, "
                "--batch_size=1 and no --with_tokenizer")
    return source.head.sdk_problem(source.task_info, seq_lengths[0])


def sdk_plan(source: ExportSource, mode: str, seq_lengths: Sequence[int] | None,
             batch_size: int, with_tokenizer: bool) -> tuple[bytes | None, str | None]:
    """``(vocabulary, None)`` when the export is SDK-shaped with embedded metadata (the
    vocabulary file to embed, `albert_tf.export.sdk_metadata.sdk_vocabulary`), else
    ``(None, why not)``; with ``mode="on"`` a reason is an `ExportError` (see
    `export_tflite`)."""
    from albert_tf.export import sdk_metadata as sdk_lib
    if mode not in SDK_METADATA_MODES:
        raise ExportError(f"--sdk_metadata={mode!r}: use one of {SDK_METADATA_MODES}.")
    if mode == "off":
        return None, "--sdk_metadata=off"
    sdk_lib.check_head(source.head, requested=mode == "on")
    if not source.head.sdk_outputs:
        return None, f"no mobile SDK runs {source.head.name!r} models"
    problem = _sdk_shape_problem(source, seq_lengths, batch_size, with_tokenizer)
    if problem and mode == "on":
        raise ExportError(f"--sdk_metadata=on: {problem}.")
    if problem:
        return None, problem
    try:
        return sdk_lib.sdk_vocabulary(source.vocab_file, source.task_info.do_lower_case), None
    except ExportError as e:      # the SDKs' tokenizer would give other ids than ours
        if mode == "on":
            raise
        return None, str(e)


def export_tflite(model_dir: str, output: str, quantization: str = "none",
                  seq_lengths: Iterable[int] | None = None, batch_size: int = 1,
                  with_tokenizer: bool = False, overwrite: bool = False,
                  vocab_file: str | None = None, calibration_file: str | None = None,
                  data_dir: str | None = None,
                  num_calibration: int = DEFAULT_CALIBRATION_SIZE,
                  qat_model_dir: str | None = None, strict_int8: bool = False,
                  int8_float_ops: str | Sequence[str] = "xnnpack",
                  source: ExportSource | None = None, head: str | None = None,
                  sdk_metadata: str = "auto", converter: str | None = None,
                  sparse_weights: str | None = None) -> str:
    """Converts ``model_dir`` and writes the export directory ``output``; returns it.

    ``output`` receives ``model.tflite``, ``metadata.json`` (with the op report: which ops
    compute in float), the vocabulary (``vocab.model`` or ``vocab.txt``) and ``labels.txt``.
    ``head``: an export head put on the model's encoder instead of its own
    (``"embedding"``). ``sdk_metadata`` (`albert_tf.export.sdk_metadata`): ``"auto"`` makes
    every export that a mobile SDK can run (an SDK head, one ``[1, seq]`` ids signature, a
    vocabulary whose ids the SDKs' tokenizer reproduces) SDK-shaped, with the metadata
    embedded, and otherwise records why not (``metadata.json``: ``sdk`` null,
    ``sdk_reason``); ``"on"`` requires it (an `ExportError` says why not); ``"off"`` never.
    ``converter``: `pick_converter` (``metadata.json``: ``converter``). ``sparse_weights``
    (`albert_tf.export.sparsity`: ``"1x4"`` for none, ``"1x16"`` for int8, or ``"auto"``):
    the pruned weights stored sparse for LiteRT's sparse FULLY_CONNECTED kernels, after
    checking that the model's zeros form those blocks (``metadata.json``:
    ``sparse_weights``).
    """
    from albert_tf.export import analysis
    plan = TflitePlan.from_arguments(quantization, seq_lengths, with_tokenizer, converter,
                                     sparse_weights)
    inputs = export_inputs(model_dir, vocab_file, calibration_file, qat_model_dir)
    outputs.check_output(output, kind=KIND, inputs=inputs, overwrite=overwrite)
    source = source or load_source(model_dir, vocab_file)
    source = with_export_head(source, head) if head else source
    sparse = _sparse_blocks(source, quantization, sparse_weights)
    sdk_vocab, sdk_reason = sdk_plan(source, sdk_metadata, plan.seq_lengths, batch_size,
                                     with_tokenizer)
    calibration = _calibration(plan.recipe, source, calibration_file, data_dir,
                               num_calibration)
    qat_model = load_qat_model(model_dir, qat_model_dir) if plan.recipe.needs_qat_model else None
    content = convert(source, quantization, plan.seq_lengths, batch_size, with_tokenizer,
                      calibration, qat_model, strict_int8, int8_float_ops,
                      keep_outputs=source.head.sdk_outputs if sdk_vocab is not None else None,
                      converter=plan.converter)
    content, sparse = _sparse_and_sdk(content, source, quantization, sparse, sdk_vocab)
    report = analysis.op_report(content)
    sdk = _sdk_entry(source, sdk_vocab, report, sdk_metadata)
    extra = {"text_inputs": list(source.text_inputs), "sdk": sdk,
             **({} if sdk is not None else {"sdk_reason": sdk_reason}),
             **_conversion_entries(plan, report, sparse, calibration, int8_float_ops)}
    _write_export(output, inputs, overwrite, content, source, quantization, extra)
    return output


@dataclasses.dataclass(frozen=True)
class TflitePlan:
    """`export_tflite`'s choices from its arguments, checked before anything is read: the
    quantization recipe, the converter (`pick_converter`) and the sequence lengths (None:
    the model's ``max_seq_length``)."""

    recipe: recipes.Recipe
    converter: str
    seq_lengths: list[int] | None

    @classmethod
    def from_arguments(cls, quantization: str, seq_lengths: Iterable[int] | None,
                       with_tokenizer: bool, converter: str | None,
                       sparse_weights: str | None) -> "TflitePlan":
        """The plan; an `ExportError` (one line) for the first problem: a refused or
        unknown quantization, sparse weights the recipe cannot store, no converter."""
        from albert_tf.export import sparsity
        recipe = recipes.get(quantization)
        if recipe.refused:
            raise ExportError(f"--quantization={quantization}: {recipe.refused}")
        if sparse_weights:
            problem = sparsity.problem("tflite", quantization, sparse_weights)
            if problem:
                raise ExportError(problem)
        return cls(recipe, pick_converter(converter, quantization, with_tokenizer),
                   list(seq_lengths) if seq_lengths else None)


def _calibration(recipe: recipes.Recipe, source: ExportSource, calibration_file: str | None,
                 data_dir: str | None, num_calibration: int) -> list[str] | None:
    """Task text to calibrate on: required by int8, used when found by qat (ranges of
    tensors QAT does not fake-quantize), else None."""
    if recipe.needs_calibration:
        return calibration_texts(source, calibration_file, data_dir, num_calibration)
    if recipe.uses_calibration:
        try:
            return calibration_texts(source, calibration_file, data_dir, num_calibration)
        except ExportError:
            return None
    return None


def _sparse_blocks(source: ExportSource, quantization: str,
                   sparse_weights: str | None) -> dict | None:
    """With ``sparse_weights``: the pruned blocks the model's zeros form (checked before
    calibration and conversion, `albert_tf.export.sparsity.check_model`), else None."""
    if not sparse_weights:
        return None
    from albert_tf.export import sparsity
    return sparsity.check_model(sparsity.kernels_of(source.model), "tflite", quantization,
                                sparse_weights)


def _sparse_and_sdk(content: bytes, source: ExportSource, quantization: str,
                    sparse: dict | None, sdk_vocab: bytes | None) -> tuple[bytes, dict | None]:
    """``content`` with its weights stored sparse (``sparse``: the blocks; the record of
    what was stored comes back) and the mobile SDKs' metadata embedded (``sdk_vocab``: the
    vocabulary to embed; None: not SDK-shaped)."""
    if sparse:
        from albert_tf.export import sparsity
        content, sparse = sparsity.sparsify_tflite(content, sparse)
    if sdk_vocab is not None:
        from albert_tf.export import sdk_metadata as sdk_lib
        content = sdk_lib.embed(content, source.head, sdk_vocab, source.labels,
                                source.task_info.task, quantization)
    return content, sparse


def _sdk_entry(source: ExportSource, sdk_vocab: bytes | None, report: dict,
               sdk_metadata: str) -> dict | None:
    """metadata.json's ``sdk``: the SDKs that load this file (not the Task Library on op
    versions it lacks) and those that do not, with why; None when not SDK-shaped. With
    ``sdk_metadata="on"``, no SDK that runs it is an `ExportError`."""
    if sdk_vocab is None:
        return None
    from albert_tf.export import sdk_metadata as sdk_lib
    sdk_runners, not_runners = sdk_lib.runners(source.head, report["op_versions"])
    if not sdk_runners and sdk_metadata == "on":
        raise ExportError("--sdk_metadata=on: no mobile SDK runs this export: "
                          + "; ".join(f"{k}: {v}" for k, v in not_runners.items()) + ".")
    return {"runners": sdk_runners, "not_runners": not_runners,
            "input_names": dict(zip(INPUT_NAMES, sdk_lib.SDK_INPUT_NAMES)),
            "vocabulary": "embedded", "same_ids_as_albert_tf": sdk_lib.same_ids(sdk_vocab)}


def _conversion_entries(plan: TflitePlan, report: dict, sparse: dict | None,
                        calibration: list[str] | None,
                        int8_float_ops: str | Sequence[str]) -> dict:
    """metadata.json's entries on the conversion: the converter, the sparse weights,
    whether every op is integer, the calibration examples, the ops kept in float."""
    from albert_tf.export import analysis
    extra = {"converter": plan.converter}
    if sparse:
        extra["sparse_weights"] = sparse
    if plan.recipe.integer:
        extra["integer_only"] = analysis.integer_only(report)
    if calibration:
        extra["calibration_examples"] = len(calibration)
    if plan.recipe.float_ops_denylist:
        extra["int8_float_ops"] = (int8_float_ops if isinstance(int8_float_ops, str)
                                   else list(int8_float_ops))
    return extra


def _write_export(output: str, inputs, overwrite: bool, content: bytes,
                  source: ExportSource, quantization: str, extra: dict) -> None:
    """The export directory, staged and moved into place: ``model.tflite`` and the
    metadata files (`albert_tf.export.metadata.write_metadata`)."""
    from albert_tf.export import metadata
    with outputs.staged_output(output, kind=KIND, inputs=inputs,
                               overwrite=overwrite) as tmp:
        with open(os.path.join(tmp, metadata.MODEL_FILE), "wb") as f:
            f.write(content)
        info = json.loads(json.dumps(source.task_info.__dict__))
        if source.export_head:
            info.update(head=source.head.name, label_list=None, text_pair=False)
        metadata.write_metadata(tmp, metadata.MODEL_FILE, info, source.vocab_file,
                                quantization, extra)
