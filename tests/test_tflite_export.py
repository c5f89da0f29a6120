"""TFLite export and the edge tools: buckets, quantization, op report, metadata, runner,
evaluator, benchmark, QAT hook, CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

from albert_tf.outputs import MARKER_FILE

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOCAB = os.path.join(ROOT, "official_configs", "vocab", "imdb_pydocs_8k.model")
SEQ = 32
TEXTS = ["a gorgeous , witty film .", "dull " * 3, "an overlong , " * 12 + "mess"]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    import albert_tf
    from albert_tf.checkpoints import TaskInfo
    path = str(tmp_path_factory.mktemp("tflite") / "sst2_model")
    config = albert_tf.load_config("albert_tiny").replace(vocab_size=8000)
    model = albert_tf.build_classifier(config, 2)
    albert_tf.save_model_dir(model, path, task_info=TaskInfo("sst2", "classification",
                                                             ("0", "1"), SEQ),
                             vocab_file=VOCAB)
    return path


@pytest.fixture(scope="module")
def source(model_dir):
    from albert_tf.export.common import load_source
    return load_source(model_dir)


def keras_probs(source, texts, seq=SEQ):
    from albert_tf.backend import tf
    from albert_tf.text.tokenizer import AlbertTokenizer
    tok = AlbertTokenizer(VOCAB)
    rows = [tok.pack(t, max_seq_length=seq) for t in texts]
    feats = {k: tf.constant([r[k] for r in rows]) for k in rows[0]}
    return tf.nn.softmax(source.model(feats)["logits"]).numpy()


@pytest.fixture(scope="module")
def float_export(model_dir, source, tmp_path_factory):
    from albert_tf.export.tflite import export_tflite
    out = str(tmp_path_factory.mktemp("edge") / "float")
    export_tflite(model_dir, out, seq_lengths=[16, SEQ], batch_size=2, source=source)
    return out


@pytest.mark.slow
def test_float_export_buckets_metadata_and_runner(float_export, source):
    from albert_tflite.runner import TFLiteRunner
    files = sorted(os.listdir(float_export))
    assert files == [MARKER_FILE, "labels.txt", "metadata.json", "model.tflite", "vocab.model"]
    with open(os.path.join(float_export, "metadata.json")) as f:
        meta = json.load(f)
    assert sorted(meta["signatures"]) == ["seq_16", "seq_32"]
    for key, seq in (("seq_16", 16), ("seq_32", 32)):
        sig = meta["signatures"][key]
        assert sig["seq_length"] == seq and sig["batch_size"] == 2
        assert sig["inputs"] == {n: {"dtype": "int32", "shape": [2, seq]} for n in
                                 ("input_mask", "input_type_ids", "input_word_ids")}
        assert sig["outputs"]["probabilities"] == {"dtype": "float32", "shape": [2, 2]}
    assert meta["labels"] == ["0", "1"] and meta["tokenizer"]["special_ids"]["cls"] == 2
    assert meta["custom_ops"] == [] and "SHAPE" not in meta["ops"]["by_type"]
    runner = TFLiteRunner(float_export)
    assert runner.bucket_for(10) == (16, "seq_16") and runner.bucket_for(99) == (32, "seq_32")
    preds = runner.predict(TEXTS)
    probs = np.array([p["probabilities"] for p in preds])
    # Rows that fit in 16 ids ran in the seq_16 bucket: padding does not change the result.
    np.testing.assert_allclose(probs, keras_probs(source, TEXTS), atol=1e-5)
    assert [p["label"] for p in preds] == [str(i) for i in probs.argmax(-1)]


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["xnnpack", "none"])
def test_int8_calibrated_on_task_text_and_op_report(model_dir, source, tmp_path, preset,
                                                    data_dir):
    from albert_tf.export.tflite import XNNPACK_FLOAT_OPS, export_tflite
    from albert_tflite.runner import TFLiteRunner
    out = str(tmp_path / preset)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        export_tflite(model_dir, out, quantization="int8", int8_float_ops=preset,
                      data_dir=data_dir, num_calibration=8, source=source)
    # QuantizationDebugger's tf.lite.Interpreter deprecation warning is ours, not the user's.
    assert not [w for w in caught if "tf.lite.Interpreter is deprecated" in str(w.message)]
    with open(os.path.join(out, "metadata.json")) as f:
        meta = json.load(f)
    assert meta["calibration_examples"] == 8 and meta["int8_float_ops"] == preset
    by_type = meta["ops"]["by_type"]
    assert set(by_type["FULLY_CONNECTED"]) == {"INT8"}
    if preset == "none":
        assert meta["integer_only"] is True
        assert set(meta["ops"]["float_ops"]) <= {"QUANTIZE", "DEQUANTIZE", "CAST"}
        assert set(by_type["SOFTMAX"]) == {"INT8"} and set(by_type["GELU"]) == {"INT8"}
    else:
        assert meta["integer_only"] is False
        assert set(meta["ops"]["float_ops"]) - {"QUANTIZE", "DEQUANTIZE", "CAST"} <= set(
            XNNPACK_FLOAT_OPS)
        assert set(by_type["SOFTMAX"]) == {"FLOAT32"}
    probs = np.array([p["probabilities"] for p in TFLiteRunner(out).predict(TEXTS)])
    assert np.max(np.abs(probs - keras_probs(source, TEXTS))) < 0.05


@pytest.mark.slow
def test_float16_and_dynamic_are_smaller(model_dir, source, float_export, tmp_path):
    from albert_tf.export.tflite import export_tflite
    from albert_tflite.runner import TFLiteRunner
    size = os.path.getsize(os.path.join(float_export, "model.tflite"))
    for q in ("float16", "dynamic"):
        out = str(tmp_path / q)
        # (no embedded SDK vocabulary: the sizes compare the weights)
        export_tflite(model_dir, out, quantization=q, source=source, sdk_metadata="off")
        assert os.path.getsize(os.path.join(out, "model.tflite")) < 0.75 * size
        probs = np.array([p["probabilities"] for p in TFLiteRunner(out).predict(TEXTS)])
        assert np.max(np.abs(probs - keras_probs(source, TEXTS))) < 0.02


def test_converter_tf_lite_today_litert_where_tf_lite_is_gone(monkeypatch):
    """docs/export.md, "The converter after tf.lite": tf.lite while TensorFlow ships it;
    without it, LiteRT's converter for float exports and a clear error for the rest."""
    from albert_tf.export import ExportError
    from albert_tf.export import tflite as lite
    monkeypatch.delenv(lite.CONVERTER_ENV, raising=False)
    assert lite.tf_lite_problem() is None        # the trigger: TF still has tf.lite
    assert lite.pick_converter(None, "int8") == "tf.lite"
    monkeypatch.setenv(lite.CONVERTER_ENV, "tflite")
    with pytest.raises(ExportError, match="ALBERT_TF_TFLITE_CONVERTER.*auto"):
        lite.pick_converter(None)
    monkeypatch.setenv(lite.CONVERTER_ENV, "litert")
    with pytest.raises(ExportError, match="int8: LiteRT's converter converts float models"):
        lite.pick_converter(None, "int8")
    with pytest.raises(ExportError, match="--with_tokenizer: the tokenizer's custom ops"):
        lite.pick_converter(None, "none", with_tokenizer=True)
    monkeypatch.setattr(lite, "tf_lite_problem", lambda: "no tf.lite here")
    with pytest.raises(ExportError, match="tf.lite converter: no tf.lite here"):
        lite.pick_converter("tf.lite")
    with pytest.raises(ExportError, match="no tf.lite here, and LiteRT's.*float models only"):
        lite.pick_converter("auto", "dynamic")
    monkeypatch.setattr(lite, "litert_problem", lambda q, t: None)
    assert lite.pick_converter("auto", "none") == "litert"


