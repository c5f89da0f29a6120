"""Structured pruning on TF-MOT's polynomial-decay schedule: the masks follow the schedule,
never revive a unit, compute exactly what the smaller model computes, and the stage ends
with an ordinary smaller model directory."""

import json
import os

import numpy as np
import pytest

from albert_tf.backend import keras, tf
from albert_tf.checkpoints import load_task_model
from albert_tf.compression import structured
from albert_tf.compression.compression_config import (CompressionConfigError, StructuredConfig,
                                                     build_compression_config,
                                                     set_train_steps)
from albert_tf.compression.structured_schedule import (ScheduledUnitMasks, choose_kept,
                                                       update_steps)
from albert_tf.models import build_classifier
from tests.compression_fixtures import (random_features, tiny_config, tiny_model_dir,
                                        tiny_sst2_dir)


def scheduled(**changes) -> StructuredConfig:
    values = dict(schedule="polynomial_decay", head_fraction=0.5, ffn_fraction=0.75,
                  begin_step=2, end_step=14, frequency=4, power=3.0, train_steps=20,
                  importance_batches=1)
    values.update(changes)
    return StructuredConfig(**values)


def test_update_steps_are_tf_mot_polynomial_decay():
    cfg = scheduled()
    steps = update_steps(cfg)
    assert sorted(steps) == [2, 6, 10, 14]
    for step, (heads, neurons) in steps.items():
        progress = (step - cfg.begin_step) / (cfg.end_step - cfg.begin_step)
        expected = 1 - (1 - progress) ** cfg.power          # PolynomialDecay from 0
        assert heads == pytest.approx(cfg.head_fraction * expected, abs=1e-6)
        assert neurons == pytest.approx(cfg.ffn_fraction * expected, abs=1e-6)
    assert steps[14] == pytest.approx((0.5, 0.75))


def test_choose_kept_keeps_removed_units_removed_and_drops_the_least_important():
    keep = np.array([True, False, True, True, True])
    importance = np.array([5.0, 100.0, 1.0, 3.0, 4.0])    # unit 1 is masked: its score is moot
    new = choose_kept(keep, importance, 3)
    assert new.tolist() == [True, False, False, False, True]
    assert choose_kept(new, importance, 1).tolist() == new.tolist()   # never revives


@pytest.mark.parametrize("sharing", ["all", "none"])
def test_masked_model_computes_what_the_smaller_model_computes(sharing):
    keras.utils.set_random_seed(0)
    config = tiny_config(sharing=sharing, num_hidden_layers=2)
    model = build_classifier(config, 2)
    x = random_features(config, pad_from=11)
    y = np.arange(8) % 2
    batches = iter(tf.data.Dataset.from_tensor_slices((x, y)).batch(4).repeat())
    masks = ScheduledUnitMasks(model, scheduled(head_fraction=0.5, ffn_fraction=0.5), batches)
    masks.update(0.5, 0.5)
    blocks = len(masks.heads)
    assert masks.curve[-1]["heads_removed"] == [2] * blocks
    assert masks.curve[-1]["neurons_removed"] == [32] * len(masks.neurons)
    smaller = structured.apply_plan(model, masks.plan(), lambda c: build_classifier(c, 2))
    assert smaller.albert_config.num_attention_heads == 2
    assert smaller.albert_config.intermediate_size == 32
    np.testing.assert_allclose(smaller(x)["logits"], model(x)["logits"], atol=1e-5)

    # An optimizer step moves the masked rows; the callback zeroes them again.
    block = masks.attention[0]
    before = block.output_dense.kernel.numpy()
    block.output_dense.kernel.assign(before + 0.1)
    masks.on_train_batch_end(0)
    rows = np.repeat(masks.heads[block.name], block.head_size)
    assert not block.output_dense.kernel.numpy()[~rows].any()


@pytest.mark.parametrize("importance", ["gradient", "movement", "magnitude"])
def test_every_importance_masks_on_the_schedule(importance):
    """Each importance drives the masks; movement adds every update's signed estimate to
    the scores of the updates before (Sanh et al.'s running sum), gradient starts afresh."""
    keras.utils.set_random_seed(0)
    config = tiny_config(num_hidden_layers=2)
    model = build_classifier(config, 2)
    x = random_features(config, pad_from=11)
    y = np.arange(8) % 2
    batches = iter(tf.data.Dataset.from_tensor_slices((x, y)).batch(8).repeat())
    masks = ScheduledUnitMasks(model, scheduled(importance=importance), batches)
    name, ffn = masks.attention[0].name, masks.ffn[0].name
    first = [dict(part) for part in masks.importance()]
    second = masks.importance()
    if importance == "movement":       # the same batch twice: twice the first scores
        np.testing.assert_allclose(second[0][name], 2 * first[0][name], rtol=1e-4)
        assert (first[0][name] < 0).any() or (first[1][ffn] < 0).any()
    else:
        np.testing.assert_allclose(second[0][name], first[0][name], rtol=1e-4)
    masks.update(0.5, 0.5)
    assert masks.curve[-1]["heads_removed"] == [2] * len(masks.heads)


