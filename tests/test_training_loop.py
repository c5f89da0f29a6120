"""The training loop on a synthetic task: train_and_eval, resume, init, best export, predict."""

import json
import os

import numpy as np
import pytest

import albert_tf
from albert_tf.training.trainer import progress_line, run_experiment
from tests import training_fixtures


def _run(model_dir, mode="train_and_eval", steps=20, **changes):
    config = training_fixtures.tiny_experiment(str(model_dir), steps=steps)
    for key, value in changes.items():
        section, name = key.split("__")
        setattr(getattr(config, section), name, value)
    lines = []
    result = run_experiment(config, mode, task=training_fixtures.ToyClassificationTask(config),
                            log=lines.append)
    return result, lines


@pytest.mark.slow
def test_train_and_eval_writes_checkpoints_summaries_and_model_dirs(tmp_path):
    result, lines = _run(tmp_path, steps=20)
    assert result["step"] == 20
    names = set(os.listdir(tmp_path))
    assert {"checkpoint", "final", "best", "summaries", "experiment.yaml",
            "eval_results.json", "best_metric.json"} <= names
    assert os.path.exists(tmp_path / "ckpt-20.index") and os.path.exists(tmp_path / "ckpt-10.index")
    assert result["eval"]["step"] == 20 and 0.0 <= result["eval"]["accuracy"] <= 1.0
    # progress lines: steps/s and ETA; eval lines; TensorBoard event files
    assert any("steps/s" in l and "ETA" in l and l.startswith("step 5/20") for l in lines)
    assert any(l.startswith("eval at step 10") for l in lines)
    assert os.listdir(tmp_path / "summaries" / "train") and os.listdir(tmp_path / "summaries" / "eval")
    # exported model directory restores into a fresh classifier with the same outputs
    model, info = albert_tf.checkpoints.load_task_model(str(tmp_path / "final"))
    assert info.head == "classification" and info.label_list == ("0", "1")
    trained = result["trainer"].model
    batch = {k: np.ones((2, 8), np.int32) for k in albert_tf.INPUT_NAMES}
    np.testing.assert_allclose(model(batch)["logits"].numpy(), trained(batch)["logits"].numpy(),
                               rtol=1e-5, atol=1e-6)
    with open(tmp_path / "best_metric.json") as f:
        assert json.load(f)["metric"] == "accuracy"

    # Same command again: resumes at step 20 >= train_steps, trains nothing more.
    again, lines = _run(tmp_path, steps=20)
    assert again["step"] == 20 and any("resumed from" in l and "step 20" in l for l in lines)
    # Longer run: continues from 20 with a continuous step count.
    longer, lines = _run(tmp_path, steps=30, mode="train")
    steps = [int(l.split()[1].split("/")[0]) for l in lines if l.startswith("step ")]
    assert steps == [25, 30]

    # eval and predict modes on the trained model dir
    evaluated, _ = _run(tmp_path, steps=30, mode="eval")
    assert evaluated["eval"]["step"] == 30
    predicted, _ = _run(tmp_path, steps=30, mode="predict")
    with open(predicted["predictions"]) as f:
        rows = f.read().splitlines()
    assert rows[0] == "index\tprediction" and len(rows) == 1 + 96


@pytest.mark.slow
def test_learns_the_toy_task(tmp_path):
    result, _ = _run(tmp_path, steps=50, trainer__validation_interval=50,
                     trainer__checkpoint_interval=50, trainer__steps_per_loop=25,
                     optimizer__learning_rate=3e-3, optimizer__bias_correction=True)
    assert result["eval"]["accuracy"] > 0.8, result["eval"]


def test_init_checkpoint_of_another_shape_names_the_tensor(tmp_path):
    other = albert_tf.build_classifier(albert_tf.load_config("albert_tiny").replace(
        hidden_size=16, intermediate_size=32), num_classes=2)
    albert_tf.save_model_dir(other, str(tmp_path / "other"))
    with pytest.raises(albert_tf.CheckpointError) as e:
        _run(tmp_path / "run", steps=5, model__init_checkpoint=str(tmp_path / "other"))
    assert "embedding_projection/kernel" in str(e.value) or "group_0" in str(e.value)
    assert str(tmp_path / "other") in str(e.value)


