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
            # What `check_vocabulary` compares the shipped file with when a runner loads it.
            "vocab_sha256": vocab_lib.file_sha256(vocab_file),
            "vocab_bytes": os.path.getsize(vocab_file),
        },
    }


def check_vocabulary(meta: dict[str, Any], directory: str) -> str:
    """The path of the vocabulary an export ships (``directory``/``tokenizer.vocab_file``)
    after checking it is the one the export was made with: its size and sha256 against
    those ``metadata.json`` records (exports written before they were recorded: not
    checked). A `MetadataError` names the file and the fix: another vocabulary's ids would
    give answers without an error."""
    tok = meta["tokenizer"]
    path = os.path.join(directory, tok["vocab_file"])
    want_sha, want_size = tok.get("vocab_sha256"), tok.get("vocab_bytes")
    if not want_sha or not os.path.isfile(path):
        return path                      # nothing recorded, or a missing file: its reader
    size = os.path.getsize(path)
    if (want_size is not None and size != want_size) or vocab_lib.file_sha256(path) != want_sha:
        raise MetadataError(
            f"{path} is not the vocabulary this export was made with ({size} bytes; "
            f"{METADATA_FILE} records {want_size} bytes, sha256 {want_sha[:12]}...): the model "
            "would get another vocabulary's ids. Copy the export directory again, or export it "
            "again with albert-tf-export.")
    return path


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


# ------------------------------------------------------- a .tflite converted elsewhere
def decoded_output(head: Any) -> str | None:
    """The output the answers of head name ``head`` are decoded from (the head's
    ``decoded_output``); None for a head that declares none, or no registered head."""
    import albert_tf.heads.registry as heads
    found = heads.every_head().get(head) if isinstance(head, str) else None
    return found.decoded_output if found is not None else None


def files_written(task_info: dict[str, Any], vocab_file: str) -> list[str]:
    """The files `write_metadata` writes beside a model: metadata.json, the vocabulary under
    its export name and, for a task with labels, labels.txt."""
    names = [METADATA_FILE, vocab_file_name(vocab_file)]
    return names + [LABELS_FILE] if task_info.get("label_list") else names


def check_beside(model_path: str, task_info: dict[str, Any], vocab_file: str,
                 overwrite: bool = False, flag: str = "--model") -> None:
    """Before any work: a `MetadataError` unless `write_metadata` may write its files
    (`files_written`) beside the model ``model_path`` (``albert-tflite-metadata``).

    The directory of an albert-tf TFLite export (its marker, `albert_tf.outputs`) is
    rewritten; the files of an earlier run of this tool (an albert-tf-tflite metadata.json
    of the same model file, and the vocabulary and labels it names) too. Any other existing
    file of those names (the user's own metadata.json, labels.txt, vocab.model...) is
    refused unless ``overwrite`` (a file with the bytes it would get is not a conflict); an
    albert-tf output of another kind (an ONNX export, a model directory, a run) is never
    written into; and the directory must be writable.
    """
    from albert_tf import outputs
    directory = os.path.dirname(os.path.abspath(model_path))
    kind = outputs.marker_kind(directory) if outputs.is_albert_tf_output(directory) else None
    if kind == outputs.export_kind("tflite"):
        return outputs.check_writable(directory, flag=flag, path=model_path)
    if kind is not None:
        raise MetadataError(
            f"{flag}={model_path} lies in {outputs.describe_kind(kind)}, whose files "
            "albert-tf does not replace with a TFLite export's; copy the .tflite into a "
            "directory of its own and describe it there.")
    ours = set(_earlier_files(directory, os.path.basename(model_path)))
    users, odd = [], []
    for name in files_written(task_info, vocab_file):
        path = os.path.join(directory, name)
        if not os.path.lexists(path) or name in ours \
                or os.path.abspath(path) == os.path.abspath(vocab_file):
            continue
        if os.path.islink(path) or not os.path.isfile(path):
            odd.append(name)
        elif not overwrite and not _same_content(path, name, task_info, vocab_file):
            users.append(name)
    if odd:
        raise MetadataError(f"{flag}={model_path}: {', '.join(odd)} beside it is not a plain "
                            "file; nothing was written: copy the .tflite into a new directory.")
    if users:
        raise MetadataError(
            f"{flag}={model_path}: {directory} already holds {', '.join(users)}, which "
            "albert-tf did not write; nothing was written: copy the .tflite into a new "
            "directory, or pass --overwrite to replace them.")
    outputs.check_writable(directory, flag=flag, path=model_path)


