"""The files a mobile app needs next to a ``.tflite`` model (no TensorFlow import).

A TFLite export directory::

    model.tflite      the model
    metadata.json     task, labels, tokenizer (type, vocabulary file, casing, special ids),
                      signatures (input and output names, dtypes, static shapes), custom ops
                      and the tensorflow-text registrar functions that register them, op report
    vocab.model       the vocabulary the ids come from: SentencePiece (``tokenizer.type``
    or vocab.txt      ``sentencepiece``) or WordPiece (``wordpiece``), as in the model directory
    labels.txt        one label per line, in output order (classifiers)

`write_metadata` writes them; `read_metadata` reads ``metadata.json`` back (for a model path
or its directory) and checks the format version.

An OpenVINO export (`albert_tf.export.openvino`: ``model.xml`` + ``model.bin``) ships the same
files with ``format`` `OPENVINO_FORMAT`, an ONNX export (`albert_tf.export.onnx`: ``model.onnx``)
with `ONNX_FORMAT`; `task_metadata` and `write_files` are shared by all three.
"""

from __future__ import annotations

import json
import os
import shutil
from typing import Any

from albert_tf.text import vocabulary as vocab_lib

FORMAT = "albert-tf-tflite"
FORMAT_VERSION = 1
MODEL_FILE = "model.tflite"
OPENVINO_FORMAT = "albert-tf-openvino"      # albert_tf.export.openvino
OPENVINO_MODEL_FILE = "model.xml"           # its weights: model.bin beside it
ONNX_FORMAT = "albert-tf-onnx"              # albert_tf.export.onnx
ONNX_MODEL_FILE = "model.onnx"
METADATA_FILE = "metadata.json"
LABELS_FILE = "labels.txt"
# tensorflow_text.core.pybinds.tflite_registrar function registering each custom op of the
# in-graph tokenizers (`albert_tf.export.lite_tokenizer`, `albert_tf.export.lite_wordpiece`).
SENTENCEPIECE_CUSTOM_OPS = {"TFText>FastSentencepieceTokenize": "AddFastSentencepieceTokenize"}
WORDPIECE_CUSTOM_OPS = {
    "FastBertNormalize": "AddFastBertNormalize",
    "TFText>WhitespaceTokenizeWithOffsetsV2": "AddWhitespaceTokenize",
    "FastWordpieceTokenizeWithOffsets": "AddFastWordpieceTokenize",
    "TFText>ByteSplitWithOffsets": "AddByteSplit",
}
CUSTOM_OP_REGISTERERS = {**SENTENCEPIECE_CUSTOM_OPS, **WORDPIECE_CUSTOM_OPS}


class MetadataError(ValueError):
    """metadata.json is missing or not one this code can read."""


def special_ids(vocab_file: str) -> dict[str, int]:
    """``pad``, ``unk``, ``cls``, ``sep``, ``mask`` ids of a vocabulary file (either kind)."""
    tok = vocab_lib.load_tokenizer(vocab_file)
    return {name: int(getattr(tok, f"{name}_id")) for name in ("pad", "unk", "cls", "sep", "mask")}


def vocab_file_name(vocab_file: str) -> str:
    """The name an export directory ships ``vocab_file`` under (``vocab.model``, ``vocab.txt``)."""
    return vocab_lib.file_name(vocab_lib.vocabulary_kind(vocab_file))


def task_metadata(task_info: dict[str, Any], vocab_file: str,
                  in_graph: bool = False) -> dict[str, Any]:
    """What every export's metadata.json says about the task and the tokenizer: ``task``,
    ``head``, ``labels``, ``labels_file``, ``text_pair``, ``max_seq_length``, ``tokenizer``."""
    return {
        "task": task_info.get("task"),
        "head": task_info.get("head"),
        "labels": list(task_info["label_list"]) if task_info.get("label_list") else None,
        "labels_file": LABELS_FILE if task_info.get("label_list") else None,
        "text_pair": bool(task_info.get("text_pair", False)),
        "max_seq_length": int(task_info.get("max_seq_length", 128)),
        "tokenizer": {
            "type": vocab_lib.vocabulary_kind(vocab_file),
            "vocab_file": vocab_file_name(vocab_file),
            "do_lower_case": bool(task_info.get("do_lower_case", True)),
            "special_ids": special_ids(vocab_file),
            "in_graph": in_graph,
        },
    }


