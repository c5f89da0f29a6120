"""Finetuning the multiple-choice and token-classification heads on the example data built
from the shared data (albert_tiny, a few steps): task type from the file header, metrics,
task.json, and the binary's predict mode."""

from __future__ import annotations

import os

import pytest

from albert_tf.training.experiment_config import build_experiment
from albert_tf.training.trainer import run_experiment


@pytest.fixture(scope="module")
def examples(tmp_path_factory, data_dir):
    from albert_tf.data.examples import build_examples
    return build_examples(str(tmp_path_factory.mktemp("examples")), data_dir)


def _config(tmp_path, name, directory):
    from albert_tf.bin.finetune import defaults
    from albert_tf.training.tasks import resolve_task_type
    config = build_experiment(defaults(), ["tiny_ci"], [
        f"model_dir={tmp_path}", f"task.name={name}",
        f"task.train_file={os.path.join(directory, 'train.tsv')}",
        f"task.dev_file={os.path.join(directory, 'dev.tsv')}",
        "task.max_seq_length=48", "trainer.train_steps=4", "trainer.steps_per_loop=2",
        "trainer.validation_steps=2", "trainer.validation_interval=4",
        "task.validation_data.global_batch_size=16"])
    config.task.type = resolve_task_type(config.task)   # as albert-tf-finetune does
    return config


@pytest.mark.slow
@pytest.mark.parametrize("name,head,metric", [
    ("rte_choice", "multiple_choice", "accuracy"),
    ("sst2_tags", "token_classification", "f1")])
def test_finetune_new_heads(tmp_path, examples, name, head, metric):
    import albert_tf
    config = _config(tmp_path, name, examples[name])
    assert config.task.type == head
    result = run_experiment(config, "train_and_eval")
    assert result["eval"]["step"] == 4 and metric in result["eval"]
    assert result["eval"]["examples"] == 32
    info = albert_tf.checkpoints.load_task_info(str(tmp_path / "final"))
    assert info.task == name and info.head == head
    model, _ = albert_tf.checkpoints.load_task_model(str(tmp_path / "final"))
    assert model.count_params() > 0
    if head == "token_classification":
        assert info.label_list == ("NEG", "O", "POS")
        config.task.predict_data.split = "dev"
        config.task.predict_output = str(tmp_path / "pred.tsv")
        run_experiment(config, "predict")
        with open(tmp_path / "pred.tsv") as f:
            lines = f.read().splitlines()
        assert lines[0] == "index\ttags" and len(lines) == 873
        assert len(lines[1].split("\t")[1].split()) == 6   # "one long string of cliches ."
