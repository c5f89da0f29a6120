"""LAMB / AdamW (decay exclusions, trust ratio), schedule, clipping, mixed precision."""

import numpy as np
import pytest

import albert_tf
from albert_tf.backend import keras, tf
from albert_tf.training import experiment_config as cfg
from albert_tf.training import optimization as opt


def test_schedule_warmup_then_polynomial_decay():
    schedule = opt.WarmupPolynomialDecay(1e-3, decay_steps=100, warmup_steps=10,
                                         end_learning_rate=0.0, power=1.0)
    assert float(schedule(0)) == 0.0
    assert float(schedule(5)) == pytest.approx(5e-4)
    assert float(schedule(10)) == pytest.approx(1e-3 * 0.9)
    assert float(schedule(55)) == pytest.approx(1e-3 * 0.45)
    assert float(schedule(200)) == 0.0


@pytest.mark.parametrize("cls", [opt.Lamb, opt.AdamWeightDecay])
def test_weight_decay_excludes_layer_norm_and_bias(cls):
    kernel = tf.Variable(np.ones((3, 3), np.float32), name="dense/kernel")
    bias = tf.Variable(np.ones(3, np.float32), name="dense/bias")
    gamma = tf.Variable(np.ones(3, np.float32), name="layer_norm/gamma")
    optimizer = cls(learning_rate=0.1, weight_decay_rate=0.5)
    zeros = [tf.zeros_like(v) for v in (kernel, bias, gamma)]
    optimizer.apply_gradients(zip(zeros, [kernel, bias, gamma]))
    assert np.all(kernel.numpy() < 1.0)            # decayed
    np.testing.assert_array_equal(bias.numpy(), 1.0)   # excluded
    np.testing.assert_array_equal(gamma.numpy(), 1.0)  # excluded


def test_lamb_trust_ratio_scales_update_to_weight_norm():
    lamb = opt.Lamb(learning_rate=0.01, weight_decay_rate=1e-9, epsilon=0.0)
    w2 = tf.Variable(np.full((4, 4), 2.0, np.float32), name="w2/kernel")
    lamb.apply_gradients([(tf.fill((4, 4), 1e-3), w2)])
    # update = m/sqrt(v) = (0.1 g)/sqrt(0.001 g^2) ~ 3.16 per entry; ratio = ||w||/||u||
    # -> the step is lr * ||w|| / ||u|| * u: each entry moves by lr * 2.0.
    np.testing.assert_allclose(w2.numpy(), 2.0 - 0.01 * 2.0, rtol=1e-4)


def test_clip_by_global_norm():
    grads = [tf.constant([3.0, 4.0]), tf.IndexedSlices(tf.constant([[0.0, 0.0]]),
                                                       tf.constant([0]), tf.constant([2, 2]))]
    clipped, norm = opt.clip_gradients(grads, 1.0)
    assert float(norm) == pytest.approx(5.0)
    np.testing.assert_allclose(clipped[0].numpy(), [0.6, 0.8], rtol=1e-6)


def test_build_optimizer_types_and_loss_scaling():
    config = cfg.OptimizerConfig(type="adamw", warmup_steps=3)
    assert isinstance(opt.build_optimizer(config, 10), opt.AdamWeightDecay)
    wrapped = opt.build_optimizer(cfg.OptimizerConfig(type="lamb"), 10, "mixed_float16")
    assert isinstance(wrapped, keras.mixed_precision.LossScaleOptimizer)
    assert isinstance(opt.inner_optimizer(wrapped), opt.Lamb)


@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
def test_mixed_precision_keeps_embedding_layernorm_softmax_logits_float32(policy):
    opt.set_mixed_precision(policy)
    try:
        config = albert_tf.load_config("albert_tiny")
        model = albert_tf.build_pretrainer(config, masked_lm_positions=True,
                                           max_predictions_per_seq=3)
        embeddings = model.get_layer("embeddings")
        assert embeddings.layer_norm.compute_dtype == "float32"
        assert model.get_layer("group_0_inner_0_attention").compute_dtype == policy[6:]
        inputs = {"input_word_ids": tf.ones((2, 8), tf.int32),
                  "input_mask": tf.ones((2, 8), tf.int32),
                  "input_type_ids": tf.zeros((2, 8), tf.int32),
                  "masked_lm_positions": tf.constant([[1, 2, 3]] * 2)}
        outputs = model(inputs)
        assert outputs["mlm_logits"].dtype == tf.float32
        assert outputs["sop_logits"].dtype == tf.float32
        # variables stay float32 (the optimizer updates float32 masters)
        assert all(v.dtype == tf.float32 for v in model.trainable_variables)
    finally:
        opt.set_mixed_precision("float32")
