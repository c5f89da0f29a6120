"""OpenVINO export: an IR (``model.xml`` + ``model.bin``) converted from our own graph.

    export_openvino("runs/sst2", "ov/sst2")                      # float32, dynamic [batch, seq]
    export_openvino("runs/sst2", "ov/sst2_int8", quantization="int8")   # NNCF, SST-2 train text

The IR is ``openvino.convert_model`` of the same concrete function the TFLite export
converts (`albert_tf.export.signatures.concrete_functions`: int32 ``input_word_ids``,
``input_mask``, ``input_type_ids`` in, the head's outputs out, e.g. ``probabilities`` and
``label_id`` for classifiers), with ``[None, None]`` input shapes unless ``seq_length`` /
``batch_size`` fix them. OpenVINO compiles a model per static shape at load
(`albert_tf.runtime.openvino.OpenVinoClassifier` does so per ``[batch, bucket]``).
Weights are saved as float32 (``compress_to_fp16=False``).

Why our graph and not the Hugging Face ONNX route: ALBERT's one shared layer stays stored
once (the Hugging Face ONNX export fused by ONNX Runtime's optimizer holds a copy per layer;
docs/export.md has the sizes).

``quantization="int8"``: NNCF post-training quantization (``nncf.quantize``,
``ModelType.TRANSFORMER``: FakeQuantize on MatMul inputs and weights; LayerNorm, Softmax and
GELU stay float) calibrated on real task text, the task's *train* split, read by the helper
TFLite int8 uses (`albert_tf.export.quantization.calibration_texts`; ``--calibration_file``
wins; dev and test are never used). Each text is packed to the sequence length it runs at: the
static ``seq_length``, or (dynamic IR) the smallest default bucket of the runner that holds
it. NNCF quantizes each use of a weight on its own, so ALBERT's shared weights become one
int8 copy per layer: the int8 IR is larger than the float one (docs/export.md).

No tokenizer inside: OpenVINO exports take token ids; tokenize with albert_tf (Python:
`OpenVinoClassifier`). Measured in this project: openvino-tokenizers' SentencePiece
conversion differs from the sentencepiece library around user-defined symbols (other ids
for 243 of 875 texts: SST-2 dev's 872 sentences and 3 probes), and our tf-text tokenizer
graphs do not convert (OpenVINO has no conversion for FastSentencepieceTokenize,
SentencepieceTokenizeOp, UnicodeDecode / UnicodeEncode, RaggedGather, DenseBincount).

The export directory (written to a temporary sibling and moved into place): ``model.xml``,
``model.bin``, ``metadata.json`` (`albert_tf.export.metadata`, ``format``
``albert-tf-openvino``), the vocabulary (``vocab.model`` or ``vocab.txt``) and
``labels.txt`` for heads with labels. Importing this module imports neither TensorFlow nor
OpenVINO; `export_openvino` does.
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Any, Sequence

from albert_tf.export import metadata as meta_lib
from albert_tf.outputs import export_kind
from albert_tf.export import server_checks as checks
from albert_tf.export.quantization import DEFAULT_CALIBRATION_SIZE

_error = checks.export_error

MODEL_FILE = meta_lib.OPENVINO_MODEL_FILE          # model.xml
KIND = export_kind("openvino")                     # what its output marker records
WEIGHTS_FILE = "model.bin"
SIGNATURE = "serving_default"
PIP_FIX = "pip install 'albert-tf[openvino]'"


def require(*packages: str) -> None:
    """Imports ``packages`` (``openvino``, ``nncf``); a one-line `ExportError` naming
    ``pip install 'albert-tf[openvino]'`` when one is not installed."""
    checks.require("OpenVINO", PIP_FIX, *packages)


def convert(source, seq_length: int | None = None, batch_size: int | None = None):
    """The ``openvino.Model`` of ``source``'s id function (`signatures.concrete_functions`;
    ``None``: a dynamic dimension), each input and output port named once (ours)."""
    import openvino as ov

    from albert_tf.export.signatures import concrete_functions
    _, functions = concrete_functions(source, source.model, [seq_length], batch_size)
    try:
        model = ov.convert_model(functions[0])
    except Exception as e:  # noqa: BLE001  (conversion errors are long; keep the cause)
        raise _error(f"OpenVINO conversion failed: {e}") from e
    outputs = functions[0].structured_outputs
    for port in model.outputs:   # the converter may add graph names (``ArgMax:0``)
        names = port.get_names() & set(outputs)
        if len(names) == 1:
            port.get_tensor().set_names(names)
    return model


def _bucket(length: int, buckets: Sequence[int]) -> int:
    return next((b for b in buckets if length <= b), buckets[-1])


def calibration_samples(source, texts: Sequence[tuple[str, str | None]],
                        seq_length: int | None = None,
                        batch_size: int | None = None) -> list[dict[str, Any]]:
    """NNCF calibration inputs (dicts of int32 ``[batch, seq]`` arrays keyed by our input
    names) of (text_a, text_b) pairs, packed as the runner packs them: to ``seq_length``
    when static, else each to the smallest default bucket that holds it
    (`albert_tf.runtime.openvino.default_buckets`), ``batch_size`` (default 1) rows
    a sample. Packing is `albert_tf.export.quantization.representative_dataset`'s."""
    from albert_tf.runtime.openvino import default_buckets
    from albert_tf.export.quantization import representative_dataset
    from albert_tf.export.signatures import signature_key
    from albert_tf.text.vocabulary import load_tokenizer
    info = source.task_info
    batch = batch_size or 1
    if seq_length:
        groups = {int(seq_length): list(texts)}
    else:
        tok = load_tokenizer(source.vocab_file, do_lower_case=info.do_lower_case)
        buckets = default_buckets(info.max_seq_length)
        groups: dict[int, list] = {}
        for a, b in texts:
            needed = len(tok.encode(a)) + (len(tok.encode(b)) + 3 if b is not None else 2)
            groups.setdefault(_bucket(needed, buckets), []).append((a, b))
    samples = []
    for seq, group in sorted(groups.items()):
        samples += list(representative_dataset(group, source.vocab_file, info.do_lower_case,
                                               [seq], batch, [signature_key(seq)])())
    return samples


