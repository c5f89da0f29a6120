"""albert-tf-compress: YAML + overrides, errors before training, prune -> QAT end to end."""

import json
import os

import numpy as np
import pytest

from albert_tf.compression import data as data_lib
from albert_tf.compression import compressor
from albert_tf.compression.compression_config import (CompressionConfig, CompressionConfigError,
                                          build_compression_config)
from albert_tf.hyperparams import ConfigKeyError
from tests.compression_fixtures import tiny_config, tiny_model_dir, tiny_sst2_dir

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


@pytest.mark.parametrize("steps", [1, 2, 3, 7, 10, 37, 50, 99, 100, 101, 333, 1999, 2000, 5000])
@pytest.mark.parametrize("override", [
    "", "pruning.begin_step=500,pruning.end_step=1500,pruning.frequency=100",
    "pruning.schedule=constant,pruning.begin_step=100,pruning.end_step=-1",
    "pruning.train_steps=0,pruning.end_step=300,pruning.frequency=100"])
def test_num_train_steps_sets_every_stage_and_keeps_the_schedule_valid(steps, override):
    """`albert-tf-compress --num_train_steps=N` (`set_train_steps`): every stage trains N
    steps; the pruning schedule is scaled to fit and passes `validate` for any N."""
    from albert_tf.compression.compression_config import set_train_steps, validate
    config = build_compression_config(["compress_sst2_pruning"], [override] if override else [])
    config.stages = ["structured", "distillation", "pruning", "qat"]
    config.distillation.student_config = "albert_tiny"
    set_train_steps(config, steps)
    validate(config)
    p = config.pruning
    assert [getattr(config, s).train_steps for s in config.stages] == [steps] * 4
    assert 0 <= p.begin_step < steps and 1 <= p.frequency
    if p.end_step != -1:
        assert p.begin_step < p.end_step <= steps
        assert (p.end_step - p.begin_step) % p.frequency == 0


def test_num_train_steps_scales_the_shipped_schedule():
    from albert_tf.compression.compression_config import set_train_steps
    config = build_compression_config(["compress_sst2_pruning"])   # 0..1500 every 50, of 2000
    set_train_steps(config, 100)
    p = config.pruning
    assert (p.begin_step, p.end_step, p.frequency, p.train_steps) == (0, 74, 2, 100)
    config = build_compression_config(["compress_sst2_pruning"])
    set_train_steps(config, 2000)   # the config's own length: its own schedule
    p = config.pruning
    assert (p.begin_step, p.end_step, p.frequency) == (0, 1500, 50)
    with pytest.raises(CompressionConfigError, match="--num_train_steps: must be >= 1"):
        set_train_steps(config, 0)


def test_cli_num_train_steps_shortens_every_stage(tmp_path):
    import subprocess
    import sys
    import yaml
    result = subprocess.run(
        [sys.executable, "-m", "albert_tf.bin.compress", "--config_file=compress_sst2_pruning",
         "--num_train_steps=100", "--print_config"],
        capture_output=True, text=True, timeout=300, cwd=str(tmp_path))
    assert result.returncode == 0, result.stderr[-2000:]
    printed = yaml.safe_load(result.stdout)
    assert printed["pruning"]["train_steps"] == printed["qat"]["train_steps"] == 100
    assert (printed["pruning"]["end_step"], printed["pruning"]["frequency"]) == (74, 2)


@pytest.mark.slow
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
