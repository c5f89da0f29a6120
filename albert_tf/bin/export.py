"""albert-tf-export: SavedModel for TF Serving, TFLite for phones and CPUs, OpenVINO IR for x86.

    albert-tf-export --model_dir=runs/sst2 --format=saved_model --output=serving
        # -> serving/sst2/<next version>/ (signatures serving_default, tokenize, encode[, mlm])
    albert-tf-export --model_dir=runs/sst2 --format=tflite --output=edge/sst2_int8 \\
        --quantization=int8 --seq_lengths=32,64,128 [--calibration_file=train.tsv]
    albert-tf-export --model_dir=runs/sst2 --format=tflite --output=edge/sst2_text \\
        --with_tokenizer          # string in: the tokenizer's tf-text custom ops inside
    albert-tf-export --model_dir=runs/sst2 --format=tflite --output=edge/sst2_embed \\
        --head=embedding          # MediaPipe TextEmbedder: mean-pooled, L2-normalized
    albert-tf-export --model_dir=runs/sst2 --format=openvino --output=ov/sst2_int8 \\
        --quantization=int8       # OpenVINO IR (model.xml/.bin) of our graph; ids in, NNCF int8
    albert-tf-export --model_dir=runs/sst2 --format=onnx --output=ort/sst2_int8 \\
        --quantization=int8       # ONNX for ONNX Runtime (fused operators); ids in, dynamic int8

OpenVINO (albert_tf/export/openvino.py) and ONNX (albert_tf/export/onnx.py; classification,
regression and pretrained/encoder models): dynamic [batch, seq] ids unless --seq_lengths=N
(one) / --batch_size=B fix them; --quantization=none or int8; no --with_tokenizer (tokenize
in Python: albert_tf.export.openvino_runner.OpenVinoClassifier,
albert_tf.export.onnx_runner.OnnxClassifier).

A TFLite export with one [1, seq] signature of a classification, span or embedding model
embeds the metadata the mobile SDKs read (Task Library, MediaPipe Tasks; see
albert_tf/export/sdk_metadata.py and tflite/README.md): --sdk_metadata=off skips it.

The model directory needs config.json, weights, task.json (finetuned models) and its
vocabulary, vocab.model (SentencePiece) or vocab.txt (WordPiece), or --vocab_file.
Everything is written to a staged sibling directory and moved into place at the end
(albert_tf/outputs.py): --output may not be '.', '~', a parent of the current directory or
one of the inputs, and --overwrite replaces only an earlier albert-tf output. See
README.md "Export and deployment" and tflite/README.md.
"""

from __future__ import annotations

import json
import os
import sys

from absl import flags

from albert_tf import cli

FLAGS = flags.FLAGS


