"""The multiple-choice head: one of C candidate second texts for a context, and its training
task beside it (`MultipleChoiceTask`). TensorFlow is imported only when a function runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from albert_tf.heads.base import Head, lazy_tf, softmax_and_argmax
from albert_tf.heads.classification import ClassificationTask
from albert_tf.heads.decoding import softmax
from albert_tf.heads.registry import register
from albert_tf.training.task_base import custom_task_files

if TYPE_CHECKING:
    from albert_tf.backend import keras
    from albert_tf.config import AlbertConfig


@register
class MultipleChoiceHead(Head):
    """Pick one of C candidate second texts for a context: ``logits [B, C]``.

    Each (context, choice) pair is one encoder row scored by ``Dense(1)`` on the pooled
    ``[CLS]``; C is not fixed by the model. Serving: ``context`` string ``[B]`` and
    ``choices`` string ``[B, C]`` in; ``probabilities [B, C]``, ``choice_id [B]`` and the
    chosen ``choice`` string out. TFLite: one pair per id row, output ``score [batch]``
    (the runner packs the C rows of an example and takes the softmax over their scores).
    """

    name = "multiple_choice"
    head_layers = ("choice_scorer",)
    text_pair = True
    task_type = "multiple_choice"
    file_header = ("context", "choice_0", "choice_1")
    lite_tokenizer = False
    hf_task = "ForMultipleChoice"                      # pooler -> dropout -> Linear(H, 1)
    hf_dense = "choice_scorer"
    distill_output = "logits"

    def training_task(self, config, **kwargs):
        return MultipleChoiceTask(config, **kwargs)

    def build_model(self, config, info, **build_kwargs):
        build_kwargs.pop("seq_length", None)   # any number of choices and length
        return build_multiple_choice(config, **build_kwargs)

    def text_inputs(self, info):
        return ("context", "choices")

    def text_shape(self, name, batch_size=None):
        return [batch_size, None] if name == "choices" else [batch_size]

    def tokenize(self, tokenizer, texts, names):
        tf = lazy_tf()
        context, choices = tf.reshape(texts[0], [-1]), texts[1]
        check = tf.debugging.assert_equal(
            tf.size(context), tf.shape(choices)[0],
            message="context and choices must have the same batch size (one row per example)")
        with tf.control_dependencies([check]):
            num = tf.shape(choices)[1]
        features = tokenizer(tf.repeat(context, num), tf.reshape(choices, [-1]))
        return {k: tf.reshape(v, [-1, num, tf.shape(v)[-1]]) for k, v in features.items()}

    def model_features(self, features):
        return {k: v[:, None, :] for k, v in features.items()}   # one choice per row

    def outputs(self, source, outputs, features, sep_id):
        return softmax_and_argmax(outputs["logits"], "choice_id")

    def serving_strings(self, module, result, features, texts):
        return {"choice": lazy_tf().gather(texts[1], result["choice_id"], batch_dims=1)}

    def lite_outputs(self, source, model, features, sep_id):
        tf = lazy_tf()
        logits = model(self.model_features(features), training=False)["logits"]
        return {"score": tf.reshape(tf.cast(logits, tf.float32), [-1])}

    def runner_pair(self, meta):
        return True

    def runner_rows(self, text_a, text_b):
        if isinstance(text_b, str) or not text_b:
            raise ValueError("a multiple-choice model takes a list of candidate texts per "
                             "example (texts_b=[[choice, ...], ...]; --choice on the CLI)")
        return [(text_a, choice) for choice in text_b]

    def decode(self, runner, outs, rows, example):
        scores = np.array([float(np.reshape(o["score"], [-1])[0]) for o in outs])
        probs = softmax(scores)
        best = int(np.argmax(scores))
        return {"choice": example[1][best], "choice_id": best,
                "probabilities": probs.tolist()}


# -------------------------------------------------------------------------- model
def build_multiple_choice(config: "AlbertConfig", num_choices: int | None = None,
                          seq_length: int | None = None,
                          name: str = "albert_multiple_choice") -> "keras.Model":
    """Multiple choice (SWAG, RACE; `MultipleChoiceHead`): inputs ``[B, C, S]``, ``logits
    [B, C]``.

    The C choices are folded into the batch (``[B * C, S]``), scored from the pooled
    ``[CLS]`` by a Dense(1), and unfolded. ``num_choices`` / ``seq_length`` None: any C
    and S (the weights do not depend on either).
    """
    from albert_tf.backend import keras
    from albert_tf.layers import FoldChoices, UnfoldChoices
    from albert_tf.models.task_models import dropout_rate, head_dense
    from albert_tf.networks.encoder import INPUT_NAMES, AlbertFunctionalModel, encoder_graph
    inputs = {n: keras.Input(shape=(num_choices, seq_length), dtype="int32", name=n)
              for n in INPUT_NAMES}
    flat = {n: FoldChoices(name=f"fold_{n}")(t) for n, t in inputs.items()}
    encoded = encoder_graph(config, flat)
    encoded.pop("_embeddings")
    x = keras.layers.Dropout(dropout_rate(config), name="classifier_dropout")(
        encoded["pooled_output"])
    scores = head_dense(1, config, "choice_scorer")(x)                   # [B * C, 1]
    logits = UnfoldChoices(num_choices, name="unfold_choices")(
        scores if num_choices else [scores, inputs["input_word_ids"]])
    return AlbertFunctionalModel(inputs, {"logits": logits}, albert_config=config, name=name)


# ------------------------------------------------------------------ training task
class MultipleChoiceTask(ClassificationTask):
    """Pick the right second text among C (`albert_tf.data.task_data.load_multiple_choice_task`
    format); softmax cross-entropy over the C scores, accuracy (the classification task's
    loss and metrics on ``logits [B, C]``)."""

    def load_task_data(self):
        from albert_tf.data.task_data import load_multiple_choice_task
        return load_multiple_choice_task(*custom_task_files(self.config.task),
                                         name=self.config.task.name or "choice")

    def build_inputs(self, data_config, input_context=None):
        from albert_tf.data.task_data import multiple_choice_dataset
        return multiple_choice_dataset(
            self.examples(data_config.split), self.tokenizer, self.config.task.max_seq_length,
            data_config.global_batch_size, data_config.is_training, self.seed(data_config),
            input_context)

    def export_info(self):
        from albert_tf.checkpoints import TaskInfo
        task = self.config.task
        return (TaskInfo(task=task.name or "choice", head="multiple_choice",
                         max_seq_length=task.max_seq_length, do_lower_case=task.do_lower_case,
                         text_pair=True), self._vocab_or_none())
