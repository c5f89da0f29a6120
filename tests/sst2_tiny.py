"""A tiny ALBERT SST-2 classifier finetuned on real train text, for the server-export tests
(OpenVINO, ONNX): real learned weights in a few seconds, evaluated on the real dev set.
A test module imports the fixtures `dev`, `model_dir` and `source` from here; the
classifier is trained once per test session (`tests/session_builds.py`).

The classifier is finetuned on 4,000 SST-2 *train* sentences (two epochs, ~6 s, ~72% dev
accuracy). A random encoder with a scaled head does not fit these tests: its labels hinge on
float noise (measured: OpenVINO's default bf16 flipped 352 of 872, NNCF int8 agreed on 70%).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOCAB = os.path.join(ROOT, "official_configs", "vocab", "imdb_pydocs_8k.model")
SEQ = 32   # the classifier's max_seq_length


@pytest.fixture(scope="module")
def dev(data_dir):
    """SST-2 dev sentences (872)."""
    return dev_sentences(data_dir)


@pytest.fixture(scope="module")
def model_dir(data_dir, tmp_path_factory):
    """The tiny classifier's model directory: trained once per test session and shared by
    every module that uses it (`tests/session_builds.py`), so read-only; a test that
    changes it works on a `session_builds.writable_copy`."""
    from session_builds import build_once
    return build_once(tmp_path_factory, "sst2_tiny", "sst2_tiny",
                      lambda path: train_classifier(data_dir, path))


@pytest.fixture(scope="module")
def source(model_dir):
    """Its `ExportSource`."""
    from albert_tf.export.common import load_source
    return load_source(model_dir)


def tiny_config(**changes):
    import albert_tf
    return albert_tf.load_config("albert_tiny").replace(vocab_size=8000, **changes)


def pack(sentences, seq=SEQ) -> dict[str, np.ndarray]:
    """int32 ``[len(sentences), seq]`` ids, mask and type ids of single sentences."""
    from albert_tf.text.tokenizer import AlbertTokenizer
    tok = AlbertTokenizer(VOCAB)
    rows = [tok.pack(s, max_seq_length=seq) for s in sentences]
    return {k: np.array([r[k] for r in rows], np.int32) for k in rows[0]}


def dev_sentences(data_dir: str) -> list[str]:
    from albert_tf.benchmark.end_to_end import load_sst2_dev, sst2_dev_file
    sentences, _ = load_sst2_dev(sst2_dev_file(data_dir))
    return sentences


def train_classifier(data_dir: str, path: str, labels=("0", "1")) -> str:
    """Finetunes the tiny classifier and saves it as the model directory ``path``, its
    ``task.json`` naming the classes ``labels`` (SST-2's 0 and 1, in that order)."""
    import albert_tf
    from albert_tf.backend import keras
    from albert_tf.checkpoints import TaskInfo
    from albert_tf.data.task_data import read_examples
    train = read_examples(os.path.join(data_dir, "glue", "SST-2", "train.tsv"), ["sentence"],
                          "label", has_header=True, label_list=("0", "1"))[:4000]
    keras.utils.set_random_seed(0)
    model = albert_tf.build_classifier(tiny_config(), 2)
    model.compile(optimizer=keras.optimizers.Adam(2e-3), loss={
        "logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True)})
    model.fit(pack([e.text_a for e in train]),
              {"logits": np.array([int(e.label) for e in train])}, batch_size=64, epochs=2,
              verbose=0)
    albert_tf.save_model_dir(model, path, task_info=TaskInfo("sst2", "classification",
                                                             tuple(labels), SEQ),
                             vocab_file=VOCAB)
    return path


def keras_probabilities(source, sentences, seq):
    """(packed ids, the Keras model's softmax probabilities) of ``sentences`` at ``seq``."""
    from albert_tf.backend import tf
    feats = pack(sentences, seq)
    probs = tf.nn.softmax(source.model({k: tf.constant(v) for k, v in feats.items()})["logits"])
    return feats, probs.numpy()


def encoder_dir(path: str, sharing: str, layers: int = 6, **changes) -> int:
    """A random tiny encoder (H=64, ``layers`` layers, ``sharing``, config ``changes``) saved
    at ``path``; returns its parameter count."""
    import albert_tf
    from albert_tf.backend import keras
    keras.utils.set_random_seed(0)
    config = tiny_config(hidden_size=64, intermediate_size=256, num_hidden_layers=layers,
                         sharing=sharing, **changes)
    model = albert_tf.build_encoder(config)
    albert_tf.save_model_dir(model, path, vocab_file=VOCAB)
    return model.count_params()
