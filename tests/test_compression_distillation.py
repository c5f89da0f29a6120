"""Distillation: losses, hidden/attention matching, shape checks, student init."""

import numpy as np
import pytest

from albert_tf.backend import keras, tf
from albert_tf.compression import distillation
from albert_tf.compression.compression_config import CompressionConfigError, DistillationConfig
from albert_tf.models import build_classifier
from tests.compression_fixtures import random_features, tiny_config


def test_soft_target_loss_is_t2_scaled_kl():
    t = np.array([[2.0, -1.0, 0.5]], np.float32)
    s = np.array([[0.1, 0.3, -0.2]], np.float32)
    temp = 2.0
    p = np.exp(t / temp) / np.exp(t / temp).sum()
    q = np.exp(s / temp) / np.exp(s / temp).sum()
    expected = temp ** 2 * np.sum(p * np.log(p / q))
    assert float(distillation.soft_target_loss(s, t, temp)) == pytest.approx(expected, rel=1e-5)
    assert float(distillation.soft_target_loss(t, t, temp)) == pytest.approx(0.0, abs=1e-6)


def test_probes_read_layer_outputs_and_attention_from_the_graph():
    keras.utils.set_random_seed(0)
    config = tiny_config(num_hidden_layers=3)
    model = build_classifier(config, 2)
    x = random_features(config, pad_from=10)
    probe = distillation.probe(model, hidden=True, attention=True)
    out = probe(x)
    assert len(out["hidden"]) == 3 and len(out["attention"]) == 3
    np.testing.assert_allclose(out["logits"], model(x)["logits"], atol=1e-6)
    probs = out["attention"][0].numpy()                       # [B, N, F, T]
    assert probs.shape == (8, config.num_attention_heads, 16, 16)
    np.testing.assert_allclose(probs.sum(-1), 1.0, atol=1e-5)
    assert probs[-1, :, :, 10:].max() < 1e-6                  # padded keys get no weight
    assert len(probe.trainable_weights) == len(model.trainable_weights)   # no new weights


@pytest.mark.slow
def test_distiller_trains_the_student_with_all_terms():
    keras.utils.set_random_seed(0)
    teacher = build_classifier(tiny_config(num_hidden_layers=4), 2)
    student = build_classifier(tiny_config(num_hidden_layers=2, sharing="none"), 2)
    teacher_before = [w.numpy() for w in teacher.weights]
    cfg = DistillationConfig(temperature=2.0, alpha=0.7, hidden_weight=1.0,
                             attention_weight=1.0)
    distiller = distillation.Distiller(student, teacher, cfg)
    assert distiller.layer_map == [2, 4]
    distiller.compile(optimizer=keras.optimizers.Adam(3e-3), run_eagerly=True)
    x = random_features(student.albert_config, batch=16, pad_from=12)
    y = np.arange(16) % 2
    first = distiller.evaluate(x, y, batch_size=16, verbose=0, return_dict=True)
    history = distiller.fit(x, y, batch_size=16, epochs=8, verbose=0)
    last = distiller.evaluate(x, y, batch_size=16, verbose=0, return_dict=True)
    assert set(history.history) >= {"loss", "soft", "hard", "hidden", "attention", "acc"}
    assert last["loss"] < first["loss"]
    for before, after in zip(teacher_before, teacher.weights):
        np.testing.assert_array_equal(before, after.numpy())      # the teacher is frozen


def test_impossible_matching_is_rejected_before_training():
    teacher = tiny_config(num_hidden_layers=4)
    narrow = tiny_config(hidden_size=16, intermediate_size=32, num_hidden_layers=2)
    with pytest.raises(CompressionConfigError, match="hidden size"):
        distillation.check_compatible(narrow, teacher, DistillationConfig(hidden_weight=1.0))
    fewer_heads = tiny_config(num_attention_heads=2, num_hidden_layers=2)
    with pytest.raises(CompressionConfigError, match="heads"):
        distillation.check_compatible(fewer_heads, teacher,
                                      DistillationConfig(attention_weight=1.0))
    with pytest.raises(CompressionConfigError, match="layer_map"):
        distillation.check_compatible(fewer_heads, teacher,
                                      DistillationConfig(hidden_weight=1.0, layer_map=[1, 9]))
    # Soft targets alone need nothing shared.
    assert distillation.check_compatible(narrow, teacher, DistillationConfig()) == [2, 4]


def test_student_init_copies_the_mapped_teacher_layers():
    keras.utils.set_random_seed(0)
    teacher = build_classifier(tiny_config(num_hidden_layers=4, sharing="none"), 2)
    student = build_classifier(tiny_config(num_hidden_layers=2, sharing="none"), 2)
    result = distillation.init_student_from_teacher(student, teacher)
    assert not result["skipped"]
    weights = {w.name: w.numpy() for w in teacher.weights}
    got = {w.name: w.numpy() for w in student.weights}
    np.testing.assert_array_equal(got["layer_1_inner_0_ffn/intermediate/kernel:0"],
                                  weights["layer_3_inner_0_ffn/intermediate/kernel:0"])
    np.testing.assert_array_equal(got["embeddings/word_embeddings/embeddings:0"],
                                  weights["embeddings/word_embeddings/embeddings:0"])
    assert tf.reduce_all(tf.math.is_finite(student(random_features(
        student.albert_config))["logits"]))
