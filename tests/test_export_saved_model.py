"""SavedModel export: TF Serving layout, signatures, parity, bad input, clients, atomicity."""

from __future__ import annotations

import base64
import os
import subprocess
import sys

import numpy as np
import pytest

from tests.repo_files import load_script

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _example(name: str):
    """``examples/serving/<name>.py`` (a client script, not part of the package)."""
    return load_script(os.path.join("examples", "serving", f"{name}.py"))


VOCAB = os.path.join(ROOT, "official_configs", "vocab", "imdb_pydocs_8k.model")
SEQ = 32
TEXTS = ["a gorgeous , witty film .", "Café ``naïve'' 1,000,000 TIMES",
         "x " * 400, "\u00a0 spaced\tout \n text "]     # (blank text is refused: #44)


def make_model_dir(path: str, head: str = "classification", vocab: bool = True):
    import albert_tf
    from albert_tf.checkpoints import TaskInfo
    config = albert_tf.load_config("albert_tiny").replace(vocab_size=8000)
    if head == "classification":
        model = albert_tf.build_classifier(config, 2)
        info = TaskInfo("sst2", "classification", ("negative", "positive"), SEQ)
    elif head == "span":
        model = albert_tf.build_span_extractor(config)
        info = TaskInfo("squad", "span", None, SEQ, text_pair=True)
    else:
        model = albert_tf.build_pretrainer(config)
        info = None
    albert_tf.save_model_dir(model, path, task_info=info, vocab_file=VOCAB if vocab else None)
    return model


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """The classifier's model directory and its export, built once per session and shared
    read-only with tests/test_fuzz_serving.py and tests/test_concurrency.py
    (`tests/serving_models.py`)."""
    from albert_tf.checkpoints import load_task_model
    from serving_models import served_head
    built = served_head(tmp_path_factory, "classification")
    import tensorflow_text  # noqa: F401
    from albert_tf.backend import tf
    return dict(built, model=load_task_model(built["model_dir"])[0],
                loaded=tf.saved_model.load(built["path"]))


def keras_probs(model, texts):
    from albert_tf.backend import tf
    from albert_tf.text.tokenizer import AlbertTokenizer
    tok = AlbertTokenizer(VOCAB)
    rows = [tok.pack(t, max_seq_length=SEQ) for t in texts]
    feats = {k: tf.constant([r[k] for r in rows]) for k in rows[0]}
    return tf.nn.softmax(model(feats)["logits"]).numpy(), rows


def test_tf_serving_layout_and_assets(exported):
    path = exported["path"]
    assert path == os.path.join(str(exported["root"]), "serving", "sst2", "1")
    assert sorted(os.listdir(os.path.join(path, "assets"))) == ["labels.txt", "vocab.model"]
    with open(os.path.join(path, "assets", "vocab.model"), "rb") as f, open(VOCAB, "rb") as g:
        assert f.read() == g.read()
    with open(os.path.join(path, "assets", "labels.txt")) as f:
        assert f.read().split() == ["negative", "positive"]
    # No temporary directory is left next to the version.
    assert os.listdir(os.path.dirname(path)) == ["1"]
    from albert_tf.export.saved_model import next_version
    assert next_version(os.path.dirname(path)) == 2


def test_signatures(exported):
    from albert_tf.backend import tf
    sigs = exported["loaded"].signatures
    assert sorted(sigs) == ["encode", "serving_default", "tokenize"]
    inputs = sigs["serving_default"].structured_input_signature[1]
    assert {k: (v.dtype, v.shape.as_list()) for k, v in inputs.items()} == {
        "text": (tf.string, [None])}
    outputs = sigs["serving_default"].structured_outputs
    assert {k: (v.dtype, v.shape.as_list()) for k, v in outputs.items()} == {
        "probabilities": (tf.float32, [None, 2]), "label": (tf.string, [None]),
        "label_id": (tf.int32, [None])}
    enc = sigs["encode"].structured_input_signature[1]
    assert sorted(enc) == ["input_mask", "input_type_ids", "input_word_ids"]
    assert all(v.dtype == tf.int32 and v.shape.as_list() == [None, None] for v in enc.values())
    assert sorted(sigs["encode"].structured_outputs) == ["pooled_output", "sequence_output"]


