"""Model core: exact parameter counts, sharing and groups, heads, training, save/reload."""

import numpy as np
import pytest

import albert_tf
from albert_tf.backend import keras, tf
from albert_tf.checkpoints import CheckpointError

# The published counts of the models too large for test_info.py to build in every sharing
# mode; albert_base (in all four sharing modes) and bert_base are built there and checked
# against theirs (test_info.py: test_count_equals_built_official_encoder).
PUBLISHED_COUNTS = {
    "albert_large": 17_683_968,
    "albert_xlarge": 58_724_864,
    "albert_xxlarge": 222_595_584,
}


def random_inputs(config, batch=3, seq=11, pad_from=7, seed=0):
    rng = np.random.default_rng(seed)
    inputs = {
        "input_word_ids": rng.integers(5, config.vocab_size, (batch, seq)).astype(np.int32),
        "input_mask": np.ones((batch, seq), np.int32),
        "input_type_ids": (np.arange(seq)[None, :] >= seq // 2).repeat(batch, 0).astype(np.int32),
    }
    inputs["input_mask"][1:, pad_from:] = 0
    return inputs


def built_count(config) -> int:
    """``count_params()`` of ``build_encoder(config)``, built inside a fresh ``tf.Graph``:
    the same layers, variables and shapes, but the random initial values of the base and
    larger models are never computed (most of an eager build's time; see test_info.py)."""
    with tf.Graph().as_default():
        return albert_tf.build_encoder(config).count_params()


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PUBLISHED_COUNTS))
def test_published_parameter_counts(name):
    assert built_count(albert_tf.load_config(name)) == PUBLISHED_COUNTS[name]


def _block_names(model, kind):
    return sorted(layer.name for layer in model.layers if layer.name.endswith(kind))


@pytest.mark.slow
@pytest.mark.parametrize("sharing, n_attention, n_ffn", [
    ("all", 4, 4), ("attention", 4, 8), ("ffn", 8, 4), ("none", 8, 8)])
def test_sharing_and_groups_create_the_right_sublayers(sharing, n_attention, n_ffn):
    # albert_tiny_groups: L=4 layers, G=2 groups, K=2 inner layers per group.
    config = albert_tf.load_config("albert_tiny_groups").replace(sharing=sharing)
    model = albert_tf.build_encoder(config)
    assert len(_block_names(model, "_attention")) == n_attention
    assert len(_block_names(model, "_ffn")) == n_ffn
    names = [w.name for w in model.weights]
    assert len(names) == len(set(names)), "weight names must be unique"
    if sharing == "all":
        assert _block_names(model, "_attention") == [
            "group_0_inner_0_attention", "group_0_inner_1_attention",
            "group_1_inner_0_attention", "group_1_inner_1_attention"]
        # Each shared sublayer is applied once per layer of its group (L / G = 2 times).
        assert len(model.get_layer("group_1_inner_0_attention").inbound_nodes) == 2


def test_encoder_applies_groups_in_original_order():
    """Recompute the forward pass by hand from the layers, with layer i -> group int(i/L*G)."""
    config = albert_tf.load_config("albert_tiny_groups").replace(num_hidden_layers=5)
    model = albert_tf.build_encoder(config)
    x = random_inputs(config)
    h = model.get_layer("embeddings")(x["input_word_ids"], x["input_type_ids"])
    h = model.get_layer("embedding_projection")(h)
    bias = model.get_layer("attention_mask")(x["input_mask"])
    for i in range(config.num_hidden_layers):
        g = int(i / config.num_hidden_layers * config.num_hidden_groups)
        for k in range(config.inner_group_num):
            h = model.get_layer(f"group_{g}_inner_{k}_attention")([h, bias])
            h = model.get_layer(f"group_{g}_inner_{k}_ffn")(h)
    np.testing.assert_allclose(model(x)["sequence_output"], h, atol=1e-6)


def test_padding_does_not_change_real_positions():
    config = albert_tf.load_config("albert_tiny")
    model = albert_tf.build_encoder(config)
    x = random_inputs(config)
    y = dict(x, input_word_ids=x["input_word_ids"].copy())
    y["input_word_ids"][1:, 7:] = 3  # change only padded tokens
    a, b = model(x)["sequence_output"].numpy(), model(y)["sequence_output"].numpy()
    np.testing.assert_allclose(a[:, :7], b[:, :7], atol=1e-5)
    assert np.abs(a[1:, 7:] - b[1:, 7:]).max() > 1e-3


