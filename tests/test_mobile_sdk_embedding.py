"""Issue #17: the ``--head=embedding`` export runs as it is in MediaPipe ``TextEmbedder``
(through `tests/mobile_sdks.py`) and embeds as our runner does, on real SST-2 dev sentences
and on upper-cased, accented and curly-quoted copies; an unknown export head is a one-line
error. The similarity figures on a real model: ``studies/mobile_sdks/embedding.py``."""

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
HIDDEN = 32            # albert_tiny


def _variants(sentence: str) -> list[str]:
    """``sentence``, upper-cased, accented, and with curly quotes."""
    accented = sentence.replace("e", "\u00e9").replace("a", "\u00e0")
    curly = (sentence.replace("'", "\u2019").replace("``", "\u201c").replace("''", "\u201d"))
    return [sentence, sentence.upper(), accented, curly]


@pytest.fixture(scope="module")
def texts(data_dir) -> list[str]:
    with open(os.path.join(data_dir, "glue", "SST-2", "dev.tsv"), encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:13]
    extra = ["It's 1,000,000 times better -- NOT!", "\u201cNa\u00efve\u201d caf\u00e9",
             "an overlong , " * 20 + "mess"]           # the last is cut to SEQ ids
    return [v for row in rows for v in _variants(row[0])] + extra


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> str:
    import albert_tf
    from albert_tf.backend import keras
    from albert_tf.checkpoints import TaskInfo
    keras.utils.set_random_seed(5)
    path = str(tmp_path_factory.mktemp("sdk_embed") / "sst2_model")
    config = albert_tf.load_config("albert_tiny").replace(vocab_size=8000)
    albert_tf.save_model_dir(albert_tf.build_classifier(config, 2), path,
                             task_info=TaskInfo("sst2", "classification", ("0", "1"), SEQ),
                             vocab_file=VOCAB)
    return path


@pytest.fixture(scope="module")
def exports(model_dir, tmp_path_factory) -> dict[str, str]:
    """Quantization -> the ``.tflite`` of the embedding export (float, dynamic range)."""
    from albert_tf.export.tflite import export_tflite
    base = tmp_path_factory.mktemp("sdk_embed_exports")
    return {q: os.path.join(export_tflite(model_dir, str(base / q), quantization=q,
                                          head="embedding"), "model.tflite")
            for q in ("none", "dynamic")}


def _ours(model: str, texts: list[str]) -> np.ndarray:
    """Our runner's embeddings ``[N, H]``."""
    from albert_tflite.runner import TFLiteRunner
    return np.array([p["embedding"] for p in TFLiteRunner(model).predict(texts)])


def _textembedder(model: str, texts: list[str]) -> np.ndarray:
    """MediaPipe TextEmbedder's embeddings ``[N, H]``."""
    return np.array([a["embedding"] for a in answers(model, "embed", "mediapipe", texts)])


def _cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine of ``[N, H]`` arrays: ``[N]``."""
    return (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)


@pytest.mark.slow
def test_embedding_export_is_sdk_shaped_with_the_metadata_embedded(exports):
    from albert_tf.export.sdk_metadata import read_embedded
    model = exports["none"]
    with open(os.path.join(os.path.dirname(model), "metadata.json")) as f:
        meta = json.load(f)
    (signature,) = meta["signatures"].values()
    assert signature["outputs"] == {"embedding": {"dtype": "float32", "shape": [1, HIDDEN]}}
    assert meta["head"] == "embedding" and meta["labels"] is None
    assert meta["sdk"]["runners"] == ["MediaPipe TextEmbedder"]
    embedded = read_embedded(model)
    graph = embedded["subgraph_metadata"][0]
    assert sorted(t["name"] for t in graph["input_tensor_metadata"]) == [
        "ids", "mask", "segment_ids"]
    assert [t["name"] for t in graph["output_tensor_metadata"]] == ["embedding"]
    (unit,) = graph["input_process_units"]
    assert unit["options_type"] == "SentencePieceTokenizerOptions"
    assert embedded["associated_files"] == ["sentencepiece.model"]


@pytest.mark.slow
@pytest.mark.parametrize("quantization", ["none", "dynamic"])
def test_mediapipe_text_embedder_embeds_as_our_runner(exports, texts, quantization):
    ours = _ours(exports[quantization], texts)
    theirs = _textembedder(exports[quantization], texts)
    assert theirs.shape == ours.shape == (len(texts), HIDDEN)
    cosine = _cosine(theirs, ours)
    assert cosine.min() >= 0.999, [texts[i] for i in np.flatnonzero(cosine < 0.999)]
    np.testing.assert_allclose(np.linalg.norm(theirs, axis=-1), 1.0, atol=1e-4)
    # The embedded vocabulary lower-cases and strips accents as ALBERT does: the SDK gives
    # an upper-cased or accented sentence the vector of the original.
    rows = theirs[:48].reshape(12, 4, HIDDEN)          # (original, upper, accented, curly)
    assert _cosine(rows[:, 1], rows[:, 0]).min() > 0.9999
    assert _cosine(rows[:, 2], rows[:, 0]).min() > 0.9999


def test_an_unknown_export_head_is_a_one_line_error_naming_the_export_heads(model_dir,
                                                                            tmp_path):
    from albert_tf.export import ExportError
    from albert_tf.export.tflite import export_tflite
    out = tmp_path / "nonsense"
    with pytest.raises(ExportError, match=r"--head=nonsense.*\['embedding'\]") as error:
        export_tflite(model_dir, str(out), head="nonsense")
    assert "\n" not in str(error.value)
    assert not out.exists()
