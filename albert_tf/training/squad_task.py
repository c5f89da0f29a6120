"""SQuAD v1.1 / v2.0 span extraction as a training task (exact match and F1).

``task.data_dir`` holds the SQuAD JSON files: ``train-v1.1.json`` / ``dev-v1.1.json``,
``train-v2.0.json`` / ``dev-v2.0.json`` or ``train.json`` / ``dev.json``. SQuAD 2.0
(unanswerable questions) is detected from the data.
"""

from __future__ import annotations

import json
import os

from albert_tf.backend import tf
from albert_tf.training import metrics as metrics_lib
from albert_tf.training.task_base import MODEL_INPUTS, Task, TextTask, resolve_path

FILE_NAMES = {"train": ("train-v2.0.json", "train-v1.1.json", "train.json"),
              "dev": ("dev-v2.0.json", "dev-v1.1.json", "dev.json"),
              "test": ("test-v2.0.json", "test-v1.1.json", "test.json")}


class SquadTask(Task):
    """Span extraction: start/end logits over the ``[CLS] question [SEP] context [SEP]``."""

    main_metric = "f1"
    main_metric_comp = "higher"

    def __init__(self, config, tokenizer=None):
        super().__init__(config)
        self._tokenizer = tokenizer
        self._cache: dict[str, tuple] = {}

    tokenizer = TextTask.tokenizer

    def _file(self, split: str) -> str:
        directory = resolve_path(self.config.task.data_dir)
        for name in FILE_NAMES.get(split, (split,)):
            path = os.path.join(directory, name)
            if os.path.exists(path):
                return path
        raise FileNotFoundError(f"no SQuAD {split} file in {directory!r} (looked for "
                                f"{', '.join(FILE_NAMES.get(split, (split,)))}).")

    def split_data(self, split: str, is_training: bool):
        """``(examples, features)`` of a split (cached)."""
        key = f"{split}:{is_training}"
        if key not in self._cache:
            from albert_tf.data import squad
            task = self.config.task
            examples = squad.read_squad_examples(self._file(split), is_training=is_training)
            features = squad.convert_examples_to_features(
                examples, self.tokenizer, task.max_seq_length, task.doc_stride,
                task.max_query_length, is_training=is_training)
            if not features:
                raise ValueError(f"SQuAD {split}: no features (empty file?).")
            self._cache[key] = (examples, features)
        return self._cache[key]

    def build_inputs(self, data_config, input_context=None) -> tf.data.Dataset:
        from albert_tf.data.squad import squad_dataset
        _, features = self.split_data(data_config.split, data_config.is_training)
        seed = data_config.shuffle_seed
        if seed is None:
            seed = self.config.runtime.seed
        return squad_dataset(features, data_config.global_batch_size, data_config.is_training,
                             seed=seed, input_context=input_context)

    @staticmethod
    def features(inputs) -> dict:
        features = inputs[0] if isinstance(inputs, (tuple, list)) else inputs
        return {k: features[k] for k in MODEL_INPUTS}

    def train_loss(self, inputs, outputs):
        labels = inputs[1]
        start = metrics_lib.sparse_xent(labels["start_positions"], outputs["start_logits"])
        end = metrics_lib.sparse_xent(labels["end_positions"], outputs["end_logits"])
        loss, _, _ = metrics_lib.weighted_mean_loss((start + end) / 2.0)
        return loss, {}

    def eval_outputs(self, inputs, outputs) -> dict:
        return {"start_logits": tf.cast(outputs["start_logits"], tf.float32),
                "end_logits": tf.cast(outputs["end_logits"], tf.float32),
                "unique_ids": inputs["unique_ids"]}

    def _predictions(self, outputs, split: str) -> tuple[list, dict]:
        from albert_tf.data.squad import postprocess_predictions
        examples, features = self.split_data(split, False)
        row = {int(u): i for i, u in enumerate(outputs["unique_ids"])}
        order = [row[f.unique_id] for f in features]
        task = self.config.task
        version_2 = any(e.is_impossible for e in examples)
        predictions = postprocess_predictions(
            examples, features, outputs["start_logits"][order], outputs["end_logits"][order],
            n_best_size=task.n_best_size, max_answer_length=task.max_answer_length,
            version_2_with_negative=version_2)
        return examples, predictions

    def reduce_eval(self, outputs):
        examples, predictions = self._predictions(
            outputs, self.config.task.validation_data.split)
        from albert_tf.data.squad import gold_answers
        result = metrics_lib.squad_metrics(predictions, gold_answers(examples))
        result["examples"] = float(len(examples))
        return result

    def predict(self, model, outputs, path: str) -> str:
        if path.endswith(".tsv"):
            path = path[:-4] + ".json"
        _, predictions = self._predictions(outputs, self.config.task.predict_data.split)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(predictions, f, indent=1, ensure_ascii=False)
        return path

    def export_info(self):
        from albert_tf.checkpoints import TaskInfo
        return (TaskInfo(task=self.config.task.name or "squad", head="span",
                         max_seq_length=self.config.task.max_seq_length,
                         do_lower_case=self.config.task.do_lower_case, text_pair=True),
                self._vocab_or_none())

    def tokens(self, inputs) -> tf.Tensor:
        return tf.reduce_sum(tf.cast(self.features(inputs)["input_mask"], tf.float32))


__all__ = ["SquadTask"]
