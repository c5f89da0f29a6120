"""Numerical parity with keras-hub's AlbertBackbone (Keras 3) on random weights.

keras-hub is imported only here and inside `albert_tf.interop.keras_hub`. The backbone
has two hidden groups of two inner layers; its weights go through a saved preset and
``albert-tf-convert --from=keras_hub``, and the attention mask has padding.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import albert_tf
from albert_tf.bin.convert import run_conversion
from albert_tf.interop import ConversionError, convert_keras_hub

TOL = 1e-5


@pytest.fixture(scope="module")
def backbone():
    keras_hub = pytest.importorskip("keras_hub")
    model = keras_hub.models.AlbertBackbone(
        vocabulary_size=70, num_layers=4, num_heads=4, embedding_dim=16, hidden_dim=32,
        intermediate_dim=64, num_groups=2, num_inner_repetitions=2, max_sequence_length=24)
    rng = np.random.RandomState(0)
    for w in model.weights:
        if w.path.endswith("gamma"):
            value = 1.0 + 0.2 * rng.standard_normal(w.shape)
        elif w.path.endswith(("beta", "bias")):
            value = 0.1 * rng.standard_normal(w.shape)
        else:
            value = 0.2 * rng.standard_normal(w.shape)
        w.assign(value.astype("float32"))
    return model


def _inputs():
    rng = np.random.RandomState(1)
    ids = rng.randint(0, 70, size=(3, 11)).astype(np.int32)
    mask = np.ones_like(ids)
    mask[1, 6:] = 0
    mask[2, 9:] = 0
    types = np.zeros_like(ids)
    types[:, 5:] = 1
    return ids, mask, types


def _diffs(backbone, encoder) -> dict[str, float]:
    ids, mask, types = _inputs()
    theirs = backbone({"token_ids": ids, "segment_ids": types, "padding_mask": mask})
    ours = encoder({"input_word_ids": ids, "input_mask": mask, "input_type_ids": types})
    return {k: float(np.abs(ours[k].numpy() - np.asarray(theirs[k])).max())
            for k in ("sequence_output", "pooled_output")}


@pytest.mark.slow
def test_keras_hub_preset_to_ours_parity(backbone, tmp_path, capsys):
    backbone.save_to_preset(str(tmp_path / "preset"))
    out = tmp_path / "ours"
    assert run_conversion("keras_hub", "albert_tf", str(tmp_path / "preset"), str(out)) == 0
    printed = capsys.readouterr().out
    assert "summary: 73 mapped, 0 skipped, 0 unknown, 7 missing" in printed
    assert ("mapped   group_1_inner_layer_1/self_attention_layer/query/kernel [32, 4, 8] -> "
            "group_1_inner_1_attention/query/kernel (reshape)") in printed
    assert "missing  sop/kernel: not in the source; freshly initialized" in printed
    diffs = _diffs(backbone, albert_tf.load_encoder(str(out)))
    print("keras-hub AlbertBackbone (G=2, K=2) vs ours, max abs diff:", diffs)
    assert max(diffs.values()) <= TOL, diffs
    # The pretrainer loads too (heads freshly initialized) with the same encoder outputs.
    pretrainer = albert_tf.load_pretrainer(str(out))
    assert max(_diffs(backbone, pretrainer).values()) <= TOL


@pytest.mark.slow
def test_keras_hub_objects_and_masked_lm(backbone, tmp_path):
    import keras_hub
    masked_lm = keras_hub.models.AlbertMaskedLM(backbone=backbone, preprocessor=None)
    report = convert_keras_hub(masked_lm, str(tmp_path / "from_task"))
    skipped = dict(report.skipped)
    assert any(k.startswith("mlm_head/") and "epsilon" in v for k, v in skipped.items())
    diffs = _diffs(backbone, albert_tf.load_encoder(str(tmp_path / "from_task")))
    assert max(diffs.values()) <= TOL, diffs


def test_keras_hub_bad_presets(tmp_path):
    wrong = tmp_path / "wrong"
    wrong.mkdir()
    (wrong / "config.json").write_text(json.dumps({"model_type": "albert", "hidden_size": 8}))
    with pytest.raises(ConversionError, match=r"is a Hugging Face directory, not a keras-hub "
                                              r"preset.*pass --from=hf"):
        convert_keras_hub(str(wrong), str(tmp_path / "out"))
    no_weights = tmp_path / "no_weights"
    no_weights.mkdir()
    (no_weights / "config.json").write_text(json.dumps({"class_name": "AlbertBackbone",
                                                        "config": {}}))
    with pytest.raises(ConversionError, match=r"no_weights: no weights file"):
        convert_keras_hub(str(no_weights), str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()