def test_init_checkpoint_loads_encoder_weights(tmp_path):
    from albert_tf.backend import tf
    from albert_tf.training.trainer import Trainer
    pretrainer = albert_tf.build_pretrainer(albert_tf.load_config("albert_tiny"))
    albert_tf.save_model_dir(pretrainer, str(tmp_path / "pre"))
    config = training_fixtures.tiny_experiment(str(tmp_path / "run"), steps=5)
    config.model.init_checkpoint = str(tmp_path / "pre")
    lines = []
    trainer = Trainer(config, training_fixtures.ToyClassificationTask(config),
                      tf.distribute.get_strategy(), log=lines.append)
    trainer.restore_or_initialize()          # what training starts from
    assert any(l.startswith("initialized from") for l in lines)
    model = trainer.model
    np.testing.assert_array_equal(
        model.get_layer("embeddings").embedding_table.numpy(),
        pretrainer.get_layer("embeddings").embedding_table.numpy())


def test_eval_and_predict_refuse_weights_that_were_never_trained(tmp_path):
    """Regression (issue #27): --mode=eval / predict without a checkpoint scored random
    weights and exited 0; from a pretrained --init_checkpoint its head was random."""
    from albert_tf.user_inputs import InputError
    for mode in ("eval", "predict"):
        with pytest.raises(InputError, match="no training checkpoint"):
            _run(tmp_path / "nothing", mode=mode)
    pretrainer = albert_tf.build_pretrainer(albert_tf.load_config("albert_tiny"))
    albert_tf.save_model_dir(pretrainer, str(tmp_path / "pre"))
    with pytest.raises(albert_tf.CheckpointError, match="would stay random"):
        _run(tmp_path / "run", steps=5, mode="eval", model__init_checkpoint=str(tmp_path / "pre"))
    assert sorted(os.listdir(tmp_path)) == ["pre"]      # no run directory left behind


def test_progress_line_format():
    line = progress_line(50, 200, {"loss": 1.5, "learning_rate": 1e-4}, 2.0, 1234.0, 25.0)
    assert line.startswith("step 50/200 (25%)") and "2.00 steps/s" in line
    assert "ETA 1m15s" in line and "1,234 tok/s" in line


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
def test_mixed_precision_training_steps(tmp_path, policy):
    result, _ = _run(tmp_path, mode="train", steps=4, runtime__mixed_precision_dtype=policy,
                     trainer__steps_per_loop=2, trainer__checkpoint_interval=4)
    assert result["step"] == 4 and np.isfinite(result["train"]["loss"])
    model = result["trainer"].model
    assert model.get_layer("classifier").compute_dtype == "float32"
    assert all(v.dtype == "float32" for v in model.trainable_variables)
    from albert_tf.backend import keras
    assert keras.mixed_precision.global_policy().name == "float32"   # restored afterwards


def test_time_pretraining_steps_times_the_training_step(tmp_path):
    """`time_pretraining_steps` (what studies/pretraining/throughput.py and
    studies/pretraining/input_throughput.py time): the trainer's step on an in-memory
    `synthetic_batch`."""
    from albert_tf.data.pretraining import synthetic_batch
    from albert_tf.training.trainer import pretraining_step_config, time_pretraining_steps
    batch = synthetic_batch(albert_tf.load_config("albert_tiny"), 2, 16, 3)
    assert batch["input_word_ids"].shape == (2, 16) and batch["masked_lm_ids"].shape == (2, 3)
    assert (batch["input_word_ids"][:, 0] == 2).all()
    rows = np.arange(2)[:, None]
    assert (batch["input_word_ids"][rows, batch["masked_lm_positions"]] == 4).all()
    config = pretraining_step_config("albert_tiny", 2, 16, 3, str(tmp_path / "model"))
    result = time_pretraining_steps(config, batch, warmup=1, steps=2)
    assert result["seconds"] > 0 and np.isfinite(result["loss"]) and result["loss"] > 0
    assert not (tmp_path / "model" / "checkpoint").exists()    # timing writes no checkpoint
