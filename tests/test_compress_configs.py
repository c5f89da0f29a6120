"""Every shipped compression config (official_configs/experiments/, those with ``stages``)
runs, or is refused before any model loads (issue #44): the checks a model's config.json
decides run with the other checks, without TensorFlow (`compression_config.check_run`),
and every TFLite directory a run writes is an export the edge runner takes as it is
(``tflite_int8/`` lacked its metadata.json)."""

from __future__ import annotations

import json
import os

import pytest
import yaml

from albert_tf import resources
from albert_tf.compression.compression_config import (CompressionConfigError,
                                                     build_compression_config, check_run,
                                                     set_train_steps)


def shipped_compress_configs() -> list[str]:
    """The shipped experiment files that configure albert-tf-compress (they list stages)."""
    names = []
    for name in resources.experiment_names():
        with open(resources.experiment_path(name), encoding="utf-8") as f:
            if "stages" in (yaml.safe_load(f) or {}):
                names.append(name)
    return names


CONFIGS = shipped_compress_configs()


def _config_json(directory, heads: int) -> str:
    """A directory holding only the config.json of albert_mini (the tour's model shape)
    with ``heads`` attention heads: all the preflight reads."""
    from albert_tf.config import load_config
    os.makedirs(directory)
    config = load_config("albert_mini").replace(num_attention_heads=heads)
    with open(os.path.join(directory, "config.json"), "w", encoding="utf-8") as f:
        json.dump(config.to_dict(), f)
    return str(directory)


def _preflight(name: str, init_model: str, model_dir: str, steps: int = 2):
    config = build_compression_config([name])
    config.init_model, config.model_dir = init_model, model_dir
    set_train_steps(config, steps)
    check_run(config)
    return config


def test_the_shipped_compress_configs_are_found():
    assert set(CONFIGS) >= {"compress_sst2_pruning", "compress_sst2_qat", "compress_sst2_distill",
                            "compress_sst2_prune_qat", "compress_sst2_structured"}
    assert "compress_sst2_start_albert_small" not in CONFIGS     # a finetuning config


@pytest.mark.parametrize("name", CONFIGS)
def test_each_config_passes_or_is_refused_before_loading_on_the_tour_model(name, tmp_path):
    """On the tour's model shape (albert_mini: 2 heads) every config but structured passes
    the preflight; structured's 25% of 2 heads removes none, and the one line says which
    fraction removes one. On 4 heads it passes too."""
    tour_shape = _config_json(tmp_path / "tour", heads=2)
    if name != "compress_sst2_structured":
        _preflight(name, tour_shape, str(tmp_path / "out"))
        return
    with pytest.raises(CompressionConfigError) as refused:
        _preflight(name, tour_shape, str(tmp_path / "out"))
    message = str(refused.value)
    assert "\n" not in message
    assert "structured.head_fraction: 0.25 of 2 heads rounds to none removed" in message
    assert "--params_override=structured.head_fraction=0.5" in message
    _preflight(name, _config_json(tmp_path / "four", heads=4), str(tmp_path / "out"))
    fixed = build_compression_config([name], ["structured.head_fraction=0.5"])
    fixed.init_model, fixed.model_dir = tour_shape, str(tmp_path / "out")
    check_run(fixed)
    assert not os.path.exists(tmp_path / "out")


def test_the_suggested_fraction_removes_a_head():
    from albert_tf.compression.compression_config import StructuredConfig, pruned_config
    from albert_tf.config import load_config
    for heads in (2, 3, 4, 12, 16):
        config = load_config("albert_mini").replace(num_attention_heads=heads,
                                                    attention_head_size=8)
        with pytest.raises(CompressionConfigError) as refused:
            pruned_config(config, StructuredConfig(head_fraction=0.4 / heads))
        suggested = float(str(refused.value).split("head_fraction=")[1].split(" ")[0])
        assert pruned_config(config, StructuredConfig(head_fraction=suggested)) \
            .num_attention_heads == heads - 1


@pytest.mark.slow
@pytest.mark.parametrize("name", CONFIGS)
def test_each_config_runs_on_a_tiny_model_and_its_tflite_runs(name, tmp_path, data_dir):
    """Two optimizer steps per stage on a random 4-head albert_tiny classifier and 48 SST-2
    rows: the run writes model/, report.json and TFLite export directories that the edge
    runner opens from their metadata.json."""
    from albert_tf.compression.compressor import run
    from albert_tf.runtime.runner import open_runner
    from tests.compression_fixtures import tiny_config, tiny_model_dir, tiny_sst2_dir
    init = tiny_model_dir(str(tmp_path / "m"), tiny_config(num_hidden_layers=2))
    config = _preflight(name, init, str(tmp_path / "out"))
    config.data.data_dir = tiny_sst2_dir(str(tmp_path / "data"), data_dir, 32, 16)
    config.qat.calibration_examples = 8
    lines = []
    report = run(config, log=lines.append)
    assert lines[-1].startswith(f"wrote {os.path.join(config.model_dir, 'model')}")
    assert os.path.isfile(os.path.join(config.model_dir, "report.json"))
    assert set(report["tflite"]) == ({"float", "int8"} if "qat" in config.stages else {"float"})
    for model_file in report["tflite"].values():
        runner = open_runner(os.path.dirname(model_file))
        [answer] = runner.predict(["a gorgeous , witty film"])
        assert answer["label"] in ("0", "1")