def test_only_the_signatures_functions_are_stored(exported):
    """No tf_keras per-layer traces (``*_layer_call_and_return_conditional_losses``, which
    only ``keras.models.load_model`` needs): tracing them was most of an export's time
    (`albert_tf.export.common.without_keras_traces`)."""
    from tensorflow.core.protobuf import saved_model_pb2
    proto = saved_model_pb2.SavedModel()
    with open(os.path.join(exported["path"], "saved_model.pb"), "rb") as f:
        proto.ParseFromString(f.read())
    names = [f.signature.name for f in proto.meta_graphs[0].graph_def.library.function]
    assert any("serving_default" in n or "signature_wrapper" in n for n in names), names
    assert not [n for n in names if "layer_call" in n]


def test_serving_matches_keras_and_python_tokenizer(exported):
    from albert_tf.backend import tf
    sigs = exported["loaded"].signatures
    expected, rows = keras_probs(exported["model"], TEXTS)
    out = sigs["serving_default"](text=tf.constant(TEXTS))
    np.testing.assert_allclose(out["probabilities"].numpy(), expected, atol=1e-5)
    labels = [["negative", "positive"][i] for i in expected.argmax(-1)]
    assert [x.decode() for x in out["label"].numpy()] == labels
    ids = sigs["tokenize"](text=tf.constant(TEXTS))
    for k in rows[0]:
        assert ids[k].numpy().tolist() == [r[k] for r in rows]
    enc = sigs["encode"](**{k: tf.constant([r[k] for r in rows]) for k in rows[0]})
    assert enc["sequence_output"].shape == (len(TEXTS), SEQ, 32)


def test_bad_input_is_answered(exported):
    from albert_tf.backend import tf
    fn = exported["loaded"].signatures["serving_default"]
    batches = [[("word " * 20000).encode()], [b"\xff\xfe\xc3( bad \x80"],
               [b"ok", ("long " * 3000).encode(), b"\xc3\x28"], []]   # blank: refused (#44)
    for batch in batches:
        out = fn(text=tf.constant(batch, dtype=tf.string))
        probs = out["probabilities"].numpy()
        assert probs.shape == (len(batch), 2) and np.all(np.isfinite(probs))
        np.testing.assert_allclose(probs.sum(-1), 1.0, atol=1e-5)


def test_missing_vocabulary_is_a_clear_error_before_writing(exported, tmp_path):
    from albert_tf.export import ExportError
    from albert_tf.export.saved_model import export_saved_model
    from session_builds import writable_copy
    bad = writable_copy(exported["model_dir"], str(tmp_path / "no_vocab"))
    os.remove(os.path.join(bad, "vocab.model"))
    with pytest.raises(ExportError, match="vocab.model"):
        export_saved_model(bad, str(tmp_path / "out"))
    assert not os.path.exists(tmp_path / "out")