def quantize_int8(model, samples: Sequence[dict[str, Any]]):
    """NNCF post-training int8 of an IR (transformer preset), calibrated on all ``samples``.

    Weights are quantized to 7 bits in every layer (NNCF's ``OverflowFix.ENABLE``; its default
    fixes only the first layer): on x86 CPUs without VNNI (AVX2 only, e.g. AMD Zen 3) OpenVINO
    multiplies u8 activations by s8 weights with ``vpmaddubsw``, whose 16-bit pair sums
    saturate with 8-bit weights. Measured on a Zen 3 (tiny random ALBERT, 2 x 32 ids): cosine
    of int8 to float outputs 0.960 with the default, 0.9997 with the fix (tiny BERT: 0.99998);
    on VNNI / AMX CPUs the fix costs the last weight bit only.
    """
    import contextlib
    import io
    import logging

    import nncf
    from nncf.quantization.advanced_parameters import (AdvancedQuantizationParameters,
                                                       OverflowFix)

    from albert_tf import cli
    loud = cli.verbose()     # NNCF's INFO logs and progress bars (on stdout) only then
    if not loud:
        nncf.set_log_level(logging.ERROR)
    with contextlib.nullcontext() if loud else contextlib.redirect_stdout(io.StringIO()):
        return nncf.quantize(model, nncf.Dataset(list(samples)),
                             model_type=nncf.ModelType.TRANSFORMER, subset_size=len(samples),
                             advanced_parameters=AdvancedQuantizationParameters(
                                 overflow_fix=OverflowFix.ENABLE))


def _port(port) -> dict[str, Any]:
    shape = [d.get_length() if d.is_static else None for d in port.get_partial_shape()]
    return {"dtype": str(port.get_element_type().to_dtype()), "shape": shape}