def define_flags() -> None:
    """Defines the flags. Called by `run`, not at import: every binary shares absl's
    one flag registry, and several define the same names."""
    flags.DEFINE_string("model_dir", None, "Model directory (config.json, weights, task.json, "
                        "vocab.model or vocab.txt).")
    flags.DEFINE_enum("format", "saved_model", ["saved_model", "tflite", "openvino", "onnx"],
                      "What to export.")
    flags.DEFINE_string("output", None, "saved_model: base directory (the model goes to "
                        "<output>/<name>/<version>/); tflite, openvino: the export directory.")
    flags.DEFINE_string("vocab_file", None, "SentencePiece model or WordPiece vocab.txt "
                        "(default: the model directory's vocab.model or vocab.txt).")
    flags.DEFINE_boolean("overwrite", False, "Replace an earlier albert-tf export at --output "
                         "(never a directory albert-tf did not write).")

    # SavedModel
    flags.DEFINE_string("name", None, "saved_model: model name (default: the task name).")
    flags.DEFINE_integer("version", None, "saved_model: version (default: next free number).")
    # TFLite
    from albert_tf.export import quantization
    flags.DEFINE_enum("quantization", "none", list(quantization.names()),
                      "tflite: weight/activation quantization (the recipes of "
                      f"albert_tf.export.quantization: {quantization.describe()}); "
                      "openvino: none or int8 (NNCF); onnx: none or int8 (ONNX Runtime "
                      "dynamic-range).")
    flags.DEFINE_list("seq_lengths", None, "tflite: sequence-length buckets, one signature each "
                      "(default: the model's max_seq_length); openvino, onnx: one static length "
                      "(default: dynamic).")
    flags.DEFINE_integer("batch_size", 1, "tflite: static batch size of the signatures; "
                         "openvino, onnx: static batch size if given (default: dynamic).")
    flags.DEFINE_boolean("with_tokenizer", False, "tflite: take strings (in-graph tokenizer; "
                         "register its tf-text custom ops at load time).")
    flags.DEFINE_string("calibration_file", None, "int8: TSV of real task text (default: the "
                        "task's train split via albert_tf.data).")
    flags.DEFINE_string("data_dir", None, "int8: task data root (default $ALBERT_TF_DATA_DIR).")
    flags.DEFINE_integer("num_calibration", 256, "int8: calibration examples.")
    flags.DEFINE_string("int8_float_ops", "xnnpack", "int8: ops kept in float: 'xnnpack' (fast "
                        "on CPUs), 'none' (every op integer) or comma-separated op names.")
    flags.DEFINE_boolean("strict_int8", False, "int8: fail if any op cannot be integer.")
    flags.DEFINE_string("head", None, "tflite, openvino: an export head on the model's encoder "
                        "instead of its own: 'embedding' (mean over the mask, L2-normalized).")
    flags.DEFINE_enum("sdk_metadata", "auto", ["auto", "on", "off"], "tflite: embed the "
                      "metadata of the mobile SDKs (Task Library, MediaPipe) and shape the "
                      "outputs for them: auto = whenever they can run the export, on = "
                      "required, off = never.")
    flags.DEFINE_string("qat_model_dir", None, "qat: the quantization-aware Keras model "
                        "(default <model_dir>/qat).")


def _print_signatures(meta: dict, label: str = "") -> None:
    """One line per signature of an export's metadata: its inputs and outputs with shapes."""
    for key, sig in meta["signatures"].items():
        ins = ", ".join(f"{n} {v['dtype']}{v['shape']}" for n, v in sig["inputs"].items())
        outs = ", ".join(f"{n} {v['dtype']}{v['shape']}" for n, v in sig["outputs"].items())
        print(f"  {label}{key}: {ins} -> {outs}")


def check_inputs() -> None:
    """The inputs' problems as one-line usage errors, before TensorFlow is imported: a run
    directory, an export or a missing path as --model_dir, missing files, malformed numbers."""
    from albert_tf import user_inputs
    try:
        if FLAGS.model_dir:
            user_inputs.model_dir(FLAGS.model_dir, "--model_dir", purpose="to export")
        for flag, what in (("vocab_file", "vocabulary (vocab.model or vocab.txt)"),
                           ("calibration_file", "task text (TSV)")):
            if FLAGS[flag].value is not None:
                user_inputs.input_file(FLAGS[flag].value, f"--{flag}", what)
        if FLAGS.qat_model_dir is not None and not os.path.isdir(FLAGS.qat_model_dir):
            raise user_inputs.InputError(f"--qat_model_dir={FLAGS.qat_model_dir}: no such "
                                         "directory; pass the QAT model albert-tf-compress wrote.")
        user_inputs.int_list(FLAGS.seq_lengths, "--seq_lengths", minimum=3)
        user_inputs.at_least(FLAGS.batch_size, "--batch_size")
        user_inputs.at_least(FLAGS.num_calibration, "--num_calibration")
    except user_inputs.InputError as e:
        from absl import app
        raise app.UsageError(str(e)) from None