@pytest.mark.slow
def test_litert_converter_float_export_answers_as_tf_lite(model_dir, source, float_export,
                                                          tmp_path):
    """LiteRT's converter (litert-converter, installed by make) on the float export of
    `float_export`: the same signatures, inputs and outputs, the same probabilities, the
    weights shared by the buckets; op set differences are the known rewrites."""
    # make install puts litert-converter in .venv/litert-converter, outside site-packages
    # (its pins conflict with TensorFlow's stack; Makefile), so pip check stays clean.
    litert_dir = os.path.join(sys.prefix, "litert-converter")
    if os.path.isdir(litert_dir) and litert_dir not in sys.path:
        sys.path.append(litert_dir)
    pytest.importorskip("litert_converter.mlir._mlir_libs.converter_api_ext")
    from albert_tf.export.tflite import export_tflite
    from albert_tflite.runner import TFLiteRunner
    out = str(tmp_path / "litert")
    export_tflite(model_dir, out, seq_lengths=[16, SEQ], batch_size=2, source=source,
                  converter="litert")
    metas = []
    for path in (float_export, out):
        with open(os.path.join(path, "metadata.json")) as f:
            metas.append(json.load(f))
    ours, theirs = metas
    assert (ours["converter"], theirs["converter"]) == ("tf.lite", "litert")
    assert ours["signatures"] == theirs["signatures"]
    assert theirs["custom_ops"] == [] and "SHAPE" not in theirs["ops"]["by_type"]
    # tf.lite's GATHER, STRIDED_SLICE and SQUARED_DIFFERENCE come as GATHER_ND, SLICE and
    # SUB + MUL from XLA's StableHLO; every other op is the same.
    renamed = {"GATHER", "STRIDED_SLICE", "SQUARED_DIFFERENCE", "GATHER_ND", "SLICE"}
    assert (set(ours["ops"]["by_type"]) ^ set(theirs["ops"]["by_type"])) <= renamed
    for op in ("FULLY_CONNECTED", "BATCH_MATMUL", "GELU", "SOFTMAX", "MEAN", "RSQRT"):
        assert set(theirs["ops"]["by_type"][op]) == {"FLOAT32"}
    size = os.path.getsize(os.path.join(float_export, "model.tflite"))
    assert os.path.getsize(os.path.join(out, "model.tflite")) < 1.2 * size   # one copy
    probs = [np.array([p["probabilities"] for p in TFLiteRunner(d).predict(TEXTS)])
             for d in (float_export, out)]
    np.testing.assert_allclose(probs[1], probs[0], atol=1e-5)


