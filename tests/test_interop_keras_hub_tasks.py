"""keras-hub presets that behave like ours (issue #29): a finetuned classifier exported with
``albert-tf-convert --to=keras_hub`` is a keras-hub task preset.

The model is `tests/sst2_tiny.py`'s tiny ALBERT finetuned on real SST-2 train text, so its
labels on SST-2 dev are learned, not noise. As a keras-hub user would:
``keras_hub.models.TextClassifier.from_preset(preset)`` predicts our labels on raw dev
sentences (its own preprocessor: our ids, our packing at the finetune length), ``.fit`` on
raw strings runs, and ``--from=keras_hub`` gives our classifier back with its head. Heads
keras-hub has no task for say so in one line. keras-hub is imported only here and in the
interop module.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import albert_tf
import sst2_tiny
from albert_tf.backend import tf
from albert_tf.bin.convert import run_conversion
from albert_tf.checkpoints import TaskInfo, build_task_model, load_task_model
from albert_tf.interop import ConversionError, convert_keras_hub
from sst2_tiny import SEQ, VOCAB, pack, tiny_config

keras_hub = pytest.importorskip("keras_hub")

dev, model_dir = sst2_tiny.dev, sst2_tiny.model_dir
AGREEMENT = 0.999          # labels of keras-hub's predict equal to ours (the bar)
LOGITS_TOL = 1e-5


def export(source: str, out, capsys) -> str:
    """``albert-tf-convert --to=keras_hub``; its printed report."""
    capsys.readouterr()
    status = run_conversion(None, "keras_hub", source, str(out))
    printed = capsys.readouterr()
    assert status == 0, printed.err
    return printed.out


def our_logits(directory: str, sentences) -> np.ndarray:
    """``[N, C]`` logits of a model directory's classifier on ``sentences`` at `SEQ`."""
    model, _ = load_task_model(directory)
    return model({k: tf.constant(v) for k, v in pack(sentences, SEQ).items()})["logits"].numpy()


@pytest.fixture(scope="module")
def preset(model_dir, tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("kh") / "sst2"
    assert run_conversion(None, "keras_hub", model_dir, str(out)) == 0
    return str(out)


@pytest.mark.slow
def test_task_preset_predicts_our_labels_on_sst2_dev(preset, model_dir, dev, data_dir):
    from albert_tf.benchmark.end_to_end import load_sst2_dev, sst2_dev_file
    classifier = keras_hub.models.TextClassifier.from_preset(preset)
    assert type(classifier).__name__ == "AlbertTextClassifier"
    assert classifier.preprocessor.sequence_length == SEQ          # task.json max_seq_length
    theirs = np.asarray(classifier.predict(dev, batch_size=128, verbose=0))
    ours = our_logits(model_dir, dev)
    same = int(np.sum(theirs.argmax(-1) == ours.argmax(-1)))
    gold = np.array([int(label) for label in load_sst2_dev(sst2_dev_file(data_dir))[1]])
    accuracy = float(np.mean(ours.argmax(-1) == gold))
    print(f"keras-hub {keras_hub.__version__} TextClassifier.from_preset on raw SST-2 dev: "
          f"labels equal ours on {same}/{len(dev)}, max abs logit difference "
          f"{np.abs(theirs - ours).max():.2e}; our accuracy {accuracy:.3f}")
    assert 0 < ours.argmax(-1).sum() < len(dev) and accuracy > 0.6     # learned labels
    assert same >= AGREEMENT * len(dev)
    assert np.abs(theirs - ours).max() <= 1e-4


@pytest.mark.slow
def test_fit_on_raw_strings(preset, dev, tmp_path):
    """The issue's crash (a sequence length over the model's positions) is gone: ``fit``
    on raw strings trains; the trained preset converts back to the classifier keras-hub
    has (no albert_tf/ extras: labels 0..C-1, the preprocessor's length)."""
    classifier = keras_hub.models.TextClassifier.from_preset(preset)
    before = np.asarray(classifier.output_dense.kernel.numpy()).copy()
    history = classifier.fit(dev[:8], np.array([0, 1] * 4), batch_size=4, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][-1])
    assert not np.array_equal(before, np.asarray(classifier.output_dense.kernel.numpy()))
    classifier.save_to_preset(str(tmp_path / "trained"))
    assert run_conversion("keras_hub", "albert_tf", str(tmp_path / "trained"),
                          str(tmp_path / "ours")) == 0
    info = json.loads((tmp_path / "ours" / "task.json").read_text())
    assert (info["head"], info["label_list"], info["max_seq_length"]) == (
        "classification", ["0", "1"], SEQ)
    theirs = np.asarray(classifier.predict(dev[:64], batch_size=64, verbose=0))
    assert np.abs(our_logits(str(tmp_path / "ours"), dev[:64]) - theirs).max() <= LOGITS_TOL