def build_metadata(model_path: str, task_info: dict[str, Any], vocab_file: str,
                   quantization: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """metadata.json content for the model at ``model_path``."""
    from albert_tf.export.analysis import op_report, signatures

    sigs = signatures(model_path)
    report = op_report(model_path)
    for sig in sigs.values():
        ids = sig["inputs"].get("input_word_ids")
        if ids is not None and len(ids["shape"]) == 2:
            sig["batch_size"], sig["seq_length"] = ids["shape"]
        text = next((v for v in sig["inputs"].values() if v["dtype"] == "string"), None)
        if text is not None:
            sig["batch_size"] = text["shape"][0] if text["shape"] else 1
    custom = report["custom_ops"]
    in_graph = any(v["dtype"] == "string" for s in sigs.values() for v in s["inputs"].values())
    meta = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "model_file": os.path.basename(model_path),
        **task_metadata(task_info, vocab_file, in_graph),
        "quantization": quantization,
        "signatures": sigs,
        "custom_ops": custom,
        "custom_op_registerers": [CUSTOM_OP_REGISTERERS.get(c, c) for c in custom],
        "ops": {"num_ops": report["num_ops"], "by_type": report["ops"],
                "float_ops": report["float_ops"], "versions": report["op_versions"]},
    }
    if extra:
        meta.update(extra)
    return meta


def write_metadata(directory: str, model_file: str, task_info: dict[str, Any],
                   vocab_file: str, quantization: str,
                   extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Writes metadata.json, the vocabulary (``vocab.model`` or ``vocab.txt``) and labels.txt
    into ``directory`` (next to the model)."""
    model_path = os.path.join(directory, model_file)
    meta = build_metadata(model_path, task_info, vocab_file, quantization, extra)
    return write_files(directory, meta, vocab_file)


def write_files(directory: str, meta: dict[str, Any], vocab_file: str) -> dict[str, Any]:
    """Writes ``meta`` as metadata.json, the vocabulary under its export name and, when
    ``meta`` has labels, labels.txt into ``directory``; returns ``meta``."""
    target = os.path.join(directory, meta["tokenizer"]["vocab_file"])
    if os.path.abspath(vocab_file) != os.path.abspath(target):
        shutil.copyfile(vocab_file, target)
    if meta["labels"]:
        with open(os.path.join(directory, LABELS_FILE), "w", encoding="utf-8") as f:
            f.write("".join(label + "\n" for label in meta["labels"]))
    with open(os.path.join(directory, METADATA_FILE), "w", encoding="utf-8") as f:
        json.dump(meta, f, indent=2, sort_keys=False)
        f.write("\n")
    return meta


def metadata_path(model: str) -> str:
    directory = model if os.path.isdir(model) else os.path.dirname(os.path.abspath(model))
    return os.path.join(directory, METADATA_FILE)


def read_metadata(model: str, format: str = FORMAT) -> dict[str, Any]:
    """metadata.json for a model file or export directory, of the export ``format``
    (`FORMAT`: TFLite; `OPENVINO_FORMAT`: OpenVINO IR; `ONNX_FORMAT`: ONNX)."""
    path = metadata_path(model)
    if not os.path.exists(path):
        raise MetadataError(f"no {METADATA_FILE} next to {model}; export with albert-tf-export "
                            "or write it with `python -m albert_tflite.metadata`.")
    with open(path, encoding="utf-8") as f:
        meta = json.load(f)
    if meta.get("format") != format or meta.get("format_version", 0) > FORMAT_VERSION:
        raise MetadataError(f"{path}: not an {format} v{FORMAT_VERSION} metadata file"
                            + (f" (it is {meta.get('format')!r})" if meta.get("format") else "")
                            + ".")
    return meta