@pytest.mark.slow
def test_qat_needs_a_model_and_converts_through_the_same_path(model_dir, source, tmp_path):
    from albert_tf.export import ExportError
    from albert_tf.export import tflite as export_tflite_module
    with pytest.raises(ExportError, match="quantization-aware"):
        export_tflite_module.export_tflite(model_dir, str(tmp_path / "qat"),
                                           quantization="qat", source=source)
    assert not os.path.exists(tmp_path / "qat")
    # A registered loader supplies the (here: stand-in) QAT Keras model.
    from albert_tf.export import quantization
    loader = quantization.register_qat_loader(
        lambda d: source.model if d == model_dir else None)
    try:
        out = export_tflite_module.export_tflite(model_dir, str(tmp_path / "qat"),
                                                 quantization="qat", source=source)
    finally:
        quantization.unregister_qat_loader(loader)
    with open(os.path.join(out, "metadata.json")) as f:
        assert json.load(f)["quantization"] == "qat"


def test_one_recipe_table_for_the_library_the_binary_and_the_pipeline(monkeypatch):
    """Issue #16: the quantization choices come from `albert_tf.export.quantization`."""
    from albert_tf.bin import export as export_bin
    from albert_tf.export import ExportError, quantization
    from albert_tf.export.tflite import QUANTIZATIONS
    from albert_tf.hyperparams import ConfigValueError
    from albert_tf.pipeline import pipeline_config
    names = quantization.names()
    assert names == QUANTIZATIONS == ("none", "float16", "dynamic", "dynamic_per_tensor", "int8",
                                      "int8_per_tensor", "int16x8", "qat")
    # int16x8 is refused (LiteRT cannot run it: `Recipe.refused`), so the pipeline lists
    # neither it nor qat.
    assert quantization.pipeline_names() == tuple(n for n in names if n not in ("int16x8",
                                                                                 "qat"))
    assert quantization.get("int16x8").refused and not quantization.get("int8").refused
    assert quantization.qat_names() == ("qat",)
    int8, qat = quantization.get("int8"), quantization.get("qat")
    assert int8.needs_calibration and int8.float_ops_denylist and int8.integer
    assert qat.needs_qat_model and qat.uses_calibration and not qat.needs_calibration
    assert not quantization.get("dynamic").uses_calibration
    with pytest.raises(ExportError, match="int4.*none"):
        quantization.get("int4")
    defined = {}

    class RecordingFlags:       # albert-tf-export's flags, defined into a dict
        def __getattr__(self, kind):
            return lambda name, default, *args, **kwargs: defined.setdefault(
                name, (kind, default, args))

    monkeypatch.setattr(export_bin, "flags", RecordingFlags())
    export_bin.define_flags()
    assert defined["quantization"][0] == "DEFINE_enum"
    assert tuple(defined["quantization"][2][0]) == names
    pipeline_config._check_quantizations("export.quantizations",
                                         list(quantization.pipeline_names()))
    with pytest.raises(ConfigValueError, match="exported as qat by itself"):
        pipeline_config._check_quantizations("export.quantizations", ["qat"])