def main(argv) -> None:
    del argv
    if not FLAGS.model_dir or not FLAGS.output:
        print("albert-tf-export: error: --model_dir and --output are required.", file=sys.stderr)
        sys.exit(2)
    if FLAGS.head and FLAGS.format == "saved_model":
        print("albert-tf-export: error: --head is a TFLite / OpenVINO export option; the "
              "SavedModel's `encode` signature serves the encoder outputs.", file=sys.stderr)
        sys.exit(2)
    if FLAGS.format in SERVER_FORMATS:     # flags the format does not take, before their values
        problem = _server_format_problem(FLAGS.format)
        if problem:
            print(f"albert-tf-export: error: {problem}", file=sys.stderr)
            sys.exit(2)
    check_inputs()
    from albert_tf.export.common import ExportError
    from albert_tf.outputs import OutputError
    try:
        if FLAGS.format == "openvino":
            return _export_openvino()
        if FLAGS.format == "onnx":
            return _export_onnx()
        if FLAGS.format == "saved_model":
            from albert_tf.export.saved_model import export_saved_model
            path = export_saved_model(FLAGS.model_dir, FLAGS.output, name=FLAGS.name,
                                      version=FLAGS.version, overwrite=FLAGS.overwrite,
                                      vocab_file=FLAGS.vocab_file)
            print(f"SavedModel written to {path}")
            print(f"inspect: saved_model_cli show --dir {path} --all")
            return
        from albert_tf.export import quantization
        from albert_tf.export.tflite import export_tflite
        recipe = quantization.get(FLAGS.quantization)
        if recipe.needs_qat_model and not FLAGS.qat_model_dir:
            # The compression tools' QAT models: importing registers their loader.
            from albert_tf.compression import qat as _qat  # noqa: F401
        float_ops = FLAGS.int8_float_ops
        if float_ops not in ("xnnpack", "none"):
            float_ops = [op.strip() for op in float_ops.split(",") if op.strip()]
        path = export_tflite(
            FLAGS.model_dir, FLAGS.output, quantization=FLAGS.quantization,
            seq_lengths=[int(s) for s in FLAGS.seq_lengths] if FLAGS.seq_lengths else None,
            batch_size=FLAGS.batch_size, with_tokenizer=FLAGS.with_tokenizer,
            overwrite=FLAGS.overwrite, vocab_file=FLAGS.vocab_file,
            calibration_file=FLAGS.calibration_file, data_dir=FLAGS.data_dir,
            num_calibration=FLAGS.num_calibration, qat_model_dir=FLAGS.qat_model_dir,
            strict_int8=FLAGS.strict_int8, int8_float_ops=float_ops, head=FLAGS.head,
            sdk_metadata=FLAGS.sdk_metadata)
    except (ExportError, OutputError) as e:
        print(f"albert-tf-export: error: {e}", file=sys.stderr)
        sys.exit(1)
    with open(os.path.join(path, "metadata.json"), encoding="utf-8") as f:
        meta = json.load(f)
    size = os.path.getsize(os.path.join(path, meta["model_file"]))
    print(f"TFLite model written to {path}/{meta['model_file']} ({size / 1e6:.2f} MB, "
          f"{meta['quantization']})")
    _print_signatures(meta, "signature ")
    if meta.get("sdk"):
        runners = ", ".join(meta["sdk"]["runners"]) or "no SDK"
        print(f"  mobile SDK metadata embedded: runs in {runners}; their ids are ours on "
              f"{meta['sdk']['same_ids_as_albert_tf']}")
        for runner, why in meta["sdk"].get("not_runners", {}).items():
            print(f"  not in {runner}: {why}")
    elif FLAGS.sdk_metadata == "auto" and meta.get("sdk_reason"):
        print(f"  no mobile SDK metadata: {meta['sdk_reason']}")
    if meta["custom_ops"]:
        print(f"  custom ops (register at load time): {meta['custom_ops']}")
    float_ops = meta["ops"]["float_ops"]
    if recipe.reports_float_ops:
        print(f"  ops computing in float: {float_ops or 'none'}")


# The server formats: name in messages, int8 method, and the flags each one does not take.
SERVER_FORMATS = {
    "openvino": ("An OpenVINO IR", "NNCF post-training quantization", ()),
    "onnx": ("An ONNX export", "ONNX Runtime dynamic-range quantization, no calibration",
             ("head", "calibration_file", "num_calibration", "data_dir")),
}


