"""The binaries end to end (pretrain on synthetic TFRecords, finetune on RTE / CoLA of
../shared/data) and clear errors for bad input."""

import os
import subprocess
import sys

import pytest

import albert_tf
from albert_tf.training.experiment_config import build_experiment
from albert_tf.training.trainer import main_guard, run_experiment
from tests import training_fixtures

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _env():
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    env.pop("TF_CONFIG", None)
    return env


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    directory = tmp_path_factory.mktemp("records")
    write = training_fixtures.write_pretraining_tfrecords
    write(str(directory / "train.tfrecord"), 64, 32, 5, seed=0)
    write(str(directory / "heldout.tfrecord"), 32, 32, 5, seed=1)
    return directory


def _pretrain_config(model_dir, records, *overrides):
    from albert_tf.bin.pretrain import defaults
    return build_experiment(defaults(), ["tiny_ci"], [
        f"model_dir={model_dir}", f"task.train_data.input_path={records / 'train.tfrecord'}",
        f"task.validation_data.input_path={records / 'heldout.tfrecord'}", *overrides])


def _guarded(config, capsys, mode="train"):
    code = main_guard(lambda: run_experiment(config, mode) and None)
    return code, capsys.readouterr().err


@pytest.mark.slow
def test_pretrain_binary(tmp_path, records):
    result = subprocess.run(
        [sys.executable, "-m", "albert_tf.bin.pretrain", "--config_file=tiny_ci",
         f"--model_dir={tmp_path}", f"--train_files={records / 'train.tfrecord'}",
         f"--eval_files={records / 'heldout.tfrecord'}", "--num_train_steps=10",
         "--params_override=trainer.steps_per_loop=5", "--learning_rate=0.002"],
        env=_env(), cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    assert "step 10/10" in result.stdout and "eval at step 10: mlm_loss" in result.stdout
    model = albert_tf.load_pretrainer(str(tmp_path / "final"))
    assert model.albert_config.hidden_size == 32
    assert os.path.exists(tmp_path / "best" / "config.json")
    with open(tmp_path / "experiment.yaml") as f:
        text = f.read()
    assert "learning_rate: 0.002" in text and "train_steps: 10" in text


def test_missing_tfrecord_names_the_file(tmp_path, records, capsys):
    config = _pretrain_config(tmp_path, records,
                              f"task.train_data.input_path={tmp_path / 'nope.tfrecord'}")
    code, err = _guarded(config, capsys)
    assert code == 2 and "nope.tfrecord" in err


def test_corrupt_tfrecord_names_the_file(tmp_path, records, capsys):
    bad = tmp_path / "corrupt.tfrecord"
    data = (records / "train.tfrecord").read_bytes()
    bad.write_bytes(data[:100] + b"\x00garbage" * 50 + data[600:])
    config = _pretrain_config(tmp_path / "run", records, f"task.train_data.input_path={bad}")
    code, err = _guarded(config, capsys)
    assert code == 2 and "corrupt.tfrecord" in err and "Traceback" not in err


def test_unknown_override_key_names_the_key(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "albert_tf.bin.finetune", "--task=rte", f"--model_dir={tmp_path}",
         "--params_override=trainer.train_stepz=5"],
        env=_env(), cwd=ROOT, capture_output=True, text=True, timeout=400)
    assert result.returncode == 2
    assert "trainer.train_stepz" in result.stderr and "Traceback" not in result.stderr


def test_init_checkpoint_of_another_shape(tmp_path, records, capsys):
    other = albert_tf.build_pretrainer(albert_tf.load_config("albert_tiny").replace(
        embedding_size=8))
    albert_tf.save_model_dir(other, str(tmp_path / "other"))
    config = _pretrain_config(tmp_path / "run", records,
                              f"model.init_checkpoint={tmp_path / 'other'}")
    code, err = _guarded(config, capsys)
    assert code == 2
    assert "embeddings/word_embeddings/embeddings" in err and str(tmp_path / "other") in err


@pytest.mark.slow
@pytest.mark.parametrize("task,metric", [("rte", "accuracy"), ("cola", "matthews_corr")])
def test_finetune_glue_end_to_end(tmp_path, data_dir, task, metric):
    from albert_tf.bin.finetune import defaults
    config = build_experiment(defaults(), ["tiny_ci"], [
        f"model_dir={tmp_path}", f"task.name={task}", f"task.data_dir={data_dir}",
        "task.type=classification", "task.max_seq_length=64", "trainer.train_steps=6",
        "trainer.steps_per_loop=3", "trainer.validation_steps=2",
        "task.validation_data.global_batch_size=64", "task.validation_data.split=dev"])
    result = run_experiment(config, "train_and_eval")
    assert result["eval"]["step"] == 6 and metric in result["eval"]
    assert result["eval"]["examples"] == 128
    info = albert_tf.checkpoints.load_task_info(str(tmp_path / "final"))
    assert info.task == task and info.head == "classification"