def test_bert_has_no_projection_and_albert_does():
    assert "embedding_projection" not in [l.name for l in
                                          albert_tf.build_encoder(albert_tf.load_config("bert_tiny")).layers]
    assert "embedding_projection" in [l.name for l in
                                      albert_tf.build_encoder(albert_tf.load_config("albert_tiny")).layers]


def test_pretrainer_heads_and_tied_decoder():
    config = albert_tf.load_config("albert_tiny")
    encoder = albert_tf.build_encoder(config)
    model = albert_tf.build_pretrainer(config)
    V, E, H = config.vocab_size, config.embedding_size, config.hidden_size
    head_params = (H * E + E) + 2 * E + V + (2 * H + 2)  # dense, LayerNorm, output bias, SOP
    assert model.count_params() == encoder.count_params() + head_params
    x = random_inputs(config)
    out = model(x)
    assert out["mlm_logits"].shape == (3, 11, V) and out["sop_logits"].shape == (3, 2)
    # The decoder is the word-embedding table: changing it changes the logits.
    table = model.get_layer("embeddings").embedding_table
    before = out["mlm_logits"].numpy()
    table.assign(table * 2.0)
    assert np.abs(model(x)["mlm_logits"].numpy() - before).max() > 1e-3

    positioned = albert_tf.build_pretrainer(config, masked_lm_positions=True)
    positioned.set_weights(model.get_weights())
    positions = np.array([[1, 4], [0, 2], [6, 6]], np.int32)
    got = positioned(dict(x, masked_lm_positions=positions))["mlm_logits"].numpy()
    full = model(x)["mlm_logits"].numpy()
    expected = np.take_along_axis(full, positions[..., None], axis=1)
    np.testing.assert_allclose(got, expected, atol=1e-5)


@pytest.mark.slow
def test_task_heads_output_shapes():
    config = albert_tf.load_config("albert_tiny")
    x = random_inputs(config)
    assert albert_tf.build_classifier(config, 3)(x)["logits"].shape == (3, 3)
    assert albert_tf.build_regressor(config)(x)["value"].shape == (3, 1)
    assert albert_tf.build_token_classifier(config, 5)(x)["logits"].shape == (3, 11, 5)
    spans = albert_tf.build_span_extractor(config)(x)
    assert spans["start_logits"].shape == (3, 11)
    assert spans["end_logits"].numpy()[1, 7:].max() < -1e8  # padding is never an answer
    choice = albert_tf.build_multiple_choice(config, num_choices=4, seq_length=11)
    xc = {k: np.stack([v] * 4, axis=1) for k, v in x.items()}
    logits = choice(xc)["logits"].numpy()
    assert logits.shape == (3, 4)
    np.testing.assert_allclose(logits, logits[:, :1].repeat(4, 1), atol=1e-5)  # same choices


def test_missing_inputs_give_a_clear_error():
    model = albert_tf.build_encoder(albert_tf.load_config("albert_tiny"))
    x = random_inputs(albert_tf.load_config("albert_tiny"))
    with pytest.raises(albert_tf.InputError, match="input_mask"):
        model({"input_word_ids": x["input_word_ids"], "input_type_ids": x["input_type_ids"]})
    with pytest.raises(albert_tf.InputError, match="dict"):
        model(x["input_word_ids"])


@pytest.mark.slow
def test_graph_has_only_keras_layers_and_prunable_custom_layers():
    """No TFOpLambda (TF-MOT rejects it); every custom weighted layer is prunable."""
    import tensorflow_model_optimization as tfmot
    config = albert_tf.load_config("albert_tiny")
    for model in (albert_tf.build_pretrainer(config), albert_tf.build_classifier(config, 2)):
        kinds = {type(layer).__name__ for layer in model.layers}
        assert "TFOpLambda" not in kinds and "Lambda" not in kinds, kinds
        for layer in model.layers:
            if layer.weights and not isinstance(layer, (keras.layers.Dense,
                                                        keras.layers.InputLayer)):
                assert isinstance(layer, tfmot.sparsity.keras.PrunableLayer) or \
                    hasattr(layer, "get_prunable_weights"), layer.name
    pruned = tfmot.sparsity.keras.prune_low_magnitude(albert_tf.build_classifier(config, 2))
    wrapped = [l.layer.name for l in pruned.layers if "PruneLowMagnitude" in type(l).__name__]
    assert "group_0_inner_0_attention" in wrapped and "group_0_inner_0_ffn" in wrapped