@pytest.mark.slow
def test_failed_export_leaves_nothing(exported, tmp_path, monkeypatch):
    from albert_tf.backend import tf
    from albert_tf.export.saved_model import export_saved_model

    def boom(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(tf.saved_model, "save", boom)
    with pytest.raises(RuntimeError, match="disk full"):
        export_saved_model(exported["model_dir"], str(tmp_path / "serving"), name="m")
    assert not (tmp_path / "serving").exists()    # nor the parents it created


def test_rest_body_fits_the_signature(exported):
    """The REST body, parsed as TF Serving does (row format), runs the exported signature."""
    rest_client = _example("rest_client")
    from albert_tf.backend import tf
    fn = exported["loaded"].signatures["serving_default"]
    texts = ["a gorgeous film", b"\xff invalid", "flat"]
    body = rest_client.predict_body({"text": texts})
    assert body["signature_name"] == "serving_default"
    names = set(fn.structured_input_signature[1])
    assert all(set(instance) == names for instance in body["instances"])
    assert body["instances"][1]["text"] == {"b64": base64.b64encode(b"\xff invalid").decode()}

    def decode(v):
        return base64.b64decode(v["b64"]) if isinstance(v, dict) else v.encode()

    columns = {n: tf.constant([decode(i[n]) for i in body["instances"]]) for n in names}
    out = fn(**columns)
    assert out["probabilities"].shape == (3, 2)
    cols = rest_client.predict_body({"text": texts}, row_format=False)
    assert list(cols["inputs"]) == ["text"] and len(cols["inputs"]["text"]) == 3
    assert rest_client.predict_url("http://h:8501/", "sst2", 3) == \
        "http://h:8501/v1/models/sst2/versions/3:predict"


def test_grpc_request_fits_the_signature(exported):
    """PredictRequest tensors have the signature's names, dtypes and shapes; the response
    built from the signature's outputs decodes."""
    grpc_client = _example("grpc_client")
    from albert_tf.backend import tf
    from tensorflow_serving.apis import predict_pb2
    fn = exported["loaded"].signatures["serving_default"]
    request = grpc_client.make_request("sst2", {"text": ["good", b"\xff"]}, version=1)
    assert request.model_spec.name == "sst2" and request.model_spec.version.value == 1
    specs = fn.structured_input_signature[1]
    assert set(request.inputs) == set(specs)
    feeds = {}
    for name, proto in request.inputs.items():
        value = tf.make_ndarray(proto)
        assert tf.as_dtype(proto.dtype) == specs[name].dtype
        assert specs[name].shape.is_compatible_with(value.shape)
        feeds[name] = tf.constant(value)
    outputs = fn(**feeds)
    response = predict_pb2.PredictResponse()
    for name, value in outputs.items():
        response.outputs[name].CopyFrom(tf.make_tensor_proto(value.numpy()))
    decoded = grpc_client.decode_response(response)
    assert decoded["probabilities"].shape == (2, 2)
    assert decoded["label"].shape == (2,) and decoded["label_id"].dtype == np.int32


@pytest.mark.slow
def test_saved_model_cli_show_and_run(exported):
    env = dict(os.environ)
    show = subprocess.run([os.path.join(os.path.dirname(sys.executable), "saved_model_cli"),
                           "show", "--dir", exported["path"], "--tag_set", "serve",
                           "--signature_def", "serving_default"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert show.returncode == 0, show.stderr[-2000:]
    assert "inputs['text']" in show.stdout and "DT_STRING" in show.stdout
    run = subprocess.run([sys.executable, "-m", "albert_tf.bin.saved_model_cli", "run",
                          "--dir", exported["path"], "--tag_set", "serve",
                          "--signature_def", "serving_default",
                          "--input_exprs", 'text=["a gorgeous film", "flat"]'],
                         capture_output=True, text=True, env=env, timeout=300, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "Result for output key probabilities" in run.stdout


@pytest.mark.slow
def test_saved_model_cli_quiet_when_stdout_closes(exported):
    """``albert-tf-saved-model-cli show ... | head`` ends quietly with 141, as the other
    tools (issue #44, fresh pass): it said the SavedModel "cannot be read ([Errno 32] Broken
    pipe)", a truncated or damaged saved_model.pb."""
    process = subprocess.Popen([sys.executable, "-m", "albert_tf.bin.saved_model_cli",
                                "show", "--dir", exported["path"], "--all"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    process.stdout.close()                    # the reader went away before anything came
    err = process.stderr.read().decode()
    assert process.wait(timeout=300) == 141, err
    assert err == ""


@pytest.mark.slow
def test_span_and_pretrained_exports(tmp_path_factory):
    """The span and pretrained models' exports (shared with tests/test_fuzz_serving.py:
    `tests/serving_models.py`)."""
    import tensorflow_text  # noqa: F401
    from albert_tf.backend import tf
    from serving_models import served_head
    path = served_head(tmp_path_factory, "span")["path"]
    fn = tf.saved_model.load(path).signatures["serving_default"]
    assert sorted(fn.structured_input_signature[1]) == ["context", "question"]
    out = fn(question=tf.constant(["who wrote it ?", "who ?"]),     # \u200b: no context piece
             context=tf.constant(["the book was written by ann in 1990 .", "\u200b"]))
    start, end = out["start_index"].numpy(), out["end_index"].numpy()
    assert start[0] >= 6 and end[0] >= start[0] and end[0] - start[0] < 30
    assert start[1] == -1 and out["answer"].numpy()[1] == b""
    path = served_head(tmp_path_factory, "pretraining")["path"]
    loaded = tf.saved_model.load(path)
    assert sorted(loaded.signatures) == ["encode", "mlm", "serving_default", "tokenize"]
    ids = loaded.signatures["tokenize"](text=tf.constant(["a [MASK] film"]))
    mlm = loaded.signatures["mlm"](**ids)
    assert mlm["mlm_logits"].shape == (1, 128, 8000) and mlm["sop_logits"].shape == (1, 2)