def _earlier_files(directory: str, model_file: str) -> list[str]:
    """The files an earlier ``albert-tflite-metadata`` wrote beside ``model_file``: its
    metadata.json (an albert-tf-tflite one for that model file) and the files it names."""
    try:
        with open(os.path.join(directory, METADATA_FILE), encoding="utf-8") as f:
            meta = json.load(f)
        if meta.get("format") != FORMAT or meta.get("model_file") != model_file:
            return []
        return [METADATA_FILE, meta["tokenizer"]["vocab_file"]] + (
            [meta["labels_file"]] if meta.get("labels_file") else [])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return []


def _same_content(path: str, name: str, task_info: dict[str, Any], vocab_file: str) -> bool:
    """Whether the file ``name`` at ``path`` already holds what `write_files` would write
    (the vocabulary's bytes, the labels): replacing it loses nothing."""
    try:
        with open(path, "rb") as f:
            have = f.read()
        if name == LABELS_FILE:
            return have == "".join(f"{label}\n" for label in task_info["label_list"]).encode()
        if name == METADATA_FILE:
            return False
        with open(vocab_file, "rb") as f:
            return have == f.read()
    except OSError:
        return False


def check_model(model_path: str, task_info: dict[str, Any], config: dict[str, Any],
                quantization: str | None = None, flag: str = "--model",
                dir_flag: str = "--model_dir") -> dict[str, Any]:
    """Before any work: the ``.tflite`` at ``model_path`` read for what it says about its
    model (no TensorFlow), checked against the model directory's ``task_info`` (task.json)
    and ``config`` (config.json), a `MetadataError` naming the mismatch otherwise:

    - a TFLite flatbuffer with signatures (albert-tf's runners call signatures);
    - every id signature's sequence length within the config's positions;
    - the output the task head decodes (``probabilities``, ``value``), with one score per
      label of the task;
    - the task, labels and quantization that its embedded mobile-SDK metadata names (an
      albert-tf export's), when it has some.

    Returns ``{"max_seq_length", "quantization"}``: the longest id signature's length (the
    longest text the file takes; task.json's for a string-in model) and the quantization
    (``quantization``, else the embedded metadata's, else ``"unknown"``).
    """
    content, sigs = _read_signatures(model_path, flag)
    where = f"{dir_flag} (task {task_info.get('task')!r})"
    lengths = sorted({sig["inputs"]["input_word_ids"]["shape"][-1]
                      for sig in sigs.values() if "input_word_ids" in sig["inputs"]
                      and len(sig["inputs"]["input_word_ids"]["shape"]) == 2
                      and sig["inputs"]["input_word_ids"]["shape"][-1] > 0})   # not dynamic
    positions = config.get("max_position_embeddings")
    if isinstance(positions, int) and lengths and lengths[-1] > positions:
        raise MetadataError(f"{flag}={model_path} takes sequences of {lengths[-1]} ids but the "
                            f"model of {dir_flag} has {positions} positions: it was not "
                            "exported from that model; pass the model directory it was "
                            "exported from.")
    _check_decoded_output(sigs, task_info, f"{flag}={model_path}", where)
    embedded = _embedded(content)
    if embedded:
        quantization = _check_embedded(embedded, task_info, quantization, model_path, flag,
                                       where)
    return {"max_seq_length": lengths[-1] if lengths     # else strings in, or dynamic
            else int(task_info.get("max_seq_length", 128)),
            "quantization": quantization or "unknown"}


def _read_signatures(model_path: str, flag: str) -> tuple[bytes, dict[str, Any]]:
    """The file's bytes and its signatures (`albert_tf.export.analysis.signatures`); a
    `MetadataError` when it cannot be read, is no TFLite model, is damaged or has none."""
    from ai_edge_litert import schema_py_generated as schema

    from albert_tf.export.analysis import signatures
    try:
        with open(model_path, "rb") as f:
            content = f.read()
    except OSError as e:
        raise MetadataError(f"{flag}={model_path} cannot be read ({e.strerror}).") from None
    if not schema.Model.ModelBufferHasIdentifier(content, 0):
        raise MetadataError(f"{flag}={model_path} is not a TFLite model (no TFL3 "
                            "identifier); pass the .tflite file to describe.")
    try:
        sigs = signatures(content)
    except Exception as e:  # noqa: BLE001  (a damaged flatbuffer reads as anything)
        raise MetadataError(f"{flag}={model_path}: its signatures cannot be read ({e}); a "
                            "truncated or damaged file reads like this: copy it again.") from None
    if not sigs:
        raise MetadataError(f"{flag}={model_path} has no signatures; albert-tf's runners call "
                            "signatures: convert it with them (TFLiteConverter."
                            "from_concrete_functions / from_saved_model with signatures).")
    return content, sigs