@pytest.mark.slow
def test_round_trip_keeps_the_head(preset, model_dir, dev, tmp_path, capsys):
    capsys.readouterr()
    assert run_conversion("keras_hub", "albert_tf", preset, str(tmp_path / "back")) == 0
    out = capsys.readouterr().out
    assert "mapped   logits/kernel [32, 2] -> classifier/kernel" in out, out
    assert "written as an albert-tf classification model" in out
    back = str(tmp_path / "back")
    assert json.loads((tmp_path / "back" / "task.json").read_text()) == \
        json.loads(open(os.path.join(model_dir, "task.json"), encoding="utf-8").read())
    with open(os.path.join(model_dir, "vocab.model"), "rb") as a, \
            open(os.path.join(back, "vocab.model"), "rb") as b:
        assert a.read() == b.read()                   # the vocabulary as it was
    diff = np.abs(our_logits(back, dev) - our_logits(model_dir, dev)).max()
    print(f"ours -> keras-hub -> ours on SST-2 dev: max abs logit difference {diff:.2e}")
    assert diff <= LOGITS_TOL


@pytest.mark.slow
@pytest.mark.parametrize("head", ["regression", "span"])
def test_head_without_keras_hub_task_is_one_line(head, tmp_path, capsys):
    info = TaskInfo("stsb" if head == "regression" else "squad", head, max_seq_length=SEQ)
    model = build_task_model(tiny_config(), info)
    directory = albert_tf.save_model_dir(model, str(tmp_path / head), task_info=info,
                                         vocab_file=VOCAB)
    out = export(directory, tmp_path / "kh", capsys)
    lines = [line for line in out.splitlines() if "has no task" in line]
    assert lines == [f"note     task.json head {head!r}: keras-hub {keras_hub.__version__} has "
                     "no task that computes it; the preset holds the backbone and "
                     "preprocessor only"]
    assert not (tmp_path / "kh" / "task.json").exists()
    preprocessor = keras_hub.models.AlbertTextClassifierPreprocessor.from_preset(
        str(tmp_path / "kh"))
    assert preprocessor.sequence_length == SEQ


@pytest.mark.parametrize("kwargs, message", [
    (dict(num_classes=3, activation="softmax"), "activation='softmax' on the logits"),
    (dict(num_classes=1), "num_classes=1; albert-tf's classification head needs at least 2"),
])
def test_keras_hub_heads_ours_cannot_compute(kwargs, message, tmp_path):
    backbone = keras_hub.models.AlbertBackbone(
        vocabulary_size=70, num_layers=2, num_heads=2, embedding_dim=8, hidden_dim=16,
        intermediate_dim=32, max_sequence_length=24)
    task = keras_hub.models.AlbertTextClassifier(backbone=backbone, preprocessor=None, **kwargs)
    with pytest.raises(ConversionError, match=message) as caught:
        convert_keras_hub(task, str(tmp_path / "out"))
    assert "\n" not in str(caught.value)
    assert not (tmp_path / "out").exists()
