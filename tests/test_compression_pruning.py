"""Unstructured pruning: schedules in optimizer steps whatever the sharing, strip, reports."""

import numpy as np
import pytest
import tensorflow_model_optimization as tfmot

from albert_tf.backend import keras
from albert_tf.compression import pruning
from albert_tf.compression.compression_config import CompressionConfigError, PruningConfig
from albert_tf.models import build_classifier
from tests.compression_fixtures import random_features, tiny_config


def _fit(model, x, y, steps, callbacks):
    model.fit(x, y, batch_size=len(y), epochs=steps, callbacks=callbacks, verbose=0)


def _compile(model, eager=True):
    # Eager keeps these tests fast (tracing a pruned graph costs tens of seconds on 2
    # shared cores); test_graph_mode_* and the pipeline test cover tf.function training.
    model.compile(optimizer=keras.optimizers.Adam(1e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  run_eagerly=eager)


def _mask_sparsity(model):
    return {mask.name: 1.0 - float(np.mean(mask.numpy()))
            for layer in pruning.pruning_wrappers(model) for _, mask, _ in layer.pruning_vars}


@pytest.mark.slow
@pytest.mark.parametrize("sharing", ["all", "none"])
def test_polynomial_schedule_follows_optimizer_steps(sharing):
    """With one shared block called L=4 times per step, masks still follow the curve at
    the *optimizer* step (checked at several steps), exactly as without sharing."""
    keras.utils.set_random_seed(0)
    config = tiny_config(sharing=sharing, num_hidden_layers=3)
    cfg = PruningConfig(final_sparsity=0.8, begin_step=2, end_step=10, frequency=2, power=3,
                        train_steps=12)
    model = pruning.prune_model(build_classifier(config, 2), cfg)
    wrappers = pruning.pruning_wrappers(model)
    n_blocks = sum(1 for w in wrappers if "attention" in w.name)
    assert n_blocks == (1 if sharing == "all" else config.num_hidden_layers)
    _compile(model)
    x, y = random_features(config, batch=4), np.array([0, 1, 0, 1])
    schedule, callback, done = pruning.make_schedule(cfg), pruning.PruningStepCallback(), 0
    for step in (1, 3, 4, 7, 12):
        _fit(model, x, y, step - done, [callback])
        done = step
        assert int(model.optimizer.iterations.numpy()) == step
        expected = pruning.expected_sparsity(schedule, step)
        for name, value in _mask_sparsity(model).items():
            assert value == pytest.approx(expected, abs=0.01), (sharing, step, name)
    assert pruning.expected_sparsity(schedule, 4) == pytest.approx(0.8 * (1 - 0.75 ** 3))
    final = pruning.strip_pruning(model)
    assert not pruning.pruning_wrappers(final)
    assert final.albert_config == config
    report = pruning.sparsity_report(final, pruning.pruned_weight_names(model))
    assert len(report.sparsity) == len(pruning.pruned_weight_names(model)) >= 7
    for name, value in report.sparsity.items():
        assert abs(value - 0.8) <= 0.01, name
    np.testing.assert_allclose(final(x)["logits"], model(x)["logits"], atol=1e-5)


@pytest.mark.slow
def test_graph_mode_training_prunes_a_shared_block_once_per_step():
    keras.utils.set_random_seed(0)
    config = tiny_config(sharing="all", num_hidden_layers=2)
    cfg = PruningConfig(final_sparsity=0.5, begin_step=1, end_step=3, frequency=1, power=1,
                        train_steps=3)
    model = pruning.prune_model(build_classifier(config, 2), cfg)
    _compile(model, eager=False)
    x, y = random_features(config, batch=4), np.array([0, 1, 0, 1])
    callback = pruning.PruningStepCallback()
    _fit(model, x, y, 2, [callback])
    block = [w for w in pruning.pruning_wrappers(model) if "attention" in w.name][0]
    assert int(block.mask_update_step.numpy()) == 2
    for value in _mask_sparsity(model).values():
        assert value == pytest.approx(0.5 * 1 / 2, abs=0.01)


@pytest.mark.slow
def test_stock_tfmot_runs_the_schedule_l_times_too_fast_on_a_shared_block():
    """Why the custom wrapper exists: stock PruneLowMagnitude counts calls, not steps."""
    keras.utils.set_random_seed(0)
    config = tiny_config(sharing="all", num_hidden_layers=3)
    schedule = tfmot.sparsity.keras.PolynomialDecay(0.0, 0.8, 0, 20, frequency=1)
    model = tfmot.sparsity.keras.prune_low_magnitude(build_classifier(config, 2),
                                                     pruning_schedule=schedule)
    _compile(model)
    x, y = random_features(config, batch=4), np.array([0, 1, 0, 1])
    _fit(model, x, y, 3, [tfmot.sparsity.keras.UpdatePruningStep()])
    block = [l for l in model.layers if l.name.endswith("group_0_inner_0_attention")][0]
    assert int(block.pruning_step.numpy()) == 3 * config.num_hidden_layers


def test_m_by_n_gives_2_of_4_where_the_kernel_allows():
    keras.utils.set_random_seed(0)
    config = tiny_config(num_hidden_layers=2)
    cfg = PruningConfig(schedule="constant", target_sparsity=0.5, begin_step=1, end_step=-1,
                        frequency=1, m_by_n="2:4", targets=["attention", "ffn", "head"],
                        train_steps=3)
    model = pruning.prune_model(build_classifier(config, 2), cfg)
    _compile(model)
    x, y = random_features(config, batch=4), np.array([0, 1, 0, 1])
    _fit(model, x, y, 3, [pruning.PruningStepCallback()])
    final = pruning.strip_pruning(model)
    names = pruning.m_by_n_weight_names(model)
    assert "group_0_inner_0_ffn/intermediate/kernel" in names
    assert "classifier/kernel" in names        # [H=32, 2]: 32 inputs, a multiple of 4
    weights = {w.name.split(":")[0]: w.numpy() for w in final.weights}
    for name in names:
        assert pruning.is_m_by_n(weights[name], (2, 4)), name
        assert np.mean(weights[name] == 0) == pytest.approx(0.5, abs=0.01)


def test_embeddings_are_optional_and_targets_are_checked_before_wrapping():
    config = tiny_config()
    model = build_classifier(config, 2)
    default = pruning.resolve_targets(model, PruningConfig().targets)
    assert "embeddings" not in default and "group_0_inner_0_attention" in default
    assert "embeddings" in pruning.resolve_targets(model, ["embeddings"])
    for bad, match in [("attention_mask", "cannot be pruned"),
                       ("classifier_dropout", "cannot be pruned"),
                       ("no_such_layer", "neither a group")]:
        with pytest.raises(pruning.PruningTargetError, match=match):
            pruning.prune_model(model, PruningConfig(targets=[bad]))
    assert not pruning.pruning_wrappers(model)


@pytest.mark.parametrize("changes, match", [
    (dict(final_sparsity=1.0), "final_sparsity"),
    (dict(final_sparsity=-0.1), "final_sparsity"),
    (dict(initial_sparsity=1.2), "initial_sparsity"),
    (dict(begin_step=500, end_step=100), "before begin_step"),
    (dict(end_step=1000, frequency=300), "multiple of frequency"),
    (dict(end_step=2000, train_steps=1000), "after the last training step"),
    (dict(schedule="constant", target_sparsity=1.0), "target_sparsity"),
    (dict(m_by_n="4:4"), "m_by_n"),
])
def test_bad_schedules_fail_before_any_wrapping(changes, match):
    cfg = PruningConfig(**dict(dict(end_step=1000, frequency=100, train_steps=1000), **changes))
    with pytest.raises(CompressionConfigError, match=match):
        pruning.make_schedule(cfg)