def export_openvino(model_dir: str, output: str, quantization: str = "none",
                    seq_length: int | None = None, batch_size: int | None = None,
                    overwrite: bool = False, vocab_file: str | None = None,
                    calibration_file: str | None = None, data_dir: str | None = None,
                    num_calibration: int = DEFAULT_CALIBRATION_SIZE, head: str | None = None,
                    sparse_weights: str | None = None, source=None) -> str:
    """Converts ``model_dir`` to the OpenVINO export directory ``output``; returns it.

    ``quantization``: ``"none"`` (float32) or ``"int8"`` (NNCF, calibrated on
    ``num_calibration`` texts of the task's train split from ``data_dir`` /
    ``$ALBERT_TF_DATA_DIR``, or of ``calibration_file``). ``seq_length`` / ``batch_size``:
    static input dimensions (None: dynamic). ``head``: an export head on the encoder
    (``"embedding"``), as for TFLite. ``sparse_weights`` (int8: ``"unstructured"``, any
    pattern, or ``"auto"``; `albert_tf.export.sparsity`): checks that the model is pruned and
    records in ``metadata.json`` (``sparse_weights.compile_config``) that the IR is to be
    compiled with ``CPU_SPARSE_WEIGHTS_DECOMPRESSION_RATE``, which `OpenVinoClassifier`
    applies (NNCF's int8 weights keep the zeros). Every problem is a one-line `ExportError`.
    """
    from albert_tf import outputs
    from albert_tf.export.common import export_inputs, load_source, with_export_head
    from albert_tf.export.quantization import calibration_texts
    _check_arguments(quantization, batch_size, sparse_weights)
    inputs = export_inputs(model_dir, vocab_file, calibration_file)
    outputs.check_output(output, kind=KIND, inputs=inputs, overwrite=overwrite)
    require("openvino", *(["nncf"] if quantization == "int8" else []))
    _check_calibration_file(calibration_file)
    source = source or load_source(model_dir, vocab_file)
    source = with_export_head(source, head) if head else source
    checks.check_seq_length(seq_length, source.config.max_position_embeddings)
    sparse = _sparse_entry(source, quantization, sparse_weights)
    texts = None
    if quantization == "int8":
        texts = calibration_texts(source, calibration_file, data_dir, num_calibration)
    model = convert(source, seq_length, batch_size)
    if texts is not None:
        model = quantize_int8(model, calibration_samples(source, texts, seq_length, batch_size))
    with outputs.staged_output(output, kind=KIND, inputs=inputs,
                               overwrite=overwrite) as tmp:
        import openvino as ov
        ov.save_model(model, os.path.join(tmp, MODEL_FILE), compress_to_fp16=False)
        meta = _metadata(model, source, quantization, seq_length, batch_size,
                         os.path.getsize(os.path.join(tmp, WEIGHTS_FILE)))
        if sparse:
            meta["sparse_weights"] = sparse
        if texts is not None:
            import nncf
            meta.update(calibration_examples=len(texts), nncf_version=nncf.__version__)
        meta_lib.write_files(tmp, meta, source.vocab_file)
    return output


def _check_arguments(quantization: str, batch_size: int | None,
                     sparse_weights: str | None) -> None:
    """The request itself (`albert_tf.export.server_checks.check_request`) and the sparse
    weights it asks for, before anything is read: a one-line `ExportError`."""
    from albert_tf.export import sparsity
    checks.check_request("openvino", quantization, batch_size)
    if sparse_weights:
        problem = sparsity.problem("openvino", quantization, sparse_weights)
        if problem:
            raise _error(problem)


def _check_calibration_file(calibration_file: str | None) -> None:
    """A given --calibration_file exists."""
    if calibration_file and not os.path.isfile(calibration_file):
        raise _error(f"--calibration_file={calibration_file}: no such file; pass a TSV of the "
                     "task's train text (a 'sentence' header column) or leave it out to read "
                     "the task's train split from --data_dir.")


def _sparse_entry(source, quantization: str, sparse_weights: str | None) -> dict | None:
    """With ``sparse_weights``: metadata.json's ``sparse_weights`` entry, once the model's
    zeros are checked (before calibration and conversion); else None."""
    if not sparse_weights:
        return None
    from albert_tf.export import sparsity
    return sparsity.openvino_entry(sparsity.check_model(
        sparsity.kernels_of(source.model), "openvino", quantization, sparse_weights))


def _metadata(model, source, quantization: str, seq_length: int | None,
              batch_size: int | None, weights_bytes: int) -> dict[str, Any]:
    """metadata.json of the export: the files, the task and vocabulary, the signature's
    ports, the OpenVINO version, the ops by type and the weights' size."""
    import openvino as ov
    info = dict(source.task_info.__dict__)
    if source.export_head:
        info.update(head=source.head.name, label_list=None, text_pair=False)
    ops = Counter(op.get_type_name() for op in model.get_ops())
    return {"format": meta_lib.OPENVINO_FORMAT, "format_version": meta_lib.FORMAT_VERSION,
            "model_file": MODEL_FILE, "weights_file": WEIGHTS_FILE,
            **meta_lib.task_metadata(info, source.vocab_file),
            "quantization": quantization,
            "signatures": {SIGNATURE: {
                "inputs": {p.get_any_name(): _port(p) for p in model.inputs},
                "outputs": {p.get_any_name(): _port(p) for p in model.outputs},
                "batch_size": batch_size, "seq_length": seq_length}},
            "text_inputs": list(source.text_inputs),
            "openvino_version": ov.get_version(),
            "ops": {"num_ops": sum(ops.values()), "by_type": dict(sorted(ops.items())),
                    "fake_quantize": ops.get("FakeQuantize", 0)},
            "weights_bytes": weights_bytes}
