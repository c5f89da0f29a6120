"""Experiment configs: dataclass defaults, YAML files, params_override, clear key errors."""

import glob
import os

import pytest

from albert_tf.training import experiment_config as cfg

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_params_override_string_forms():
    assert cfg.parse_params_override("trainer.train_steps=100,task.name=sst2") == {
        "trainer.train_steps": 100, "task.name": "sst2"}
    parsed = cfg.parse_params_override("optimizer.exclude_from_weight_decay=[bias,gamma],"
                                       "optimizer.learning_rate=1e-4")
    assert parsed["optimizer.exclude_from_weight_decay"] == ["bias", "gamma"]
    config = cfg.build_experiment(None, [], ["optimizer.learning_rate=1e-4"])
    assert config.optimizer.learning_rate == pytest.approx(1e-4)
    assert cfg.parse_params_override("{trainer: {train_steps: 7}}") == {
        "trainer": {"train_steps": 7}}


def test_layering_files_then_overrides(tmp_path):
    first = tmp_path / "a.yaml"
    first.write_text("trainer:\n  train_steps: 5\n  steps_per_loop: 5\noptimizer:\n  type: adamw\n")
    second = tmp_path / "b.yaml"
    second.write_text("trainer:\n  train_steps: 9\n")
    config = cfg.build_experiment(None, [str(first), str(second)],
                                  ["trainer.steps_per_loop=3", "runtime.seed=7"])
    assert config.trainer.train_steps == 9          # later file wins
    assert config.trainer.steps_per_loop == 3       # override wins over files
    assert config.optimizer.type == "adamw"
    assert config.runtime.seed == 7
    assert config.task.train_data.global_batch_size == 32  # default kept


def test_unknown_key_names_the_key():
    with pytest.raises(cfg.ConfigKeyError) as e:
        cfg.build_experiment(None, [], ["trainer.train_stepz=10"])
    message = str(e.value)
    assert "trainer.train_stepz" in message and "train_steps" in message
    with pytest.raises(cfg.ConfigKeyError, match="taks"):
        cfg.build_experiment(None, [], ["taks.name=x"])


def test_bad_values_name_the_key():
    with pytest.raises(cfg.ConfigValueError, match="trainer.train_steps"):
        cfg.build_experiment(None, [], ["trainer.train_steps=many"])
    with pytest.raises(cfg.ConfigValueError, match="runtime.distribution_strategy"):
        cfg.build_experiment(None, [], ["runtime.distribution_strategy=gpu_farm"])
    with pytest.raises(cfg.ConfigValueError, match="runtime.mixed_precision_dtype"):
        cfg.build_experiment(None, [], ["runtime.mixed_precision_dtype=float8"])


def test_every_task_type_the_trainer_runs_validates():
    from albert_tf.heads import registry as heads
    assert {"multiple_choice", "token_classification", "squad"} <= set(heads.task_types())
    for task_type in heads.task_types():
        config = cfg.build_experiment(None, [], [f"task.type={task_type}"])
        assert heads.for_task_type(config.task.type).task_type == task_type


def test_unknown_task_type_is_one_line_naming_the_task_types():
    from albert_tf.heads import registry as heads
    with pytest.raises(cfg.ConfigValueError) as info:
        cfg.build_experiment(None, [], ["task.type=multiple_chioce"])
    message = str(info.value)
    assert "\n" not in message and message.startswith("task.type: 'multiple_chioce'")
    assert all(repr(task_type) in message for task_type in heads.task_types())
    assert "'embedding'" not in message and "'regression'" not in message   # no task type


def test_yaml_file_with_unknown_key_names_file_and_key(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("trainer:\n  bogus_key: 1\n")
    with pytest.raises(cfg.ConfigKeyError) as e:
        cfg.build_experiment(None, [str(bad)])
    assert "bad.yaml" in str(e.value) and "trainer.bogus_key" in str(e.value)


EXPERIMENTS = os.path.join(ROOT, "official_configs", "experiments")
TRAINING_EXPERIMENTS = sorted(glob.glob(os.path.join(EXPERIMENTS, "pretrain_*.yaml"))
                              + glob.glob(os.path.join(EXPERIMENTS, "finetune_*.yaml"))
                              + [os.path.join(EXPERIMENTS, "tiny_ci.yaml")])


@pytest.mark.parametrize("path", TRAINING_EXPERIMENTS)
def test_official_experiments_load(path):
    config = cfg.build_experiment(None, [path])
    assert config.trainer.train_steps > 0
    # also by bare name
    name = os.path.basename(path)[:-5]
    assert cfg.build_experiment(None, [name]).as_dict() == config.as_dict()
