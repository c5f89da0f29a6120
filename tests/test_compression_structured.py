"""Structured pruning: a smaller dense model with a valid config, exactly the masked model."""

import numpy as np
import pytest

from albert_tf.backend import keras, tf
from albert_tf.checkpoints import load_task_model, save_model_dir
from albert_tf.compression import structured
from albert_tf.compression.compression_config import CompressionConfigError, StructuredConfig
from albert_tf.models import build_classifier
from tests.compression_fixtures import VOCAB, random_features, sst2_task_info, tiny_config


@pytest.mark.slow
@pytest.mark.parametrize("sharing, importance", [("all", "gradient"), ("none", "magnitude")])
def test_pruned_model_is_smaller_valid_and_exact(tmp_path, sharing, importance):
    keras.utils.set_random_seed(0)
    config = tiny_config(sharing=sharing, num_hidden_layers=2)
    model = build_classifier(config, 2)
    x = random_features(config, pad_from=11)
    y = np.arange(8) % 2
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(4)
    cfg = StructuredConfig(head_fraction=0.25, ffn_fraction=0.5, importance=importance,
                           importance_batches=2)
    plan = structured.plan(model, cfg, dataset)
    assert plan.config.num_attention_heads == 3 and plan.config.intermediate_size == 32
    assert plan.config.head_size == config.head_size == 8
    assert all(len(h) == 3 for h in plan.heads.values())
    pruned = structured.apply_plan(model, plan, lambda c: build_classifier(c, 2))
    assert pruned.count_params() < model.count_params()
    block = pruned.get_layer(plan.heads and next(iter(plan.heads)))
    assert block.query.kernel.shape == (32, 24) and block.output_dense.kernel.shape == (24, 32)

    # The pruned model computes what the original computes with those units switched off.
    reference = structured.head_mask_equivalent(model, plan)
    np.testing.assert_allclose(pruned(x)["logits"], reference(x)["logits"], atol=1e-5)

    # It is an ordinary model directory: config.json carries attention_head_size.
    directory = save_model_dir(pruned, str(tmp_path / "pruned"), plan.config,
                               sst2_task_info(), VOCAB)
    reloaded, _ = load_task_model(directory)
    assert reloaded.albert_config == plan.config
    np.testing.assert_allclose(reloaded(x)["logits"], pruned(x)["logits"], atol=1e-6)


def test_gradient_importance_finds_a_dead_head():
    keras.utils.set_random_seed(0)
    config = tiny_config(num_hidden_layers=2)
    model = build_classifier(config, 2)
    block = model.get_layer("group_0_inner_0_attention")
    kernel = block.output_dense.kernel.numpy()
    kernel[8:16] = 0.0                      # head 1 no longer contributes
    block.output_dense.kernel.assign(kernel)
    x = random_features(config)
    dataset = tf.data.Dataset.from_tensor_slices((x, np.arange(8) % 2)).batch(8)
    heads, _ = structured.gradient_importance(model, dataset, 1)
    assert int(np.argmin(heads["group_0_inner_0_attention"])) == 1
    plan = structured.plan(model, StructuredConfig(importance="gradient",
                                                   importance_batches=1), dataset)
    assert 1 not in plan.heads["group_0_inner_0_attention"]


def test_fractions_that_remove_nothing_or_everything_are_rejected():
    config = tiny_config()
    with pytest.raises(CompressionConfigError, match="rounds to none"):
        structured.pruned_config(config, StructuredConfig(head_fraction=0.1))
    with pytest.raises(CompressionConfigError, match="every head"):
        structured.pruned_config(config.replace(num_attention_heads=1),
                                 StructuredConfig(head_fraction=0.9))
