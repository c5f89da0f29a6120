"""albert-tf-export: SavedModel for TF Serving, TFLite for phones and CPUs, OpenVINO IR or ONNX
for x86 servers, from a model directory (a run's best/ or final/, a converted model).

    albert-tf-export --model_dir=runs/sst2/best --format=saved_model --output=serving
        # -> serving/sst2/<next version>/ (signatures serving_default, tokenize, encode[, mlm])
    albert-tf-export --model_dir=runs/sst2/best --format=tflite --output=edge/sst2_buckets \\
        --quantization=int8 --seq_lengths=32,64,128   # calibrated on the task's train text
    albert-tf-export --model_dir=runs/sst2/best --format=tflite --output=edge/sst2_text \\
        --with_tokenizer          # string in: the tokenizer's tf-text custom ops inside
    albert-tf-export --model_dir=runs/sst2/best --format=tflite --output=edge/sst2_embed \\
        --head=embedding --seq_lengths=64   # MediaPipe TextEmbedder: mean-pooled, L2-normalized
    albert-tf-export --model_dir=runs/sst2/best --format=openvino --output=server/sst2_ir_int8 \\
        --quantization=int8       # OpenVINO IR (model.xml/.bin) of our graph; ids in, NNCF int8
    albert-tf-export --model_dir=runs/sst2/best --format=onnx --output=server/sst2_onnx \\
        --quantization=none       # ONNX for ONNX Runtime (fused operators); ids in, float
    albert-tf-export --model_dir=runs/sst2_blocks/model --format=tflite --output=edge/sst2_sparse \\
        --quantization=int8 --sparse_weights=1x16   # block-pruned weights stored sparse

runs/sst2/best is the tour's model (README.md); runs/sst2_blocks/model, the model of
``albert-tf-compress --help``'s block-pruning example (a compression's --model_dir holds the
model directory model/ and its TFLite files tflite/). --calibration_file=TSV calibrates int8
on other text than the task's train split.

OpenVINO (albert_tf/export/openvino.py) and ONNX (albert_tf/export/onnx.py; classification,
regression and pretrained/encoder models): dynamic [batch, seq] ids unless --seq_lengths=N
(one) / --batch_size=B fix them; --quantization=none or int8; no --with_tokenizer (tokenize
in Python: albert_tf.runtime.openvino.OpenVinoClassifier,
albert_tf.runtime.onnx.OnnxClassifier, or albert-tflite-run --model=server/...).

--sparse_weights (albert_tf/export/sparsity.py) stores a pruned model's zeros for the sparse
kernels that run them: TFLite none (1x4 blocks) and int8 (1x16 blocks; LiteRT's builtin
kernels, not XNNPACK), OpenVINO int8 (unstructured; compiled with
CPU_SPARSE_WEIGHTS_DECOMPRESSION_RATE, on AMX CPUs). Any other export, or a model whose zeros
do not form the pattern, is refused in one line.

A TFLite export with one [1, seq] signature of a classification, span or embedding model
embeds the metadata the mobile SDKs read (Task Library, MediaPipe Tasks; see
albert_tf/export/sdk_metadata.py and tflite/README.md): --sdk_metadata=off skips it.

The model directory needs config.json, weights, task.json (finetuned models) and its
vocabulary, vocab.model (SentencePiece) or vocab.txt (WordPiece), or --vocab_file.
Everything is written to a staged sibling directory and moved into place at the end
(albert_tf/outputs.py): --output may not be '.', '~', a parent of the current directory or
one of the inputs, and --overwrite replaces only an earlier albert-tf output. The last line
says where the export went. See docs/export.md and tflite/README.md.
"""

from __future__ import annotations

import os

from absl import flags

import albert_tf.heads.registry as heads
from albert_tf import cli

FLAGS = flags.FLAGS


def _export_heads_help() -> str:
    """The export heads (``--head``) and what each gives: ``'embedding' (...)``."""
    return ", ".join(f"{name!r} ({head.export_help})"
                     for name, head in heads.EXPORT_HEADS.items())


