"""Issue #17: a classification export runs as it is in the mobile SDKs' own Python builds
(MediaPipe TextClassifier, TFLite Task Library BertNLClassifier, through `tests/mobile_sdks.py`)
and scores as our runner does, on real SST-2 dev sentences and on upper-cased, accented and
curly-quoted copies; the embedded metadata; the errors of what the SDKs cannot run."""

from __future__ import annotations

import csv
import json
import os

import numpy as np
import pytest

from tests.mobile_sdks import answers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOCAB = os.path.join(ROOT, "official_configs", "vocab", "imdb_pydocs_8k.model")
SEQ = 48
LABELS = ("negative", "positive")


def _variants(sentence: str) -> list[str]:
    accented = (sentence.replace("e", "\u00e9").replace("a", "\u00e0").replace("'", "\u2019")
                .replace("``", "\u201c").replace("''", "\u201d"))
    return [sentence, sentence.upper(), accented]


@pytest.fixture(scope="module")
def texts(data_dir) -> list[str]:
    with open(os.path.join(data_dir, "glue", "SST-2", "dev.tsv"), encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:25]
    extra = ["It's 1,000,000 times better, 2,5 stars -- NOT!", "\u201cNa\u00efve\u201d caf\u00e9"]
    return [v for row in rows for v in _variants(row[0])] + extra


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    import albert_tf
    from albert_tf.backend import keras
    from albert_tf.checkpoints import TaskInfo
    keras.utils.set_random_seed(3)
    path = str(tmp_path_factory.mktemp("sdk") / "sst2_model")
    config = albert_tf.load_config("albert_tiny").replace(vocab_size=8000)
    albert_tf.save_model_dir(albert_tf.build_classifier(config, 2), path,
                             task_info=TaskInfo("sst2", "classification", LABELS, SEQ),
                             vocab_file=VOCAB)
    return path


@pytest.fixture(scope="module")
def exports(model_dir, data_dir, tmp_path_factory) -> dict[str, str]:
    from albert_tf.export.tflite import export_tflite
    base = tmp_path_factory.mktemp("sdk_exports")
    return {q: os.path.join(export_tflite(model_dir, str(base / q), quantization=q,
                                          data_dir=data_dir, num_calibration=32),
                            "model.tflite")
            for q in ("none", "dynamic", "dynamic_per_tensor", "int8", "int8_per_tensor")}


def _ours(model: str, texts: list[str]) -> np.ndarray:
    from albert_tflite.runner import TFLiteRunner
    return np.array([p["probabilities"] for p in TFLiteRunner(model).predict(texts)])


def _sdk(model: str, sdk: str, texts: list[str]) -> np.ndarray:
    result = answers(model, "classify", sdk, texts)
    return np.array([[a["scores"][label] for label in LABELS] for a in result])


@pytest.mark.slow
def test_export_is_sdk_shaped_with_the_metadata_embedded(exports):
    from albert_tf.export.sdk_metadata import read_embedded
    model = exports["none"]
    with open(os.path.join(os.path.dirname(model), "metadata.json")) as f:
        meta = json.load(f)
    (signature,) = meta["signatures"].values()
    assert signature["outputs"] == {"probabilities": {"dtype": "float32", "shape": [1, 2]}}
    assert meta["sdk"]["runners"] == ["Task Library BertNLClassifier",
                                      "MediaPipe TextClassifier"]
    embedded = read_embedded(model)
    graph = embedded["subgraph_metadata"][0]
    assert sorted(t["name"] for t in graph["input_tensor_metadata"]) == [
        "ids", "mask", "segment_ids"]       # (in the model's input order)
    assert [t["name"] for t in graph["output_tensor_metadata"]] == ["probability"]
    (unit,) = graph["input_process_units"]
    assert unit["options_type"] == "SentencePieceTokenizerOptions"
    assert embedded["associated_files"] == ["labels.txt", "sentencepiece.model"]


