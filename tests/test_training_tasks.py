"""SQuAD (span extraction, EM/F1) and a custom TSV regression task (Pearson/Spearman),
end to end through the trainer on tiny synthetic files."""

import json
import os

import pytest

import albert_tf
from albert_tf.training.experiment_config import build_experiment
from albert_tf.training.trainer import run_experiment

COMMON = ["task.max_seq_length=64", "trainer.train_steps=4", "trainer.steps_per_loop=2",
          "trainer.checkpoint_interval=4", "trainer.validation_interval=4",
          "trainer.validation_steps=-1", "task.validation_data.global_batch_size=16"]


def _squad_json(n):
    paragraphs = []
    for i in range(n):
        name = ["paris", "rome", "berlin", "madrid"][i % 4]
        context = f"the film was shot in {name} during the summer of {1990 + i}."
        paragraphs.append({"context": context, "qas": [{
            "id": f"q{i}", "question": "where was the film shot?",
            "answers": [{"text": name, "answer_start": context.index(name)}]}]})
    return {"version": "1.1", "data": [{"title": "t", "paragraphs": paragraphs}]}


@pytest.mark.slow
def test_squad_task(tmp_path):
    data = tmp_path / "squad"
    data.mkdir()
    (data / "train-v1.1.json").write_text(json.dumps(_squad_json(16)))
    (data / "dev-v1.1.json").write_text(json.dumps(_squad_json(8)))
    from albert_tf.bin.finetune import defaults
    config = build_experiment(defaults(), ["tiny_ci", "finetune_squad_albert_mini"], [
        f"model_dir={tmp_path / 'model'}", f"task.data_dir={data}", "model.config=albert_tiny",
        "model.vocab_size=8000", "task.doc_stride=32", "task.max_query_length=16",
        "task.train_data.global_batch_size=4", *COMMON])
    result = run_experiment(config, "train_and_eval")
    assert {"exact_match", "f1"} <= set(result["eval"]) and result["eval"]["examples"] == 8
    assert albert_tf.checkpoints.load_task_info(str(tmp_path / "model" / "final")).head == "span"
    config.task.predict_data.split = "dev"
    predicted = run_experiment(config, "predict")
    with open(predicted["predictions"]) as f:
        assert set(json.load(f)) == {f"q{i}" for i in range(8)}


@pytest.mark.slow
def test_custom_tsv_regression_task(tmp_path):
    rows = ["sentence\tscore"] + [f"{'good ' * (i % 5)}movie number {i}\t{i % 5}.0"
                                  for i in range(40)]
    (tmp_path / "train.tsv").write_text("\n".join(rows) + "\n")
    (tmp_path / "dev.tsv").write_text("\n".join(rows[:17]) + "\n")
    from albert_tf.bin.finetune import defaults
    config = build_experiment(defaults(), ["tiny_ci"], [
        f"model_dir={tmp_path / 'model'}", "task.name=goodness", f"task.data_dir={tmp_path}",
        "task.train_file=train.tsv", "task.dev_file=dev.tsv", "task.label_column=score",
        "task.is_regression=true", "task.type=classification", *COMMON])
    result = run_experiment(config, "train_and_eval")
    assert {"pearson", "spearman", "pearson_spearman"} <= set(result["eval"])
    assert result["eval"]["examples"] == 16
    info = albert_tf.checkpoints.load_task_info(str(tmp_path / "model" / "final"))
    assert info.head == "regression" and info.task == "goodness"
    assert os.path.exists(tmp_path / "model" / "best_metric.json")


def test_resolve_task_type(tmp_path):
    """albert-tf-finetune's task.type: SQuAD by name, a custom file's header asks for its
    head only when the type is the default, an explicit type is kept."""
    from albert_tf.bin.finetune import defaults
    from albert_tf.training.tasks import resolve_task_type
    (tmp_path / "choice.tsv").write_text("context\tchoice_0\tchoice_1\tlabel\na\tb\tc\t0\n")
    (tmp_path / "tags.tsv").write_text("tokens\ttags\na b\tO O\n")
    (tmp_path / "plain.tsv").write_text("sentence\tlabel\na b\t1\n")

    def resolved(name, type_=None, train_file=""):
        task = defaults().task
        task.name, task.data_dir, task.train_file = name, str(tmp_path), train_file
        task.type = type_ or task.type
        return resolve_task_type(task)

    assert resolved("sst2") == "classification"
    assert resolved("SQuAD_v2") == resolved("squad", "classification") == "squad"
    assert resolved("mine", train_file="choice.tsv") == "multiple_choice"
    assert resolved("mine", train_file=str(tmp_path / "tags.tsv")) == "token_classification"
    assert resolved("mine", train_file="plain.tsv") == "classification"
    assert resolved("mine", train_file="missing.tsv") == "classification"   # its own error later
    assert resolved("mine", "token_classification", "choice.tsv") == "token_classification"
    assert resolved("mine", "multiple_choice") == "multiple_choice"