def define_flags() -> None:
    """Defines the flags. Called by `run`, not at import: every binary shares absl's
    one flag registry, and several define the same names."""
    flags.DEFINE_string("model_dir", None, "Model directory (config.json, weights, task.json, "
                        "vocab.model or vocab.txt).")
    from albert_tf.export import formats
    flags.DEFINE_enum("format", "saved_model", list(formats.names()), "What to export.")
    flags.DEFINE_string("output", None, "saved_model: base directory (the model goes to "
                        "<output>/<name>/<version>/); tflite, openvino: the export directory.")
    flags.DEFINE_string("vocab_file", None, "SentencePiece model or WordPiece vocab.txt, or a "
                        "directory holding one (albert-tf-train-vocab's --output); it must be "
                        "the vocabulary the model was trained with (default: the model "
                        "directory's vocab.model or vocab.txt).")
    flags.DEFINE_boolean("overwrite", False, "Replace an earlier albert-tf export at --output "
                         "(never a directory albert-tf did not write).")

    # SavedModel
    flags.DEFINE_string("name", None, "saved_model: model name (default: the task name).")
    flags.DEFINE_integer("version", None, "saved_model: version (default: next free number).")
    # TFLite
    from albert_tf.export import quantization
    flags.DEFINE_enum("quantization", "none", list(formats.every_quantization()),
                      "tflite: weight/activation quantization (the recipes of "
                      f"albert_tf.export.quantization: {quantization.describe()}); "
                      + "; ".join(f"{f.name}: {' or '.join(f.quantizations())} (int8: "
                                  f"{f.int8_method})" for f in map(formats.get, formats.names())
                                  if f.name != "tflite") + ".")
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
                        f"instead of its own: {_export_heads_help()}.")
    flags.DEFINE_enum("sdk_metadata", "auto", ["auto", "on", "off"], "tflite: embed the "
                      "metadata of the mobile SDKs (Task Library, MediaPipe) and shape the "
                      "outputs for them: auto = whenever they can run the export, on = "
                      "required, off = never.")
    flags.DEFINE_string("qat_model_dir", None, "qat: the quantization-aware Keras model "
                        "(default <model_dir>/qat).")
    from albert_tf.export import sparsity
    flags.DEFINE_enum("sparse_weights", None, list(sparsity.CHOICES), "Store a pruned model's "
                      "weights sparse for the runtime's sparse kernels: the pruning pattern "
                      "(TFLite 1xN blocks of the [out, in] weight = Keras Nx1 kernel blocks) "
                      "or auto (the one its zeros form); runs on "
                      f"{sparsity.runs_on()}. Refused elsewhere, and for a model whose zeros "
                      "do not form the pattern (docs/export.md, \"Sparse weights\").")


def check_inputs() -> str | None:
    """The inputs' problems as one-line usage errors, before TensorFlow is imported: a run
    directory, an export or a missing path as --model_dir, missing files, a vocabulary that
    is not the model's (or empty, or not one), a calibration file that is not UTF-8 text, no
    QAT model for --quantization=qat, malformed numbers. Returns the vocabulary file to
    tokenize with when --vocab_file names a directory (the one vocabulary in it), else
    --vocab_file."""
    from albert_tf import user_inputs
    from albert_tf.text import vocabulary
    vocab_file = FLAGS.vocab_file
    try:
        if FLAGS.model_dir:
            user_inputs.model_dir(FLAGS.model_dir, "--model_dir", purpose="to export")
        if vocab_file is not None and not os.path.isdir(vocab_file):
            user_inputs.input_file(vocab_file, "--vocab_file",
                                   "vocabulary (vocab.model or vocab.txt)")
        if FLAGS.calibration_file is not None:
            user_inputs.input_file(FLAGS.calibration_file, "--calibration_file",
                                   "task text (TSV)")
            _check_utf8(FLAGS.calibration_file, "--calibration_file")
        if FLAGS.model_dir:
            try:
                vocab_file = vocabulary.model_vocabulary(FLAGS.model_dir, vocab_file)
            except vocabulary.VocabularyError as e:
                raise user_inputs.InputError(str(e)) from None
            if FLAGS.vocab_file is None:
                vocab_file = None               # the model directory's, found again later
        if FLAGS.qat_model_dir is not None and not os.path.isdir(FLAGS.qat_model_dir):
            raise user_inputs.InputError(f"--qat_model_dir={FLAGS.qat_model_dir}: no such "
                                         "directory; pass the QAT model albert-tf-compress wrote.")
        from albert_tf.export import quantization
        if (FLAGS.format == "tflite" and FLAGS.model_dir
                and quantization.get(FLAGS.quantization).needs_qat_model):
            problem = quantization.qat_model_problem(FLAGS.model_dir, FLAGS.qat_model_dir)
            if problem:
                raise user_inputs.InputError(problem)
        user_inputs.int_list(FLAGS.seq_lengths, "--seq_lengths", minimum=3,
                             maximum=_positions(FLAGS.model_dir),
                             why_maximum=f"max_position_embeddings of {FLAGS.model_dir}")
        user_inputs.at_least(FLAGS.batch_size, "--batch_size")
        user_inputs.at_least(FLAGS.num_calibration, "--num_calibration")
    except user_inputs.InputError as e:
        from absl import app
        raise app.UsageError(str(e)) from None
    return vocab_file