@pytest.mark.slow
def test_bad_requests_are_clear_errors(model_dir, source, tmp_path):
    from albert_tf.export import ExportError
    from albert_tf.export.tflite import export_tflite
    with pytest.raises(ExportError, match="seq_lengths"):
        export_tflite(model_dir, str(tmp_path / "a"), seq_lengths=[1024], source=source)
    with pytest.raises(ExportError, match="quantization"):
        export_tflite(model_dir, str(tmp_path / "b"), quantization="int4", source=source)
    from albert_tf.outputs import OutputError, write_marker
    os.makedirs(tmp_path / "c")
    write_marker(str(tmp_path / "c"), "tflite export")    # an earlier export
    with pytest.raises(OutputError, match="already exists"):
        export_tflite(model_dir, str(tmp_path / "c"), source=source)


def test_evaluator_reads_a_labeled_test_split_and_rejects_an_unlabeled_one(data_dir, tmp_path):
    from albert_tflite import evaluate
    texts, _, labels, _, _ = evaluate.load_split("sst2", data_dir, "test")
    with open(os.path.join(data_dir, "glue", "SST-2", "test.tsv"), encoding="utf-8") as f:
        assert len(texts) == len(labels) == sum(1 for _ in f) - 1
    assert set(labels) == {"0", "1"}
    glue = tmp_path / "glue" / "SST-2"        # GLUE's public layout: test without labels
    glue.mkdir(parents=True)
    (glue / "train.tsv").write_text("sentence\tlabel\ngood .\t1\n")
    (glue / "dev.tsv").write_text("sentence\tlabel\nbad .\t0\n")
    (glue / "test.tsv").write_text("index\tsentence\n0\tfine .\n")
    from albert_tf.data.task_data import TaskDataError
    with pytest.raises(TaskDataError, match="test split of 'sst2'.*has no labels"):
        evaluate.load_split("sst2", str(tmp_path), "test")
    assert evaluate.load_split("sst2", str(tmp_path), "dev")[2] == ["0"]
    with pytest.raises(TaskDataError, match="--split='train'"):
        evaluate.load_split("sst2", str(tmp_path), "train")


@pytest.mark.slow
def test_evaluator_benchmark_and_metadata_tools(float_export, model_dir, data_dir, tmp_path):
    from albert_tflite import benchmark, evaluate, metadata
    from albert_tflite.runner import TFLiteRunner
    result = evaluate.evaluate(float_export, "sst2", data_dir, limit=20)
    assert result["examples"] == 20 and 0.0 <= result["accuracy"] <= 1.0
    rows = benchmark.benchmark(float_export, num_threads=1, runs=3, warmup=1)
    assert [(r["signature"], r["seq_length"], r["batch_size"]) for r in rows] == [
        ("seq_16", 16, 2), ("seq_32", 32, 2)]
    assert all(r["median_ms"] > 0 and r["sequences_per_s"] > 0 for r in rows)
    timed = benchmark.benchmark(float_export, num_threads=1, runs=3, warmup=1, min_seconds=0.2,
                                signatures=["seq_16"])
    # Timed until both limits are met: >= 3 runs and >= 200 ms of timed runs in all.
    assert len(timed) == 1 and timed[0]["runs"] >= 3 and timed[0]["total_ms"] >= 200
    assert [r["runs"] for r in rows] == [3, 3]
    # Metadata for a .tflite converted elsewhere, written next to it.
    other = tmp_path / "elsewhere"
    other.mkdir()
    with open(os.path.join(float_export, "model.tflite"), "rb") as f:
        (other / "custom.tflite").write_bytes(f.read())
    assert metadata.main(["--model", str(other / "custom.tflite"), "--model_dir", model_dir,
                          "--quantization", "none"]) == 0
    assert sorted(os.listdir(other)) == ["custom.tflite", "labels.txt", "metadata.json",
                                         "vocab.model"]
    assert TFLiteRunner(str(other / "custom.tflite")).predict(["fine"])[0]["label"] in ("0", "1")