@pytest.mark.slow
@pytest.mark.parametrize("quantization", ["none", "dynamic", "int8"])
def test_mediapipe_text_classifier_scores_as_our_runner(exports, texts, quantization):
    ours = _ours(exports[quantization], texts)
    theirs = _sdk(exports[quantization], "mediapipe", texts)
    np.testing.assert_allclose(theirs, ours, atol=1e-4)


@pytest.mark.slow
@pytest.mark.parametrize("quantization", ["none", "dynamic_per_tensor", "int8",
                                          "int8_per_tensor"])
def test_task_library_bert_nl_classifier_scores_as_our_runner(exports, texts, quantization):
    ours = _ours(exports[quantization], texts)
    theirs = _sdk(exports[quantization], "tflite_support", texts)
    np.testing.assert_allclose(theirs, ours, atol=1e-4)


@pytest.mark.slow
def test_task_library_runtime_lacks_the_per_channel_op_version(exports):
    """tflite-support 0.4.4's runtime predates FULLY_CONNECTED v12 (per-channel dynamic
    range): the ``dynamic_per_tensor`` recipe exists for it."""
    with pytest.raises(RuntimeError, match="FULLY_CONNECTED' version '12'"):
        answers(exports["dynamic"], "classify", "tflite_support", ["a film"])
    versions = {}
    for q in ("dynamic", "dynamic_per_tensor"):
        with open(os.path.join(os.path.dirname(exports[q]), "metadata.json")) as f:
            versions[q] = json.load(f)["ops"]["versions"]["FULLY_CONNECTED"]
    assert versions == {"dynamic": 12, "dynamic_per_tensor": 9}


def test_the_embedded_vocabulary_gives_our_ids_with_plain_sentencepiece(texts):
    import sentencepiece as spm

    from albert_tf.export.sdk_metadata import sdk_vocabulary
    from albert_tf.text.tokenizer import AlbertTokenizer
    py = AlbertTokenizer(VOCAB)
    plain = spm.SentencePieceProcessor(model_proto=sdk_vocabulary(VOCAB, True))
    assert all(plain.encode(t) == py.encode(t) for t in texts)
    assert py.encode("Hello WORLD") != spm.SentencePieceProcessor(model_file=VOCAB).encode(
        "Hello WORLD")      # the case the normalizer carries: the original vocabulary differs


@pytest.mark.slow
def test_what_the_sdks_cannot_run_is_a_clear_error(model_dir, tmp_path):
    import albert_tf
    from albert_tf.checkpoints import TaskInfo
    from albert_tf.export import ExportError, sdk_metadata
    from albert_tf.export.tflite import export_tflite
    from albert_tf.text.tokenizer import AlbertTokenizer
    regression = str(tmp_path / "stsb")
    config = albert_tf.load_config("albert_tiny").replace(vocab_size=8000)
    albert_tf.save_model_dir(albert_tf.build_regressor(config), regression,
                             task_info=TaskInfo("stsb", "regression", None, SEQ),
                             vocab_file=VOCAB)
    with pytest.raises(ExportError, match="no mobile SDK runs 'regression'.*classification "
                       r"\(.*span .*embedding") as error:
        export_tflite(regression, str(tmp_path / "a"), sdk_metadata="on")
    assert "\n" not in str(error.value)
    export_tflite(regression, str(tmp_path / "b"))           # auto: our runner's layout
    with open(tmp_path / "b" / "metadata.json") as f:
        assert json.load(f)["sdk"] is None
    with pytest.raises(ExportError, match=r"one \[1, seq\] signature"):
        export_tflite(model_dir, str(tmp_path / "c"), seq_lengths=[16, 32], sdk_metadata="on")
    # A vocabulary whose normalizer does not carry ALBERT's preprocessing is refused.
    py = AlbertTokenizer(VOCAB)
    with pytest.raises(ExportError, match="cannot carry ALBERT's preprocessing.*Hello World"):
        sdk_metadata.check_vocabulary(py.model_proto, py, VOCAB)