def _server_format_problem(fmt: str) -> str | None:
    """Why the flags make no sense for --format=openvino / onnx (None: they do)."""
    from albert_tf.export.openvino import QUANTIZATIONS, WITH_TOKENIZER_REFUSAL
    what, int8, not_taken = SERVER_FORMATS[fmt]
    if FLAGS.with_tokenizer:
        return WITH_TOKENIZER_REFUSAL if fmt == "openvino" else (
            "--with_tokenizer: ONNX exports take token ids; tokenize with albert_tf (Python: "
            "albert_tf.export.onnx_runner.OnnxClassifier), or export --format=saved_model for "
            "raw text in the graph.")
    if FLAGS.quantization not in QUANTIZATIONS:
        return (f"--quantization={FLAGS.quantization} is a TFLite recipe; {what[0].lower()}"
                f"{what[1:]} is {' or '.join(QUANTIZATIONS)} (int8: {int8}).")
    other = [f"--{name}" for name in ("int8_float_ops", "strict_int8", "qat_model_dir",
                                      "sdk_metadata", "name", "version", *not_taken)
             if FLAGS[name].present]
    if other:
        return (f"{', '.join(other)}: not an option of --format={fmt}; drop it.")
    if FLAGS.seq_lengths and len(FLAGS.seq_lengths) > 1:
        return (f"--seq_lengths={','.join(FLAGS.seq_lengths)}: {what} has one shape: "
                "pass one length for a static export, or none for dynamic [batch, seq] inputs.")
    return None


def _export_onnx() -> None:
    from albert_tf.export.onnx import export_onnx
    path = export_onnx(
        FLAGS.model_dir, FLAGS.output, quantization=FLAGS.quantization,
        seq_length=int(FLAGS.seq_lengths[0]) if FLAGS.seq_lengths else None,
        batch_size=FLAGS.batch_size if FLAGS["batch_size"].present else None,
        overwrite=FLAGS.overwrite, vocab_file=FLAGS.vocab_file)
    with open(os.path.join(path, "metadata.json"), encoding="utf-8") as f:
        meta = json.load(f)
    size = os.path.getsize(os.path.join(path, meta["model_file"]))
    print(f"ONNX model written to {path}/{meta['model_file']} ({size / 2**20:.2f} MiB, "
          f"{meta['quantization']}; fused: {_fused(meta)})")
    _print_signatures(meta)
    print("  token ids in: tokenize with albert_tf.export.onnx_runner.OnnxClassifier")


def _fused(meta: dict) -> str:
    ops = meta["ops"]["by_type"]
    return ", ".join(f"{op} {ops[op]}" for op in ("Attention", "QAttention",
                                                  "SkipLayerNormalization", "FastGelu",
                                                  "BiasGelu") if op in ops)


def _export_openvino() -> None:
    from albert_tf.export.openvino import export_openvino
    path = export_openvino(
        FLAGS.model_dir, FLAGS.output, quantization=FLAGS.quantization,
        seq_length=int(FLAGS.seq_lengths[0]) if FLAGS.seq_lengths else None,
        batch_size=FLAGS.batch_size if FLAGS["batch_size"].present else None,
        overwrite=FLAGS.overwrite, vocab_file=FLAGS.vocab_file,
        calibration_file=FLAGS.calibration_file, data_dir=FLAGS.data_dir,
        num_calibration=FLAGS.num_calibration, head=FLAGS.head)
    with open(os.path.join(path, "metadata.json"), encoding="utf-8") as f:
        meta = json.load(f)
    sizes = sum(os.path.getsize(os.path.join(path, meta[k])) for k in ("model_file",
                                                                       "weights_file"))
    print(f"OpenVINO IR written to {path}/{meta['model_file']} (+ {meta['weights_file']}: "
          f"{sizes / 2**20:.2f} MiB, {meta['quantization']})")
    _print_signatures(meta)
    print("  token ids in: tokenize with albert_tf.export.openvino_runner.OpenVinoClassifier")


def run() -> None:
    cli.run_app(main, define_flags, __doc__)


if __name__ == "__main__":
    run()
