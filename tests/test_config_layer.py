"""One configuration layer (`albert_tf.hyperparams`) for training, compression and the
pipeline, and every `AlbertConfig` field settable as ``model.<field>``.

The end-to-end check: ``albert-tf-finetune --params_override=model.sharing=none`` on the
real SST-2 trains an unshared (BERT-style) encoder: its ``final/config.json`` says
``sharing: none`` and its checkpoint holds exactly the parameters that the closed-form
count below gives for L unshared layers (the formula reproduces the README's albert_base
table: 11,683,584 shared, 89,650,176 unshared).
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import pytest

from albert_tf import hyperparams
from albert_tf.config import AlbertConfig, load_config
from albert_tf.training import experiment_config as cfg

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ALBERT_FIELDS = [f.name for f in dataclasses.fields(AlbertConfig)]


def _env(data_dir=None):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    env.pop("TF_CONFIG", None)
    if data_dir:
        env["ALBERT_TF_DATA_DIR"] = data_dir
    return env


def encoder_parameters(c: AlbertConfig) -> int:
    """Encoder + pooler parameters, counted by hand (not by building the model)."""
    E, H, F = c.embedding_size, c.hidden_size, c.intermediate_size    # F: FFN width
    inner = c.num_attention_heads * c.head_size
    embeddings = (c.vocab_size + c.max_position_embeddings + c.type_vocab_size) * E + 2 * E
    projection = E * H + H if E != H else 0
    attention = 3 * (H * inner + inner) + inner * H + H + 2 * H     # q, k, v, output, LN
    ffn = H * F + F + F * H + H + 2 * H                               # in, out, LN
    pooler = H * H + H
    shared_sets = c.num_hidden_groups * c.inner_group_num             # one per group slot
    own_sets = c.num_hidden_layers * c.inner_group_num                # one per layer slot
    attention_sets = shared_sets if c.sharing in ("all", "attention") else own_sets
    ffn_sets = shared_sets if c.sharing in ("all", "ffn") else own_sets
    return (embeddings + projection + attention_sets * attention + ffn_sets * ffn + pooler)


def test_formula_reproduces_the_readme_table():
    base = load_config("albert_base")
    counts = {s: encoder_parameters(base.replace(sharing=s))
              for s in ("all", "attention", "ffn", "none")}
    assert counts == {"all": 11_683_584, "attention": 63_647_232, "ffn": 37_686_528,
                      "none": 89_650_176}
    assert encoder_parameters(load_config("bert_base")) == 109_482_240


@pytest.mark.slow
@pytest.mark.parametrize("name,sharing", [("albert_tiny", "all"), ("albert_tiny", "none"),
                                          ("albert_tiny", "attention"),
                                          ("albert_tiny_groups", "ffn"),
                                          ("albert_tiny_groups", "none")])
def test_formula_matches_the_built_encoder(name, sharing):
    import albert_tf
    config = load_config(name).replace(sharing=sharing)
    assert albert_tf.build_encoder(config).count_params() == encoder_parameters(config)


# ------------------------------------------------------------------------ the layer
def test_one_engine_for_every_schema():
    """training, compression and the pipeline read YAML and overrides with the same code;
    the old import path re-exports the same objects."""
    import albert_tf.compression.compression_config as compression
    import albert_tf.pipeline.pipeline_config as pipeline
    import albert_tf.training as training
    for name in ("ConfigKeyError", "ConfigValueError", "override_params",
                 "parse_params_override", "load_yaml_file", "resolve_config_file",
                 "apply_config_layers"):
        assert getattr(cfg, name) is getattr(hyperparams, name), name
    assert training.ConfigKeyError is hyperparams.ConfigKeyError
    assert training.override_params is hyperparams.override_params
    assert compression.ConfigValueError is hyperparams.ConfigValueError
    assert issubclass(compression.CompressionConfigError, hyperparams.ConfigValueError)
    assert pipeline.ConfigValueError is hyperparams.ConfigValueError
    for source in (cfg, compression, pipeline):     # nothing of the engine is duplicated
        for private in ("_coerce", "_split_top_level", "_load_yaml"):
            assert not hasattr(source, private), (source.__name__, private)


def test_compression_and_pipeline_errors_name_source_and_key():
    from albert_tf.compression.compression_config import build_compression_config
    from albert_tf.pipeline.pipeline_config import load_pipeline_config
    with pytest.raises(hyperparams.ConfigKeyError,
                       match=r"^--params_override: unknown config key 'qat\.bogus'"):
        build_compression_config([], ["qat.bogus=1"])
    with pytest.raises(hyperparams.ConfigKeyError,
                       match=r"^--params_override: unknown config key 'pretrain\.bogus'"):
        load_pipeline_config("run_quick", ["pretrain.bogus=1"])
    with pytest.raises(hyperparams.ConfigValueError, match=r"qat\.activation_ranges: 'x' is "
                       r"not one of \['per_depth', 'shared'\]"):
        build_compression_config([], ["qat.activation_ranges=x"])
    config = build_compression_config([], ["pruning.targets=[on,yes]"])
    assert config.pruning.targets == ["on", "yes"]            # string fields keep the text
    assert "targets:\n  - 'on'\n  - 'yes'" in config.to_yaml()
    pipeline = load_pipeline_config("run_quick", ["finetune.task=on"])
    assert pipeline.finetune.task == "on"


def test_to_yaml_round_trip_of_every_schema(tmp_path):
    from albert_tf.compression.compression_config import CompressionConfig
    from albert_tf.pipeline.pipeline_config import PipelineConfig
    experiment = cfg.override_params(cfg.ExperimentConfig(), hyperparams.parse_params_override(
        "model.sharing=none,model.hidden_act=on,model.layer_norm_eps=1e-6", keep_text=True))
    assert experiment.model.hidden_act == "on" and experiment.model.layer_norm_eps == 1e-6
    for config in (experiment,
                   CompressionConfig(stages=["qat"]), PipelineConfig(seed=7)):
        path = tmp_path / "c.yaml"
        path.write_text(hyperparams.to_yaml(config))
        loaded = hyperparams.apply_config_layers(type(config)(), [str(path)])
        assert hyperparams.as_dict(loaded) == hyperparams.as_dict(config)


# ----------------------------------------------------------------- model.<field>
def test_model_params_has_every_albert_config_field():
    fields = [f.name for f in dataclasses.fields(cfg.ModelParams)]
    assert fields == ["config", "init_checkpoint"] + ALBERT_FIELDS
    params = cfg.ModelParams()
    assert all(getattr(params, name) is None for name in ALBERT_FIELDS)
    assert hyperparams.model_overrides(params) == {}


# A valid value of each field for albert_tiny (H=32, N=4, L=4), different from its own.
VALUES = {"vocab_size": 8000, "embedding_size": 32, "hidden_size": 64, "num_hidden_layers": 6,
          "num_hidden_groups": 2, "inner_group_num": 2, "num_attention_heads": 8,
          "intermediate_size": 128, "hidden_act": "gelu_exact", "hidden_dropout_prob": 0.1,
          "attention_probs_dropout_prob": 0.2, "max_position_embeddings": 256,
          "type_vocab_size": 3, "initializer_range": 0.05, "layer_norm_eps": 1e-6,
          "sharing": "none", "classifier_dropout_prob": 0.3, "attention_head_size": 16}


def test_every_field_has_a_test_value():
    assert sorted(VALUES) == sorted(ALBERT_FIELDS)


@pytest.mark.parametrize("field", ALBERT_FIELDS)
def test_every_field_is_settable_from_params_override(field):
    from albert_tf.training.tasks import model_config
    value = VALUES[field]
    config = cfg.build_experiment(None, [], [f"model.config=albert_tiny,model.{field}={value}"])
    assert getattr(config.model, field) == value
    albert = model_config(config)
    assert getattr(albert, field) == value
    base = load_config("albert_tiny")
    assert albert == base.replace(**{field: value})
    assert f"  {field}: " in config.to_yaml()


def test_fields_from_yaml_file_and_experiment_yaml(tmp_path):
    from albert_tf.training.tasks import model_config
    path = tmp_path / "bert_like.yaml"
    path.write_text("model:\n  config: albert_tiny\n  sharing: none\n  embedding_size: 32\n"
                    "  hidden_act: relu\n")
    config = cfg.build_experiment(None, [str(path)])
    albert = model_config(config)
    assert albert.sharing == "none" and albert.is_bert and albert.hidden_act == "relu"
    again = cfg.build_experiment(None, [str(path)], ["model.sharing=all"])  # later wins
    assert model_config(again).sharing == "all"


@pytest.mark.parametrize("override,key,words", [
    ("model.sharing=bogus", "model.sharing", "unknown mode 'bogus'"),
    ("model.hidden_size=-1", "model.hidden_size", "must be a positive integer"),
    ("model.nosuchfield=1", "model.nosuchfield", "unknown config key"),
    ("model.hidden_act=yes", "model.hidden_act", "unknown activation 'yes'"),
    ("model.hidden_dropout_prob=1.5", "model.hidden_dropout_prob", "[0, 1)"),
    ("model.num_hidden_layers=two", "model.num_hidden_layers", "expected an integer"),
    ("model.layer_norm_eps=0", "model.layer_norm_eps", "positive finite"),
])
def test_bad_model_values_are_one_line_errors_naming_the_key(override, key, words):
    with pytest.raises((hyperparams.ConfigKeyError, hyperparams.ConfigValueError)) as e:
        cfg.build_experiment(None, [], [override])
    message = str(e.value)
    assert "\n" not in message and key in message and words in message, message


def test_overrides_checked_against_the_base_config():
    """Rules between fields need the model config: ``num_attention_heads=5`` with H=32."""
    from albert_tf.training.tasks import model_config
    config = cfg.build_experiment(None, [], ["model.config=albert_tiny,"
                                             "model.num_attention_heads=5"])
    with pytest.raises(hyperparams.ConfigValueError) as e:
        model_config(config)
    assert str(e.value).startswith("model.num_attention_heads: with the model config's")
    assert "not divisible by num_attention_heads=5" in str(e.value)
    config = cfg.build_experiment(None, [], ["model.config=albert_tiny,model.hidden_size=30"])
    with pytest.raises(hyperparams.ConfigValueError, match=r"^model\.hidden_size: 30 is not"):
        model_config(config)


# --------------------------------------------------------------- the binary, end to end
def _finetune(model_dir, *overrides, data_dir=None):
    return subprocess.run(
        [sys.executable, "-m", "albert_tf.bin.finetune", "--task=sst2", "--config_file=tiny_ci",
         f"--model_dir={model_dir}", "--mode=train", *overrides],
        env=_env(data_dir), cwd=ROOT, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_finetune_sharing_none_trains_an_unshared_encoder(tmp_path, data_dir):
    import numpy as np
    import tensorflow as tf
    result = _finetune(tmp_path, "--params_override=model.sharing=none,trainer.train_steps=5,"
                       "trainer.steps_per_loop=5,trainer.checkpoint_interval=5",
                       data_dir=data_dir)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    with open(tmp_path / "final" / "config.json") as f:
        saved = json.load(f)
    assert saved["sharing"] == "none" and saved["num_hidden_layers"] == 4
    assert "  sharing: none\n" in (tmp_path / "experiment.yaml").read_text()

    albert = AlbertConfig.from_dict(saved)
    assert albert == load_config("albert_tiny").replace(vocab_size=8000, sharing="none")
    head = albert.hidden_size * 2 + 2                      # SST-2: 2 classes
    expected = encoder_parameters(albert) + head
    shared = encoder_parameters(albert.replace(sharing="all")) + head
    L = albert.num_hidden_layers
    layer = encoder_parameters(albert.replace(num_hidden_layers=2, sharing="none")) - \
        encoder_parameters(albert.replace(num_hidden_layers=1, sharing="none"))
    assert expected - shared == (L - 1) * layer
    variables = tf.train.list_variables(str(tmp_path / "final" / "weights"))
    saved_count = sum(int(np.prod(shape)) for name, shape in variables
                      if not name.startswith("_"))
    assert saved_count == expected == 165_954 and shared == 140_322
    layer_names = {name.split("/")[0] for name, _ in variables if "_inner_" in name}
    assert layer_names == {f"layer_{i}_inner_0_{part}" for i in range(L)
                           for part in ("attention", "ffn")}


@pytest.mark.parametrize("override,key", [("model.sharing=bogus", "model.sharing"),
                                          ("model.hidden_size=-1", "model.hidden_size"),
                                          ("model.nosuchfield=1", "model.nosuchfield")])
def test_finetune_bad_model_value_is_one_line(tmp_path, override, key):
    result = _finetune(tmp_path / "run", f"--params_override={override}")
    assert result.returncode == 2, result.stderr[-2000:]
    errors = [line for line in result.stderr.splitlines()
              if line.startswith("albert-tf-finetune: error:")]
    assert len(errors) == 1 and key in errors[0], result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert not os.path.exists(tmp_path / "run" / "experiment.yaml")