def _check_decoded_output(sigs: dict[str, Any], task_info: dict[str, Any], given: str,
                          where: str) -> None:
    """Every signature but ``tokenize`` has the output the task head decodes, with one
    score per label; ``given``: ``--model=PATH``, ``where``: the model directory's flag
    and task."""
    head = task_info.get("head")
    output = decoded_output(head)
    labels = task_info.get("label_list") or ()
    for key, sig in sigs.items():
        if key == "tokenize" or output is None:
            continue
        outs = sig["outputs"]
        if output not in outs:
            raise MetadataError(
                f"{given}: signature {key} has no {output!r} output (it has "
                f"{', '.join(outs) or 'none'}); the {head} model of {where} answers through "
                "one: pass the model directory the .tflite was exported from.")
        shape = outs[output]["shape"]
        if labels and (not shape or shape[-1] != len(labels)):
            raise MetadataError(
                f"{given}: signature {key}'s {output} has "
                f"{shape[-1] if shape else 'no'} scores per example but {where} has "
                f"{len(labels)} labels; pass the model directory the .tflite was exported "
                "from.")


def _check_embedded(embedded: dict[str, Any], task_info: dict[str, Any],
                    quantization: str | None, model_path: str, flag: str,
                    where: str) -> str | None:
    """The task, labels and quantization the embedded mobile-SDK metadata names agree
    with the model directory's and ``quantization``; returns the quantization (the given
    one, else the embedded one)."""
    from albert_tf.data.task_data import task_key
    theirs = embedded.get("task")
    labels = task_info.get("label_list") or ()
    if theirs and task_info.get("task") and task_key(theirs) != task_key(task_info["task"]):
        raise MetadataError(f"{flag}={model_path} is a model of task {theirs!r} (its "
                            f"embedded metadata), not of {where}; pass the model "
                            "directory it was exported from.")
    if embedded.get("labels") is not None and labels and \
            list(embedded["labels"]) != list(labels):
        raise MetadataError(f"{flag}={model_path}'s embedded labels {embedded['labels']} are "
                            f"not those of {where}, {list(labels)}; pass the model "
                            "directory it was exported from.")
    made = embedded.get("quantization")
    if quantization and made and quantization != made:
        raise MetadataError(f"--quantization={quantization}: {model_path} was exported "
                            f"with quantization {made} (its embedded metadata); pass "
                            f"--quantization={made} or leave it out.")
    return quantization or made


def _embedded(content: bytes) -> dict[str, Any] | None:
    """What the mobile-SDK metadata albert-tf embeds (`albert_tf.export.sdk_metadata.embed`)
    says: ``task``, ``quantization`` and ``labels``; None when there is none (or another
    writer's)."""
    import re

    from albert_tf.export import metadata_schema
    try:
        meta = metadata_schema.read(content)
    except Exception:  # noqa: BLE001  (no metadata, or a writer of its own)
        return None
    if not meta or meta.get("author") != "albert-tf":
        return None
    found: dict[str, Any] = {}
    name = re.fullmatch(r"albert-tf (\S+) \S+", str(meta.get("name", "")))
    if name:
        found["task"] = name.group(1)
    made = re.search(r"\(quantization: ([^)]+)\)", str(meta.get("description", "")))
    if made:
        found["quantization"] = made.group(1)
    labels = metadata_schema.packed_files(content).get(LABELS_FILE)
    if labels is not None:
        found["labels"] = labels.decode("utf-8", "replace").splitlines()
    return found


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
    from albert_tf.outputs import write_text
    target = os.path.join(directory, meta["tokenizer"]["vocab_file"])
    if os.path.abspath(vocab_file) != os.path.abspath(target):
        stage = os.path.join(directory, f".{os.path.basename(target)}.tmp-{os.getpid()}")
        try:                            # renamed into place: never a half-copied vocabulary
            shutil.copyfile(vocab_file, stage)
            os.replace(stage, target)
        except BaseException:
            if os.path.lexists(stage):
                os.remove(stage)
            raise
    if meta["labels"]:
        write_text(os.path.join(directory, LABELS_FILE),
                   "".join(label + "\n" for label in meta["labels"]))
    write_text(os.path.join(directory, METADATA_FILE), json.dumps(meta, indent=2) + "\n")
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
