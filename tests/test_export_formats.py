"""The export formats' one interface (`albert_tf.export.formats`): what each format takes,
the one-line refusals, the arguments its exporter gets. No TensorFlow until an export runs."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from albert_tf.export import formats
from albert_tf.export.formats import ExportOptions

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_the_registry_imports_no_tensorflow_and_lists_every_format():
    code = ("import sys; from albert_tf.export import formats; "
            "print(formats.names(), formats.every_quantization(), 'tensorflow' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, check=True).stdout
    assert out.strip().endswith("False"), out
    assert set(formats.names()) == {"saved_model", "tflite", "openvino", "onnx"}
    from albert_tf.export import quantization
    # TFLite's choices are its recipe table; the server formats add none of their own.
    assert formats.every_quantization() == quantization.names()
    assert formats.get("onnx").quantizations() == ("none", "int8")


@pytest.mark.parametrize("fmt, options, expected", [
    ("onnx", ExportOptions(head="embedding"), "--head: not an option of --format=onnx"),
    ("onnx", ExportOptions(calibration_file="t.tsv", data_dir="d"),
     "--calibration_file, --data_dir: not an option of --format=onnx"),
    ("openvino", ExportOptions(sdk_metadata="off"), "--sdk_metadata: not an option"),
    ("tflite", ExportOptions(name="x"), "--name: not an option of --format=tflite"),
    ("saved_model", ExportOptions(seq_lengths=(64,)), "--seq_lengths: not an option"),
    ("saved_model", ExportOptions(head="embedding"), "--head is a TFLite / OpenVINO export"),
    ("onnx", ExportOptions(with_tokenizer=True), "ONNX exports take token ids"),
    ("openvino", ExportOptions(with_tokenizer=True), "openvino-tokenizers' SentencePiece"),
    ("onnx", ExportOptions(quantization="dynamic"), "an ONNX export is none or int8 (int8: ONNX Runtime"),
    ("saved_model", ExportOptions(quantization="int8"), "a SavedModel is none (int8: "),
    ("openvino", ExportOptions(seq_lengths=(32, 64)), "An OpenVINO IR has one shape"),
    # Issue #44 (fresh pass): before the model loads, not after 8-12 s.
    ("tflite", ExportOptions(quantization="int8", with_tokenizer=True),
     "--with_tokenizer with --quantization=int8: calibration runs the ids signatures"),
    ("tflite", ExportOptions(quantization="int16x8"),
     "--quantization=int16x8: LiteRT cannot run albert-tf's int16x8 models"),
])
def test_a_request_the_format_cannot_take_is_one_line(fmt, options, expected):
    problem = formats.get(fmt).problem(options)
    assert problem and expected in problem and "\n" not in problem, problem


@pytest.mark.parametrize("fmt, options", [
    ("tflite", ExportOptions(quantization="dynamic", seq_lengths=(32, 64), with_tokenizer=True,
                             calibration_file="t.tsv", sdk_metadata="off", head="embedding")),
    ("openvino", ExportOptions(quantization="int8", seq_lengths=(32,), calibration_file="t",
                               head="embedding", batch_size=4)),
    ("onnx", ExportOptions(quantization="int8", batch_size=2, overwrite=True)),
    ("saved_model", ExportOptions(name="sst2", version=3, vocab_file="v.model")),
])
def test_what_a_format_takes_it_gets(fmt, options):
    export_format = formats.get(fmt)
    assert export_format.problem(options) is None
    arguments = export_format.arguments(options)
    given = set(options.given())
    if export_format.seq_lengths == "one" and "seq_lengths" in given:
        assert arguments.pop("seq_length") == options.seq_lengths[0]
        given.remove("seq_lengths")
    elif "seq_lengths" in given:
        assert arguments["seq_lengths"] == list(options.seq_lengths)
    assert set(arguments) == given


def test_an_unknown_format_and_a_refused_export_are_export_errors(tmp_path):
    from albert_tf.export.common import ExportError
    with pytest.raises(ExportError, match="--format='pdf': use one of saved_model, tflite"):
        formats.get("pdf")
    out = tmp_path / "out"
    with pytest.raises(ExportError, match="not an option of --format=onnx"):
        formats.export("onnx", str(tmp_path / "model"), str(out), ExportOptions(head="embedding"))
    assert not out.exists()


def test_every_format_with_a_runner_names_a_class_that_exists():
    import importlib
    for export_format in formats.every_format():
        if export_format.runner:
            module, name = export_format.runner.split(":")
            assert hasattr(importlib.import_module(module), name), export_format.name
        module, function = export_format.exporter.split(":")
        assert callable(getattr(importlib.import_module(module), function))


def test_a_refused_output_is_an_error_before_tensorflow_loads(tmp_path):
    """The output checks of `albert_tf.outputs` run before any exporter is imported: a bad
    ``--output`` costs no TensorFlow start-up and writes nothing."""
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    code = (
        "import sys\n"
        "from albert_tf.export import formats\n"
        "from albert_tf.outputs import OutputError\n"
        f"model = {str(model)!r}\n"
        "for fmt, out in (('tflite', model), ('onnx', model + '/inside'),\n"
        "                 ('saved_model', model + '/..')):\n"
        "    try:\n"
        "        formats.export(fmt, model, out)\n"
        "    except OutputError as e:\n"
        "        print(fmt, str(e).splitlines()[0][:60])\n"
        "print('tensorflow' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=str(tmp_path), check=True).stdout.splitlines()
    assert [line.split()[0] for line in out[:3]] == ["tflite", "onnx", "saved_model"], out
    assert out[-1] == "False", out
    assert sorted(p.name for p in model.iterdir()) == ["config.json"]


@pytest.mark.slow
def test_export_takes_a_vocabulary_directory_and_records_the_vocabulary(tmp_path):
    """Issue #44 (fresh pass): ``albert-tf-train-vocab --help`` says its output directory
    "can be passed wherever a vocabulary is", but ``albert-tf-export --vocab_file=<that
    directory>`` said "is a directory"; the one vocabulary in it is used (when it is the
    model's own: another one is refused, tests/test_command_failures.py), and metadata.json
    records its sha256 and size for the runners to check."""
    import json
    import shutil

    from console_scripts import env, path
    from compression_fixtures import VOCAB, tiny_model_dir
    from albert_tf.text.vocabulary import file_sha256
    model = tiny_model_dir(str(tmp_path / "model"))
    trained = tmp_path / "vocab"                     # as albert-tf-train-vocab writes it
    trained.mkdir()
    shutil.copy(VOCAB, trained / "vocab.model")
    result = subprocess.run([path("albert-tf-export"), f"--model_dir={model}",
                             f"--vocab_file={trained}", "--format=onnx", "--output=out"],
                            cwd=tmp_path, env=env(), capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr
    with open(tmp_path / "out" / "metadata.json", encoding="utf-8") as f:
        tokenizer = json.load(f)["tokenizer"]
    assert tokenizer["vocab_sha256"] == file_sha256(VOCAB)
    assert tokenizer["vocab_bytes"] == os.path.getsize(VOCAB)