def _check_utf8(path: str, flag: str) -> None:
    """An `InputError` unless ``path`` is UTF-8 text (no NUL bytes): the calibration
    reader decodes it as such, after TensorFlow and the model have loaded."""
    from albert_tf import user_inputs
    with open(path, "rb") as f:
        data = f.read(1 << 26)                  # 64 MiB: more than any task's train split
    if b"\0" in data:
        raise user_inputs.InputError(f"{flag}={path} is a binary file (NUL bytes), not text; "
                                     "pass a TSV of task text (a sentence column, or one text "
                                     "per line).")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        if len(data) < 1 << 26 or e.start < len(data) - 3:   # not a character cut by the read
            line = data.count(b"\n", 0, e.start) + 1
            raise user_inputs.InputError(
                f"{flag}={path} is not UTF-8 text (line {line}, byte {e.start}: "
                f"{e.reason}); pass a UTF-8 TSV of task text (re-encode it, e.g. iconv -t "
                "UTF-8).") from None


def _positions(model_dir: str | None) -> int | None:
    """The ``max_position_embeddings`` of the model directory's ``config.json`` (read as
    JSON, no TensorFlow): the longest sequence its exports take. None when it cannot be
    read here (the exporter reports that)."""
    import json
    from albert_tf.user_inputs import CONFIG_FILE
    try:
        with open(os.path.join(model_dir or "", CONFIG_FILE), encoding="utf-8") as f:
            value = json.load(f).get("max_position_embeddings")
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, int) and value >= 3 else None


def export_options():
    """The given flags as `albert_tf.export.formats.ExportOptions` (every field that is a
    flag; one left at its default is not given: the format's default applies)."""
    import dataclasses

    from albert_tf.export.formats import ExportOptions
    names = [f.name for f in dataclasses.fields(ExportOptions) if f.name in FLAGS]
    given = {name: FLAGS[name].value for name in names
             if FLAGS[name].present and FLAGS[name].value not in (None, False)}
    if "seq_lengths" in given:
        given["seq_lengths"] = tuple(given["seq_lengths"])   # numbers: `check_inputs`
    ops = given.get("int8_float_ops")
    if ops is not None and ops not in ("xnnpack", "none"):
        given["int8_float_ops"] = [op.strip() for op in ops.split(",") if op.strip()]
    return ExportOptions(**given)


def main(argv) -> None:
    del argv
    from albert_tf.export import formats
    if not FLAGS.model_dir or not FLAGS.output:
        cli.fail("--model_dir and --output are required.")
    export_format = formats.get(FLAGS.format)
    options = export_options()
    problem = export_format.problem(options)   # options it does not take, before values
    if problem:
        cli.fail(problem)
    vocab_file = check_inputs()
    if vocab_file != options.vocab_file:        # a vocabulary directory: the file in it
        import dataclasses
        options = dataclasses.replace(options, vocab_file=vocab_file)
    from albert_tf.export.errors import ExportError
    from albert_tf.outputs import OutputError
    from albert_tf.export import quantization
    if (FLAGS.quantization in quantization.names() and not FLAGS.qat_model_dir
            and quantization.get(FLAGS.quantization).needs_qat_model):
        # The compression tools' QAT models: importing registers their loader.
        from albert_tf.compression import qat as _qat  # noqa: F401
    try:
        path = export_format.export(FLAGS.model_dir, FLAGS.output, options)
    except (ExportError, OutputError) as e:
        cli.fail(e, 1)
    for line in export_format.summary(path):
        print(line)
    print(f"wrote {path}")


def run() -> None:
    cli.run_app(main, define_flags, __doc__)


if __name__ == "__main__":
    run()
