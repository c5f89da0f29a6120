"""albert-tf-export --format=onnx: our graph as ONNX Runtime fused operators, on the real
ONNX Runtime, with a tiny ALBERT finetuned on real SST-2 train text (`tests/sst2_tiny.py`)
evaluated on the real dev set."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import sst2_tiny  # noqa: E402
from sst2_tiny import ROOT, SEQ, encoder_dir, keras_probabilities, pack  # noqa: E402

# The tiny SST-2 classifier's fixtures (tests/sst2_tiny.py).
dev, model_dir, source = sst2_tiny.dev, sst2_tiny.model_dir, sst2_tiny.source

# Measured: the dynamic-int8 export's labels agreed with the float export's on 99.9% of the
# 872 dev sentences (tiny model); the bound leaves margin for another CPU or training run.
INT8_AGREEMENT = 0.95
LAYERS = 4   # albert_tiny's num_hidden_layers


@pytest.fixture(scope="module")
def float_export(model_dir, source, tmp_path_factory):
    from albert_tf.export.onnx import export_onnx
    return export_onnx(model_dir, str(tmp_path_factory.mktemp("ort") / "float"), source=source)


@pytest.fixture(scope="module")
def int8_export(model_dir, source, tmp_path_factory):
    from albert_tf.export.onnx import export_onnx
    return export_onnx(model_dir, str(tmp_path_factory.mktemp("ort") / "int8"),
                       quantization="int8", source=source)


def _session(export):
    return ort.InferenceSession(os.path.join(export, "model.onnx"),
                                providers=["CPUExecutionProvider"])


def _meta(export):
    with open(os.path.join(export, "metadata.json")) as f:
        return json.load(f)


def test_export_equals_keras_on_dev_ids_at_two_lengths(float_export, source, dev, data_dir):
    assert sorted(os.listdir(float_export)) == [".albert-tf-output.json", "labels.txt",
                                                "metadata.json", "model.onnx", "vocab.model"]
    meta = _meta(float_export)
    assert meta["format"] == "albert-tf-onnx" and meta["quantization"] == "none"
    assert (meta["task"], meta["head"], meta["labels"]) == ("sst2", "classification", ["0", "1"])
    sig = meta["signatures"]["serving_default"]
    assert sig["inputs"] == {n: {"dtype": "int32", "shape": [None, None]}
                             for n in ("input_word_ids", "input_mask", "input_type_ids")}
    assert sig["outputs"] == {"probabilities": {"dtype": "float32", "shape": [None, 2]},
                              "label_id": {"dtype": "int32", "shape": [None]}}
    assert tuple(sig["outputs"]) == source.head.onnx_outputs   # as the registry declares
    ops = meta["ops"]["by_type"]   # every layer as ONNX Runtime's fused operators
    assert (ops["Attention"], ops["SkipLayerNormalization"], ops["FastGelu"]) == (
        LAYERS, 2 * LAYERS, LAYERS)
    assert "Softmax" in ops and ops.get("Transpose", 0) == 0
    session = _session(float_export)
    for seq, sentences in ((16, dev[:48]), (SEQ, dev[48:80])):   # one dynamic graph
        feats, probs = keras_probabilities(source, sentences, seq)
        out, labels = session.run(["probabilities", "label_id"], feats)
        np.testing.assert_allclose(out, probs, atol=1e-5)
        assert labels.dtype == np.int32 and (labels == probs.argmax(-1)).all()
    # Padding is masked like Keras's: a short sentence in a long row gives its own answer.
    feats, probs = keras_probabilities(source, dev[:4], 64)
    np.testing.assert_allclose(session.run(["probabilities"], feats)[0], probs, atol=1e-5)


@pytest.mark.slow
def test_encoder_outputs_and_bert_without_sharing(tmp_path):
    """A pretrained-style model directory gives the encoder outputs; an unshared encoder
    with E = H (BERT's layout: no embedding projection) gives the same as Keras too."""
    from albert_tf.backend import tf
    from albert_tf.checkpoints import load_config_from_dir
    from albert_tf.export.common import load_source
    from albert_tf.export.onnx import export_onnx
    for sharing in ("all", "none"):
        path = str(tmp_path / sharing)
        encoder_dir(path, sharing, layers=3,
                    **({"embedding_size": 64} if sharing == "none" else {}))
        out = export_onnx(path, str(tmp_path / f"ort_{sharing}"))
        assert list(_meta(out)["signatures"]["serving_default"]["outputs"]) == [
            "sequence_output", "pooled_output"]
        assert load_source(path).head.onnx_outputs == ("sequence_output", "pooled_output")
        feats = pack(["a first sentence", "and a second, longer one to pad the first"], 24)
        keras = load_source(path).encoder({k: tf.constant(v) for k, v in feats.items()})
        sequence, pooled = _session(out).run(["sequence_output", "pooled_output"], feats)
        hidden = load_config_from_dir(path).hidden_size
        assert sequence.shape == (2, 24, hidden) and pooled.shape == (2, hidden)
        ops = _meta(out)["ops"]["by_type"]
        assert ops.get("MatMul", 0) == 3 * 3 + 1 + (sharing == "all")   # projection iff E != H
        np.testing.assert_allclose(sequence, keras["sequence_output"].numpy(), atol=1e-4)
        np.testing.assert_allclose(pooled, keras["pooled_output"].numpy(), atol=1e-5)


@pytest.mark.slow
def test_shared_layer_is_stored_once(tmp_path):
    from albert_tf.export.onnx import export_onnx
    layers = 6
    params, sizes = {}, {}
    for sharing in ("all", "none"):
        params[sharing] = encoder_dir(str(tmp_path / sharing), sharing, layers)
        out = export_onnx(str(tmp_path / sharing), str(tmp_path / f"ort_{sharing}"))
        sizes[sharing] = os.path.getsize(os.path.join(out, "model.onnx"))
    layer = (params["none"] - params["all"]) / (layers - 1)   # one layer's parameters
    assert 4 * layer > 150_000
    for sharing in sizes:   # every weight once as float32, plus the graph (< 64 KiB here)
        assert 4 * params[sharing] <= sizes[sharing] < 4 * params[sharing] + 2**16, sharing
    # The unshared file holds L - 1 more layers; the shared one no copy per layer.
    assert sizes["none"] - sizes["all"] == pytest.approx(4 * layer * (layers - 1), rel=0.02)


def test_int8_export_quantizes_every_layer_and_keeps_the_labels(int8_export, float_export,
                                                                dev):
    meta = _meta(int8_export)
    ops = meta["ops"]["by_type"]
    assert meta["quantization"] == "int8"
    assert ops["QAttention"] == LAYERS and "Attention" not in ops     # int8 Q, K, V
    assert ops["MatMulInteger"] >= 2 * LAYERS                         # output and FFN
    assert os.path.getsize(os.path.join(int8_export, "model.onnx")) < 0.5 * os.path.getsize(
        os.path.join(float_export, "model.onnx"))
    feats = pack(dev)
    labels = {name: _session(export).run(["label_id"], feats)[0]
              for name, export in (("float", float_export), ("int8", int8_export))}
    assert (labels["int8"] == labels["float"]).mean() >= INT8_AGREEMENT
    assert 0.2 < labels["float"].mean() < 0.8   # a trained head: both labels occur


def test_classifier_on_raw_text_gives_keras_labels(float_export, source, dev):
    from albert_tf.runtime.onnx import OnnxClassifier
    _, probs = keras_probabilities(source, dev, SEQ)
    classifier = OnnxClassifier(float_export, threads=1, batch_size=8)
    assert classifier.buckets == [(16, "seq_16"), (SEQ, f"seq_{SEQ}")]
    predictions = classifier.predict(dev)
    assert [p["label"] for p in predictions] == [str(i) for i in probs.argmax(-1)]
    np.testing.assert_allclose([p["probabilities"] for p in predictions], probs, atol=1e-5)
    with pytest.raises(ValueError, match="one text"):
        classifier.predict(["a"], ["b"])


def test_benchmark_times_our_onnx_export_without_tensorflow(model_dir, data_dir, tmp_path):
    from albert_tf.benchmark import targets
    from albert_tf.benchmark.artifacts import ArtifactBuilder
    from albert_tf.benchmark.suite import time_in_worker
    target = targets.get("ort_int8")
    assert (target.owner, target.arithmetic, target.export) == ("ours", "int8", ("onnx", "int8"))
    builder = ArtifactBuilder(model_dir, str(tmp_path), data_dir, echo=lambda s: None)
    runtime, path = builder.artifact("ort_int8", [(1, 16)])
    assert runtime == "onnx" and path.endswith(os.path.join("ort_int8", "model.onnx"))
    timed = time_in_worker(runtime, path, [(1, 16), (2, 32)], 8000, threads=1,
                           min_seconds=0.05)
    assert not timed["imported_tensorflow"]
    assert [(r["batch"], r["seq"]) for r in timed["results"]] == [(1, 16), (2, 32)]


def test_bad_requests_are_one_line_errors(model_dir, source, tmp_path):
    from albert_tf.export.common import ExportError
    from albert_tf.export.onnx import export_onnx, require
    with pytest.raises(ExportError, match=r"pip install 'albert-tf\[onnx\]'"):
        require("onnx", "no_such_onnx_package")
    with pytest.raises(ExportError, match="is not a directory"):
        export_onnx(str(tmp_path / "nope"), str(tmp_path / "a"))
    with pytest.raises(ExportError, match="none.*int8"):
        export_onnx(model_dir, str(tmp_path / "b"), quantization="dynamic", source=source)
    with pytest.raises(ExportError, match=r"seq_lengths=1024"):
        export_onnx(model_dir, str(tmp_path / "c"), seq_length=1024, source=source)
    from albert_tf.outputs import OutputError, write_marker
    (tmp_path / "d").mkdir()
    write_marker(str(tmp_path / "d"), "onnx export")       # an earlier export
    with pytest.raises(OutputError, match="already exists.*--overwrite"):
        export_onnx(model_dir, str(tmp_path / "d"), source=source)
    assert [p.name for p in tmp_path.iterdir()] == ["d"]   # nothing (half-)written


def test_other_heads_are_refused_with_the_formats_that_export_them(tmp_path):
    import albert_tf
    from albert_tf.backend import keras
    from albert_tf.checkpoints import TaskInfo
    from albert_tf.export.common import ExportError
    from albert_tf.export.onnx import export_onnx
    from sst2_tiny import VOCAB, tiny_config
    keras.utils.set_random_seed(0)
    path = str(tmp_path / "span")
    albert_tf.save_model_dir(albert_tf.build_span_extractor(tiny_config()), path,
                             task_info=TaskInfo("squad", "span", None, 64), vocab_file=VOCAB)
    with pytest.raises(ExportError, match="'span' head.*--format=tflite") as info:
        export_onnx(path, str(tmp_path / "out"))
    assert "\n" not in str(info.value) and not os.path.exists(tmp_path / "out")


def _export_cli(*args):
    return subprocess.run([sys.executable, "-m", "albert_tf.bin.export", "--format=onnx",
                           *args], capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env=dict(os.environ))


def _last_line(proc):
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return proc.stderr.strip().splitlines()[-1]


@pytest.mark.slow
def test_cli_exports_a_static_int8_model_and_refuses_what_makes_no_sense(model_dir, tmp_path):
    from albert_tf.runtime.onnx import OnnxClassifier
    out = str(tmp_path / "static")
    proc = _export_cli(f"--model_dir={model_dir}", f"--output={out}", "--seq_lengths=16",
                       "--batch_size=2", "--quantization=int8")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "ONNX model written to" in proc.stdout and "input_word_ids int32[2, 16]" in proc.stdout
    assert f"QAttention {LAYERS}" in proc.stdout
    classifier = OnnxClassifier(out, threads=1)
    assert classifier.buckets == [(16, "seq_16")] and classifier.batch_size("seq_16") == 2
    assert [p["label"] in ("0", "1") for p in classifier.predict(["fine", "bad", "ok"])] == [
        True] * 3
    proc = _export_cli(f"--model_dir={model_dir}", f"--output={tmp_path / 'x'}",
                       "--with_tokenizer")
    assert proc.returncode == 2 and "ONNX exports take token ids" in _last_line(proc)
    proc = _export_cli(f"--model_dir={model_dir}", f"--output={tmp_path / 'y'}",
                       "--quantization=dynamic")
    assert proc.returncode == 2 and "none or int8" in _last_line(proc)
    proc = _export_cli(f"--model_dir={model_dir}", f"--output={tmp_path / 'z'}",
                       "--calibration_file=train.tsv")
    assert proc.returncode == 2 and "--calibration_file" in _last_line(proc)
    assert not any(os.path.exists(tmp_path / n) for n in "xyz")
