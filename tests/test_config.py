"""AlbertConfig: original keys, JSON round trip, validation errors that name the key."""

import json

import pytest

from albert_tf.config import (AlbertConfig, ConfigError, activation_from_hf, activation_to_hf,
                              load_config)

ORIGINAL_ALBERT_BASE_V2 = {
    "attention_probs_dropout_prob": 0, "hidden_act": "gelu", "hidden_dropout_prob": 0,
    "embedding_size": 128, "hidden_size": 768, "initializer_range": 0.02,
    "intermediate_size": 3072, "max_position_embeddings": 512, "num_attention_heads": 12,
    "num_hidden_layers": 12, "num_hidden_groups": 1, "net_structure_type": 0,
    "layers_to_keep": [], "gap_size": 0, "num_memory_blocks": 0, "inner_group_num": 1,
    "down_scale_factor": 1, "type_vocab_size": 2, "vocab_size": 30000}


def test_json_round_trip(tmp_path):
    config = load_config("albert_tiny_groups")
    path = tmp_path / "config.json"
    config.to_json(path)
    assert AlbertConfig.from_json(path) == config
    assert not list(tmp_path.glob("*.tmp-*")), "to_json must not leave temporary files"


def test_unknown_key_is_named(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps(dict(load_config("albert_tiny").to_dict(), hiden_size=3)))
    with pytest.raises(ConfigError, match="hiden_size"):
        AlbertConfig.from_json(path)


def test_original_google_config_unused_keys_are_named():
    # The released albert_config.json carries keys for features we do not implement.
    with pytest.raises(ConfigError, match="net_structure_type"):
        AlbertConfig.from_dict(ORIGINAL_ALBERT_BASE_V2)


def test_hugging_face_config_gets_a_hint():
    with pytest.raises(ConfigError, match="albert-tf-convert --from=hf"):
        AlbertConfig.from_dict({"model_type": "albert", "architectures": ["AlbertModel"]})


@pytest.mark.parametrize("changes, key", [
    ({"num_hidden_groups": 5, "num_hidden_layers": 4}, "num_hidden_groups"),
    ({"hidden_size": 30, "num_attention_heads": 4}, "hidden_size"),
    ({"sharing": "everything"}, "sharing"),
    ({"hidden_act": "gelu_magic"}, "hidden_act"),
    ({"vocab_size": 0}, "vocab_size"),
    ({"hidden_dropout_prob": 1.5}, "hidden_dropout_prob"),
    ({"hidden_size": "768"}, "hidden_size"),
])
def test_invalid_values_name_the_key(changes, key):
    with pytest.raises(ConfigError, match=key):
        load_config("albert_tiny").replace(**changes)


def test_malformed_json_and_missing_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ConfigError, match="not valid JSON"):
        AlbertConfig.from_json(bad)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        AlbertConfig.from_json(tmp_path / "absent.json")
    with pytest.raises(FileNotFoundError, match="no official model config"):
        load_config("albert_gigantic")


def test_activation_names_are_mapped_explicitly():
    # Google "gelu" is the tanh approximation; Hugging Face "gelu" is the exact erf form.
    assert activation_to_hf("gelu") == "gelu_new"
    assert activation_from_hf("gelu") == "gelu_exact"
    assert activation_to_hf(activation_from_hf("gelu")) == "gelu"
    assert activation_from_hf("gelu_new") == "gelu_new"
    with pytest.raises(ConfigError, match="hidden_act"):
        activation_from_hf("quick_gelu")


def test_group_assignment_matches_original_formula():
    config = load_config("albert_tiny").replace(num_hidden_layers=12, num_hidden_groups=3)
    assert [config.group_of_layer(i) for i in range(12)] == [0] * 4 + [1] * 4 + [2] * 4
    odd = config.replace(num_hidden_layers=5, num_hidden_groups=2)
    assert [odd.group_of_layer(i) for i in range(5)] == [0, 0, 0, 1, 1]


def test_official_configs_are_v2_hyperparameters():
    for name in ("albert_base", "albert_large", "albert_xlarge", "albert_xxlarge"):
        c = load_config(name)
        assert (c.vocab_size, c.embedding_size, c.hidden_act) == (30000, 128, "gelu")
        assert c.hidden_dropout_prob == c.attention_probs_dropout_prob == 0.0
        assert c.layer_norm_eps == 1e-12 and c.sharing == "all"
    for name in ("bert_base", "bert_large"):
        c = load_config(name)
        assert c.embedding_size == c.hidden_size and c.sharing == "none" and c.vocab_size == 30522
