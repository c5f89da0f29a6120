"""albert-tf-compress: YAML + overrides, errors before training, prune -> QAT end to end."""

import json
import os

import numpy as np
import pytest

from albert_tf.compression import data as data_lib
from albert_tf.compression import compressor
from albert_tf.compression.compression_config import (CompressionConfig, CompressionConfigError,
                                          build_compression_config)
from albert_tf.compression.fixtures import tiny_config, tiny_model_dir, tiny_sst2_dir
from albert_tf.hyperparams import ConfigKeyError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_yaml_files_and_overrides_layer_like_training(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("stages: [pruning, qat]\npruning: {final_sparsity: 0.7, end_step: 200, "
                    "frequency: 50, train_steps: 300}\nqat: {activation_ranges: shared}\n")
    config = build_compression_config([str(path)], ["pruning.final_sparsity=0.8,seed=3"])
    assert config.stages == ["pruning", "qat"] and config.seed == 3
    assert config.pruning.final_sparsity == 0.8 and config.qat.activation_ranges == "shared"
    with pytest.raises(ConfigKeyError, match="pruning.final_sparsty"):
        build_compression_config(params_overrides=["pruning.final_sparsty=0.8"])
    for name in sorted(os.listdir(os.path.join(ROOT, "official_configs", "experiments"))):
        if name.startswith("compress_") and "start" not in name:
            build_compression_config([name])


@pytest.mark.parametrize("override, match", [
    ("stages=[pruning],pruning.final_sparsity=1.0", "final_sparsity"),
    ("stages=[pruning],pruning.begin_step=300,pruning.end_step=100", "before begin_step"),
    ("stages=[qat,pruning]", "qat must be the last"),
    ("stages=[quantize]", "unknown stage"),
])
def test_bad_values_are_named(override, match):
    with pytest.raises(CompressionConfigError, match=match):
        build_compression_config(params_overrides=[override])


def test_unprunable_target_fails_before_any_training(tmp_path, data_dir, monkeypatch):
    def no_training(*args, **kwargs):
        raise AssertionError("training started")
    monkeypatch.setattr(data_lib, "fit_steps", no_training)
    config = CompressionConfig(init_model=tiny_model_dir(str(tmp_path / "m")),
                               model_dir=str(tmp_path / "out"), stages=["pruning"])
    config.data.data_dir = tiny_sst2_dir(str(tmp_path / "data"), data_dir, 32, 16)
    config.pruning.targets = ["attention", "attention_mask"]
    config.pruning.end_step, config.pruning.frequency, config.pruning.train_steps = 10, 5, 10
    with pytest.raises(CompressionConfigError, match="attention_mask.*cannot be pruned"):
        compressor.run(config, log=lambda m: None)


def test_cli_reports_bad_input_and_exits(tmp_path):
    # A subprocess: the binary exits the process (absl's app.run).
    import subprocess
    import sys
    result = subprocess.run(
        [sys.executable, "-m", "albert_tf.bin.compress", "--stages=pruning",
         "--params_override=pruning.final_sparsity=1.5"],
        capture_output=True, text=True, timeout=300,
        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert result.returncode == 2, result.stderr[-2000:]
    assert "pruning.final_sparsity: must be in [0, 1)" in result.stderr


def test_prune_then_qat_end_to_end(tmp_path, data_dir):
    config = CompressionConfig(
        init_model=tiny_model_dir(str(tmp_path / "m"), tiny_config(num_hidden_layers=2)),
        model_dir=str(tmp_path / "out"), stages=["pruning", "qat"])
    config.data.data_dir = tiny_sst2_dir(str(tmp_path / "data"), data_dir, 96, 32)
    config.data.batch_size = 16
    config.pruning.final_sparsity, config.pruning.begin_step = 0.5, 0
    config.pruning.end_step, config.pruning.frequency, config.pruning.train_steps = 4, 2, 5
    config.qat.train_steps = 2
    config.export.tflite = False
    config.run_eagerly = True     # graph-mode training: test_compression_pruning, benchmarks
    logs = []
    report = compressor.run(config, log=logs.append)
    assert set(report["dev"]) == {"start", "pruning", "qat"}
    assert abs(report["sparsity"]["total"] - 0.5) < 0.01
    saved = os.path.join(config.model_dir, "model")
    assert os.path.exists(os.path.join(saved, "qat.json"))
    with open(os.path.join(config.model_dir, "report.json")) as f:
        assert json.load(f)["stages"] == ["pruning", "qat"]
    from albert_tf.compression.qat import load_qat_model
    from albert_tf.export.tflite import load_qat_model as export_loader
    model = export_loader(saved)                   # the export library finds our loader
    assert model.count_params() == load_qat_model(saved).count_params()
    weights = {w.name: w.numpy() for w in model.weights}
    kernel = weights["group_0_inner_0_ffn/intermediate/kernel:0"]
    assert np.mean(kernel == 0) == pytest.approx(0.5, abs=0.01)   # QAT kept the zeros
    assert abs(report["sparsity_after_qat"]["total"] - 0.5) < 0.01