def test_the_removal_estimate_is_the_loss_change_of_removing_the_unit():
    """`removal_step`'s signed estimate, checked against actually zeroing each head's rows
    (a random model whose classifier is scaled up so that heads move the loss)."""
    keras.utils.set_random_seed(1)
    config = tiny_config(num_hidden_layers=1, sharing="none")
    model = build_classifier(config, 2)
    block = structured.blocks(model, structured.SelfAttentionBlock)[0]
    block.output_dense.kernel.assign(block.output_dense.kernel * 3.0)
    classifier = model.get_layer("classifier")
    classifier.kernel.assign(classifier.kernel * 10.0)
    x = random_features(config, pad_from=11)
    y = np.arange(8) % 2
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    full = float(loss(y, model(x)["logits"]))
    estimate = structured.removal_step(model)(x, y)[0][block.name]
    kernel = block.output_dense.kernel.numpy()
    d = block.head_size
    actual = []
    for head in range(block.num_heads):
        removed = kernel.copy()
        removed[head * d:(head + 1) * d] = 0.0
        block.output_dense.kernel.assign(removed)
        actual.append(float(loss(y, model(x)["logits"])) - full)
    block.output_dense.kernel.assign(kernel)
    np.testing.assert_allclose(estimate, actual, atol=2e-5)
    assert np.abs(actual).max() > 4e-5          # the heads matter: the check is not 0 == 0
    assert np.sign(estimate).tolist() != [np.sign(estimate[0])] * len(estimate)


def test_schedule_values_are_checked_with_the_key(tmp_path):
    with pytest.raises(CompressionConfigError, match="structured.frequency"):
        build_compression_config(params_overrides=[
            "stages=[structured],structured.schedule=polynomial_decay,"
            "structured.begin_step=0,structured.end_step=10,structured.frequency=3"])
    with pytest.raises(CompressionConfigError, match="structured.end_step"):
        build_compression_config(params_overrides=[
            "stages=[structured],structured.schedule=polynomial_decay,"
            "structured.end_step=2000,structured.train_steps=1000"])
    with pytest.raises(CompressionConfigError, match="structured.importance"):
        build_compression_config(params_overrides=[
            "structured.schedule=polynomial_decay,structured.importance=fisher"])
    with pytest.raises(CompressionConfigError, match="polynomial_decay"):
        build_compression_config(params_overrides=["structured.distill_alpha=0.5"])


def test_num_train_steps_scales_the_structured_schedule():
    config = build_compression_config(["compress_sst2_speedup"])
    set_train_steps(config, 50)
    s = config.structured
    assert s.train_steps == 50 and 0 <= s.begin_step < s.end_step <= 50
    assert (s.end_step - s.begin_step) % s.frequency == 0


def test_the_scheduled_stage_writes_a_smaller_model(tmp_path, data_dir):
    """Layers, heads and neurons removed while distilling: the report's curve follows the
    schedule, and the model directory is the smaller model (reloaded, same dev score)."""
    from albert_tf.compression.compressor import run
    init = tiny_model_dir(str(tmp_path / "init"))
    data = tiny_sst2_dir(str(tmp_path / "data"), data_dir, train=64, dev=32)
    config = build_compression_config(params_overrides=[f"""
init_model: {init}
model_dir: {tmp_path / "out"}
stages: [structured]
data: {{data_dir: {data}, batch_size: 8}}
export: {{tflite: false}}
structured: {{schedule: polynomial_decay, head_fraction: 0.5, ffn_fraction: 0.5,
  begin_step: 0, end_step: 8, frequency: 4, train_steps: 10, importance_batches: 1,
  num_layers: 3, distill_alpha: 0.5, distill_hidden_weight: 0.1}}
"""])
    report = run(config, log=lambda _: None)
    curve = report["structured"]["schedule"]
    assert [c["step"] for c in curve] == [0, 4, 8]
    removed = [c["heads_removed"][0] for c in curve]
    assert removed == sorted(removed) and removed[-1] == 2
    assert curve[-1]["neurons_removed"] == [32]
    model, _ = load_task_model(str(tmp_path / "out" / "model"))
    c = model.albert_config
    assert (c.num_hidden_layers, c.num_attention_heads, c.intermediate_size) == (3, 2, 32)
    with open(tmp_path / "out" / "report.json", encoding="utf-8") as f:
        assert json.load(f)["structured"]["params_after"] == model.count_params()
    assert os.path.isfile(tmp_path / "out" / "model" / "config.json")


def test_distilling_a_regression_model_is_refused_before_anything_loads(tmp_path):
    """The structured stage distils with a classification loss: a regression model's
    task.json says so before TensorFlow or the latency search start."""
    from albert_tf.compression.compression_config import check_run
    from albert_tf.config import load_config
    init = tmp_path / "stsb"
    init.mkdir()
    load_config("albert_mini").to_json(str(init / "config.json"))
    (init / "task.json").write_text(json.dumps({"task": "stsb", "head": "regression"}))
    config = build_compression_config(["compress_sst2_speedup"])
    config.init_model, config.model_dir = str(init), str(tmp_path / "out")
    with pytest.raises(CompressionConfigError, match="regression tasks"):
        check_run(config)
    config.structured.distill_alpha = 0.0
    check_run(config)
    assert not (tmp_path / "out").exists()
