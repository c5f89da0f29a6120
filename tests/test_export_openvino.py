"""albert-tf-export --format=openvino: real OpenVINO and NNCF on tiny real models.

The classifier is `tests/sst2_tiny.py`'s: a tiny ALBERT finetuned on real SST-2 train text.
Evaluation is on the real SST-2 dev set; int8 calibrates on the train split."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import sst2_tiny
from sst2_tiny import ROOT, SEQ, encoder_dir, keras_probabilities


@pytest.fixture(autouse=True, scope="module")
def _openvino_installed():
    """Skips the module without the ``[openvino]`` extra. Checked when a test runs, not at
    collection: every test here is in the slow tier, and importing NNCF (with PyTorch and
    scikit-learn, ~3 CPU-s) would cost each worker of the gate, which runs none of them."""
    pytest.importorskip("openvino")
    pytest.importorskip("nncf")

# The tiny SST-2 classifier's fixtures (tests/sst2_tiny.py).
dev, model_dir, source = sst2_tiny.dev, sst2_tiny.model_dir, sst2_tiny.source
# Measured: the int8 IR's labels agreed with the float IR's on 99.9% of the 872 dev sentences
# (both at f32) and on 99.7% (int8 at OpenVINO's default precision, bf16 on AMX CPUs); the
# bound leaves margin (another CPU, another training run's weights).
INT8_AGREEMENT = 0.97


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """The benchmark's work directory for the classifier (``<work>/<name>`` for
    `benchmark_end_to_end(name, ...)`): `float_export` is written where its
    `ArtifactBuilder` keeps the ``ir_none`` export, so the benchmark tests below time this
    export instead of exporting the same model again."""
    return tmp_path_factory.mktemp("bench")


@pytest.fixture(scope="module")
def float_export(model_dir, source, work):
    from albert_tf.export.openvino import export_openvino
    return export_openvino(model_dir, str(work / "tiny" / "sst2_classifier" / "ir_none"),
                           source=source)


@pytest.fixture(scope="module")
def int8_export(model_dir, source, data_dir, tmp_path_factory):
    from albert_tf.export.openvino import export_openvino
    return export_openvino(model_dir, str(tmp_path_factory.mktemp("ov") / "int8"),
                           quantization="int8", data_dir=data_dir, source=source)


def ir_outputs(xml, feats, precision="f32"):
    import openvino as ov
    core = ov.Core()
    compiled = core.compile_model(core.read_model(xml), "CPU",
                                  {"INFERENCE_PRECISION_HINT": precision,
                                   "INFERENCE_NUM_THREADS": 1})
    results = compiled.create_infer_request().infer(feats)
    return {name: np.array(results[name]) for name in ("probabilities", "label_id")}


@pytest.mark.slow
def test_ir_equals_keras_on_dev_ids_at_two_lengths(float_export, source, dev):
    assert sorted(os.listdir(float_export)) == [".albert-tf-output.json", "labels.txt",
                                                "metadata.json", "model.bin", "model.xml",
                                                "vocab.model"]
    with open(os.path.join(float_export, "metadata.json")) as f:
        meta = json.load(f)
    assert meta["format"] == "albert-tf-openvino" and meta["quantization"] == "none"
    assert (meta["task"], meta["head"], meta["labels"]) == ("sst2", "classification", ["0", "1"])
    assert meta["tokenizer"]["vocab_file"] == "vocab.model" and meta["max_seq_length"] == SEQ
    sig = meta["signatures"]["serving_default"]
    assert sig["inputs"] == {n: {"dtype": "int32", "shape": [None, None]}
                             for n in ("input_word_ids", "input_mask", "input_type_ids")}
    assert sig["outputs"] == {"label_id": {"dtype": "int32", "shape": [None]},
                              "probabilities": {"dtype": "float32", "shape": [None, 2]}}
    assert meta["ops"]["fake_quantize"] == 0
    xml = os.path.join(float_export, "model.xml")
    for seq, sentences in ((16, dev[:48]), (SEQ, dev[48:80])):   # one dynamic IR
        feats, probs = keras_probabilities(source, sentences, seq)
        out = ir_outputs(xml, feats)
        assert out["probabilities"].shape == (len(sentences), 2)
        np.testing.assert_allclose(out["probabilities"], probs, atol=1e-4)
        assert (out["label_id"] == probs.argmax(-1)).all()


@pytest.mark.slow
def test_shared_layer_is_stored_once(tmp_path):
    from albert_tf.export.openvino import export_openvino
    layers = 6
    params, bins = {}, {}
    for sharing in ("all", "none"):
        params[sharing] = encoder_dir(str(tmp_path / sharing), sharing)
        out = export_openvino(str(tmp_path / sharing), str(tmp_path / f"ov_{sharing}"))
        bins[sharing] = os.path.getsize(os.path.join(out, "model.bin"))
        # Every weight once (float32), little else: the .bin is the parameter bytes (a bit
        # less: OpenVINO stores equal constants once, e.g. the zero biases of random init).
        assert 0.95 * 4 * params[sharing] <= bins[sharing] < 1.2 * 4 * params[sharing], sharing
    # The encoder layer's parameters, and the rest (embeddings, projection, pooler).
    layer = (params["none"] - params["all"]) / (layers - 1)
    rest = params["all"] - layer
    stored = {s: bins[s] - 4 * rest for s in bins}   # bytes of layer weights in the .bin
    assert stored["all"] == pytest.approx(4 * layer, rel=0.05)             # once
    assert stored["none"] / stored["all"] == pytest.approx(layers, rel=0.05)  # L times


@pytest.mark.slow
def test_int8_ir_is_fake_quantized_and_agrees_with_float(float_export, int8_export, dev):
    import openvino as ov
    from albert_tf.runtime.openvino import OpenVinoClassifier
    with open(os.path.join(int8_export, "metadata.json")) as f:
        meta = json.load(f)
    assert meta["quantization"] == "int8" and meta["calibration_examples"] == 256
    model = ov.Core().read_model(os.path.join(int8_export, "model.xml"))
    fake = sum(op.get_type_name() == "FakeQuantize" for op in model.get_ops())
    assert fake == meta["ops"]["fake_quantize"] and fake >= 4 * 4   # 4 layers, >= 4 MatMuls
    sentences, labels = dev, {}
    for name, export, precision in (("float", float_export, "f32"), ("int8", int8_export, "f32"),
                                    ("int8_default", int8_export, None)):
        predictions = OpenVinoClassifier(export, threads=1, precision=precision).predict(sentences)
        labels[name] = np.array([p["label"] for p in predictions])
    for name in ("int8", "int8_default"):
        agreement = (labels[name] == labels["float"]).mean()
        assert agreement >= INT8_AGREEMENT, (name, agreement)
    assert 0.2 < (labels["float"] == "1").mean() < 0.8   # a trained head: both labels occur


@pytest.mark.slow
def test_classifier_on_raw_text_gives_keras_labels(float_export, source, dev):
    from albert_tf.runtime.openvino import OpenVinoClassifier
    sentences = dev
    _, probs = keras_probabilities(source, sentences, SEQ)
    classifier = OpenVinoClassifier(float_export, threads=1, precision="f32", batch_size=8)
    assert classifier.buckets == [(16, "seq_16"), (SEQ, f"seq_{SEQ}")]
    predictions = classifier.predict(sentences)
    assert [p["label"] for p in predictions] == [str(i) for i in probs.argmax(-1)]
    np.testing.assert_allclose([p["probabilities"] for p in predictions], probs, atol=1e-4)
    assert sorted(classifier._compiled) == ["seq_16", f"seq_{SEQ}"]   # compiled per bucket
    with pytest.raises(ValueError, match="one text"):
        classifier.predict(["a"], ["b"])


@pytest.mark.slow
def test_benchmark_worker_times_our_ir_without_tensorflow(model_dir, data_dir, work,
                                                          float_export):
    from albert_tf.benchmark import targets
    from albert_tf.benchmark.artifacts import ArtifactBuilder
    from albert_tf.benchmark.suite import file_size, time_in_worker
    assert {"ir_none", "ir_bf16", "ir_int8"} <= set(targets.names())
    assert targets.get("ir_int8").integer and targets.get("ir_bf16").arithmetic == "bf16"
    builder = ArtifactBuilder(model_dir, str(work / "tiny" / "sst2_classifier"), data_dir,
                              echo=lambda s: None)
    runtime, xml = builder.artifact("ir_none", [(1, 16)])   # float_export's
    assert xml == os.path.join(float_export, "model.xml")
    assert runtime == "openvino" and xml.endswith("model.xml")       # at the f32 hint
    assert builder.artifact("ir_bf16", [(1, 16)]) == ("openvino_bf16", xml)
    size = os.path.getsize(xml) + os.path.getsize(xml[:-len(".xml")] + ".bin")
    assert file_size("ir_none", xml, 1, 16) == pytest.approx(size / 2**20)
    timed = time_in_worker(runtime, xml, [(1, 16), (2, 32)], 8000, threads=1,
                           min_seconds=0.05)
    assert not timed["imported_tensorflow"]
    assert [(r["batch"], r["seq"]) for r in timed["results"]] == [(1, 16), (2, 32)]
    assert all(r["median_ms"] > 0 for r in timed["results"])


@pytest.mark.slow
def test_sst2_end_to_end_runs_our_ir_like_tflite(model_dir, source, dev, data_dir, work,
                                                float_export, monkeypatch):
    """albert-tf-benchmark --sst2_end_to_end's driver with an ir_* runtime: the IR exported
    from the classifier (`float_export`, where the driver's builder keeps it), all dev
    sentences through OpenVinoClassifier in a worker process."""
    from albert_tf.benchmark import end_to_end
    from albert_tf.benchmark.end_to_end import benchmark_end_to_end, load_sst2_dev, sst2_dev_file
    results = []

    def recording(*args, **kwargs):
        results.append(run_in_worker(*args, **kwargs))
        return results[-1]
    run_in_worker = end_to_end.run_in_worker
    monkeypatch.setattr(end_to_end, "run_in_worker", recording)
    (row,) = benchmark_end_to_end("tiny", model_dir, [], [8], [16, SEQ], str(work),
                                  data_dir, threads=1, min_seconds=0.05, echo=lambda s: None,
                                  servers=["ir_none"])
    assert (row.quantization, row.batch, row.buckets, row.sentences) == (
        "ir_none", 8, [16, SEQ], 872)
    assert not results[0]["imported_tensorflow"]
    _, labels = load_sst2_dev(sst2_dev_file(data_dir))
    _, probs = keras_probabilities(source, dev, SEQ)
    assert row.accuracy == np.mean(probs.argmax(-1) == np.array(labels).astype(int)) > 0.6


@pytest.mark.slow
def test_bad_requests_are_one_line_errors(model_dir, source, tmp_path):
    from albert_tf.export.common import ExportError
    from albert_tf.export.openvino import export_openvino, require
    with pytest.raises(ExportError, match=r"pip install 'albert-tf\[openvino\]'"):
        require("openvino", "no_such_openvino_package")
    with pytest.raises(ExportError, match="is not a directory"):
        export_openvino(str(tmp_path / "nope"), str(tmp_path / "a"))
    with pytest.raises(ExportError, match="none.*int8"):
        export_openvino(model_dir, str(tmp_path / "b"), quantization="dynamic", source=source)
    with pytest.raises(ExportError, match="--calibration_file=.*no such file"):
        export_openvino(model_dir, str(tmp_path / "c"), quantization="int8",
                        calibration_file=str(tmp_path / "train.tsv"), source=source)
    (tmp_path / "empty").mkdir()    # a data directory without the task's train text
    with pytest.raises(ExportError, match="ALBERT_TF_DATA_DIR|--data_dir") as info:
        export_openvino(model_dir, str(tmp_path / "d"), quantization="int8",
                        data_dir=str(tmp_path / "empty"), source=source)
    assert "\n" not in str(info.value)
    with pytest.raises(ExportError, match=r"seq_lengths=1024"):
        export_openvino(model_dir, str(tmp_path / "e"), seq_length=1024, source=source)
    assert [p.name for p in tmp_path.iterdir()] == ["empty"]   # nothing (half-)written


def _export_cli(*args):
    return subprocess.run([sys.executable, "-m", "albert_tf.bin.export", "--format=openvino",
                           *args], capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env=dict(os.environ))


def _last_line(proc):
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return proc.stderr.strip().splitlines()[-1]


@pytest.mark.slow
def test_cli_exports_a_static_ir_and_refuses_what_makes_no_sense(model_dir, tmp_path):
    from albert_tf.runtime.openvino import OpenVinoClassifier
    out = str(tmp_path / "static")
    proc = _export_cli(f"--model_dir={model_dir}", f"--output={out}", "--seq_lengths=16",
                       "--batch_size=2")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "OpenVINO IR written to" in proc.stdout and "input_word_ids int32[2, 16]" in proc.stdout
    classifier = OpenVinoClassifier(out, threads=1)
    assert classifier.buckets == [(16, "seq_16")] and classifier.batch_size("seq_16") == 2
    assert [p["label"] in ("0", "1") for p in classifier.predict(["fine", "bad", "ok"])] == [
        True] * 3
    proc = _export_cli(f"--model_dir={model_dir}", f"--output={tmp_path / 'x'}",
                       "--with_tokenizer")
    line = _last_line(proc)
    assert proc.returncode == 2 and "OpenVINO exports take token ids" in line
    assert "FastSentencepieceTokenize" in line and "243 of 875" in line
    proc = _export_cli(f"--model_dir={tmp_path / 'missing'}", f"--output={tmp_path / 'y'}")
    assert proc.returncode == 1 and "--model_dir=" in _last_line(proc)
    proc = _export_cli(f"--model_dir={model_dir}", f"--output={tmp_path / 'z'}",
                       "--quantization=int8", f"--calibration_file={tmp_path / 'none.tsv'}")
    line = _last_line(proc)
    assert proc.returncode == 1 and "--calibration_file=" in line and "no such file" in line
    assert not os.path.exists(tmp_path / "x") and not os.path.exists(tmp_path / "z")