@pytest.mark.slow
def test_metadata_tool_keeps_the_users_files_and_reads_the_file_itself(float_export, model_dir,
                                                                      tmp_path, capsys):
    """Issue #44 (fresh pass): albert-tflite-metadata replaced a metadata.json, labels.txt
    and vocab.model of the user's beside the .tflite (exit 0), recorded the model
    directory's max_seq_length whatever the file's signatures take, and any --quantization.
    Now: the user's files are refused (one line, nothing written) unless --overwrite; its
    own earlier files and an albert-tf export's are rewritten; the lengths are the file's;
    a model directory whose task has another number of labels is refused."""
    import re
    import shutil

    from albert_tflite import metadata

    def refused(args, words):           # exit 2 and one line on stderr
        capsys.readouterr()
        with pytest.raises(SystemExit) as exited:
            metadata.main(args)
        err = capsys.readouterr().err
        assert exited.value.code == 2 and err.count("\n") == 1, err
        assert re.search(words, err), err
    app = tmp_path / "userapp"
    app.mkdir()
    shutil.copy(os.path.join(float_export, "model.tflite"), app / "model.tflite")
    mine = {"metadata.json": '{"my": "app"}\n', "labels.txt": "mine\n", "vocab.model": "mine\n"}
    for name, text in mine.items():
        (app / name).write_text(text)
    refused([f"--model={app / 'model.tflite'}", f"--model_dir={model_dir}"],
            r"already holds metadata.json, vocab.model, labels.txt, which albert-tf did not "
            "write; nothing was written")
    assert {n: (app / n).read_text() for n in mine} == mine
    # The model directory's task says 128; the file takes 16 and 32 ids.
    described = tmp_path / "described"
    shutil.copytree(model_dir, described)
    with open(described / "task.json", encoding="utf-8") as f:
        task = json.load(f)
    with open(described / "task.json", "w", encoding="utf-8") as f:
        json.dump(dict(task, max_seq_length=128), f)
    args = [f"--model={app / 'model.tflite'}", f"--model_dir={described}", "--overwrite"]
    assert metadata.main(args) == 0
    meta = json.loads((app / "metadata.json").read_text())
    assert meta["max_seq_length"] == 32 and meta["quantization"] == "unknown"
    assert (app / "labels.txt").read_text() == "0\n1\n"
    assert metadata.main(args[:2] + ["--quantization=none"]) == 0   # its own: rewritten
    assert json.loads((app / "metadata.json").read_text())["quantization"] == "none"
    refused(args[:2] + ["--quantization=banana"], "invalid choice: 'banana'")
    with open(described / "task.json", "w", encoding="utf-8") as f:
        json.dump(dict(task, label_list=["a", "b", "c"]), f)
    refused(args[:2], r"signature seq_16's probabilities has 2 scores per example but "
            r"--model_dir=.* \(task 'sst2'\) has 3 labels")
    export = tmp_path / "export"                    # an albert-tf export: its own files
    shutil.copytree(float_export, export)
    assert metadata.main([f"--model={export / 'model.tflite'}", f"--model_dir={model_dir}",
                          "--quantization=none"]) == 0


@pytest.mark.slow
def test_export_and_runner_cli(model_dir, tmp_path):
    env = dict(os.environ)
    out = str(tmp_path / "cli")
    proc = subprocess.run([sys.executable, "-m", "albert_tf.bin.export", f"--model_dir={model_dir}",
                           "--format=tflite", f"--output={out}", "--quantization=dynamic",
                           "--seq_lengths=16"], capture_output=True, text=True, env=env,
                          timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "signature serving_default" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "albert_tflite.runner", f"--model={out}",
                           "--text=a gorgeous film", "--text=dull"], capture_output=True,
                          text=True, env=env, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [json.loads(x) for x in proc.stdout.splitlines()]
    assert [x["text"] for x in lines] == ["a gorgeous film", "dull"]
    assert all(x["label"] in ("0", "1") for x in lines)
    # Bad input: one line naming the problem (no export there; a second text for a
    # one-text model; an empty text, which answered a label before), exit 2, no stdout.
    for args, expected in ([f"--model={tmp_path / 'nope'}", "--text=x"], "no such file"), \
            ([f"--model={out}", "--text=x", "--text_b=y"], "one text"), \
            ([f"--model={out}", "--text=x", "--text="], "--text is empty"):
        proc = subprocess.run([sys.executable, "-m", "albert_tflite.runner", *args],
                              capture_output=True, text=True, env=env, timeout=300, cwd=ROOT)
        assert proc.returncode == 2 and not proc.stdout, proc.stderr[-3000:]
        assert "Traceback" not in proc.stderr and expected in proc.stderr.strip().splitlines()[-1]
    (tmp_path / "no_vocab").mkdir()
    bad = subprocess.run([sys.executable, "-m", "albert_tf.bin.export",
                          f"--model_dir={tmp_path / 'no_vocab'}", "--format=tflite",
                          f"--output={tmp_path / 'x'}"], capture_output=True, text=True,
                         env=env, timeout=300, cwd=ROOT)
    assert bad.returncode == 1 and "no config.json" in bad.stderr