@pytest.mark.slow
def test_a_few_steps_lower_the_pretraining_loss():
    keras.utils.set_random_seed(1)
    config = albert_tf.load_config("albert_tiny")
    model = albert_tf.build_pretrainer(config, masked_lm_positions=True)
    x = random_inputs(config, batch=8, seq=16)
    x["masked_lm_positions"] = np.tile(np.array([[1, 3, 5]], np.int32), (8, 1))
    mlm_labels = np.random.default_rng(0).integers(5, config.vocab_size, (8, 3))
    sop_labels = np.array([0, 1] * 4)
    xent = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    optimizer = keras.optimizers.Adam(5e-3)

    def loss_fn():
        out = model(x, training=True)
        return xent(mlm_labels, out["mlm_logits"]) + xent(sop_labels, out["sop_logits"])

    first = float(loss_fn())
    for _ in range(20):
        with tf.GradientTape() as tape:
            loss = loss_fn()
        grads = tape.gradient(loss, model.trainable_variables)
        assert all(g is not None for g in grads)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
    assert float(loss_fn()) < first * 0.8


@pytest.mark.slow
def test_savedmodel_and_checkpoint_reload_identically(tmp_path):
    config = albert_tf.load_config("albert_tiny_groups")
    model = albert_tf.build_pretrainer(config)
    x = random_inputs(config)
    expected = {k: v.numpy() for k, v in model(x).items()}

    albert_tf.save_model_dir(model, str(tmp_path / "ckpt"))
    reloaded = albert_tf.load_pretrainer(str(tmp_path / "ckpt"))
    for key, value in reloaded(x).items():
        np.testing.assert_array_equal(value.numpy(), expected[key])

    model.save(str(tmp_path / "saved_model"), save_format="tf")
    loaded = tf.saved_model.load(str(tmp_path / "saved_model"))
    got = loaded({k: tf.constant(v) for k, v in x.items()}, training=False)
    for key in ("sequence_output", "pooled_output", "mlm_logits", "sop_logits"):
        np.testing.assert_allclose(got[key].numpy(), expected[key], atol=1e-6)


def test_checkpoint_of_another_shape_names_the_tensor(tmp_path):
    small = albert_tf.load_config("albert_tiny")
    albert_tf.save_model_dir(albert_tf.build_encoder(small), str(tmp_path / "m"))
    other = albert_tf.build_encoder(small.replace(embedding_size=24))
    with pytest.raises(CheckpointError, match="embeddings/word_embeddings/embeddings"):
        albert_tf.restore_weights(other, str(tmp_path / "m"))
    with pytest.raises(CheckpointError, match="holds no weights"):
        albert_tf.restore_weights(other, str(tmp_path))


def test_pretrained_encoder_weights_load_into_a_classifier(tmp_path):
    config = albert_tf.load_config("albert_tiny")
    pretrainer = albert_tf.build_pretrainer(config)
    albert_tf.save_model_dir(pretrainer, str(tmp_path / "m"))
    classifier = albert_tf.build_classifier(config, 2)
    report = albert_tf.restore_weights(classifier, str(tmp_path / "m"))
    assert sorted(report.missing_in_checkpoint) == ["classifier/bias", "classifier/kernel"]
    assert "mlm/output_bias" in report.unused_in_checkpoint
    encoder = albert_tf.build_encoder(config)
    albert_tf.restore_weights(encoder, str(tmp_path / "m"))
    x = random_inputs(config)
    np.testing.assert_array_equal(encoder(x)["pooled_output"].numpy(),
                                  pretrainer(x)["pooled_output"].numpy())


def test_layers_heads_is_a_deprecated_alias_of_output_layers():
    """The output layers moved to `albert_tf.layers.output_layers` (one thing is called
    heads: `albert_tf.heads`); the old module still imports, with a warning."""
    import importlib
    import sys

    from albert_tf.layers import output_layers
    sys.modules.pop("albert_tf.layers.heads", None)
    with pytest.warns(DeprecationWarning, match="albert_tf.layers.heads is deprecated"):
        old = importlib.import_module("albert_tf.layers.heads")
    for name in ("ClsPooler", "FoldChoices", "GatherPositions", "MaskedLMHead", "SpanLogits",
                 "UnfoldChoices"):
        assert getattr(old, name) is getattr(output_layers, name), name
