"""The multiple-choice head: one of C candidate second texts for a context. One module: the
head (export, runner, interop), its model (`build_multiple_choice`), its data
(`load_multiple_choice_task`, `multiple_choice_dataset`) and its training task
(`MultipleChoiceTask`). TensorFlow is imported only when a function runs."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Sequence

import numpy as np

from albert_tf.data.task_data import (Example, TaskData, TaskDataError, bad_row,
                                      batch_slices, numbered_header_rows, width_problem)
from albert_tf.heads.base import (Head, lazy_tf, smoke_sentences, softmax_and_argmax,
                                  write_smoke_tsv)
from albert_tf.heads.classification import ClassificationTask, smoke_tsv_overrides
from albert_tf.heads.decoding import softmax
from albert_tf.heads.registry import register
from albert_tf.training.task_base import custom_task_files

if TYPE_CHECKING:
    from albert_tf.backend import keras
    from albert_tf.config import AlbertConfig

MULTIPLE_CHOICE_SYNTAX = ("--task=NAME --params_override=task.type=multiple_choice,"
                          "task.train_file=train.tsv,task.dev_file=dev.tsv")


#: the two choices of every context of the smoke data (`MultipleChoiceHead.smoke_files`).
SMOKE_CHOICES = ("it is bad .", "it is good .")


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
    custom_syntax = (f"multiple choice: {MULTIPLE_CHOICE_SYNTAX} (header context, choice_0, "
                     "choice_1, ..., label)")
    example_task = "rte_choice"
    lite_tokenizer = False
    hf_task = "ForMultipleChoice"                      # pooler -> dropout -> Linear(H, 1)
    hf_dense = "choice_scorer"
    distill_output = "logits"

    def training_task(self, config, **kwargs):
        return MultipleChoiceTask(config, **kwargs)

    answer_keys = ("choice", "choice_id", "probabilities")

    def smoke_files(self, directory, vocab):
        """A custom TSV task: ``context``, two choices, the right one's index."""
        rows = [(text, *SMOKE_CHOICES, i % 2) for i, text in enumerate(smoke_sentences())]
        files = write_smoke_tsv(directory, ("context", "choice_0", "choice_1", "label"), rows)
        return smoke_tsv_overrides(files, vocab, self.task_type)

    def smoke_inputs(self):
        texts = smoke_sentences(3)
        return texts, [list(SMOKE_CHOICES)] * len(texts)

    def example_data(self, data_dir, output_dir, overwrite=False):
        return rte_choice(data_dir, output_dir, overwrite=overwrite)

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


# --------------------------------------------------------------------------- data
def load_multiple_choice_task(train_file: str, dev_file: str | None = None,
                              test_file: str | None = None, name: str = "multiple_choice",
                              context_column: str = "context", label_column: str = "label"
                              ) -> TaskData:
    """A multiple-choice task: pick the right second text for a context.

    Format: TSV (CSV for ``.csv``) with a header ``context<TAB>choice_0<TAB>...<TAB>
    choice_{C-1}<TAB>label``; ``label`` is the 0-based index of the right choice (may be
    absent in the test file). Every file has the same C >= 2. Examples are
    ``Example(text_a=context, text_b=(choice_0, ...), label="<index>")``; ``label_list`` is
    ``["0", ..., "C-1"]``; the metric is accuracy.
    """
    splits, num = [], None
    skipped: dict = {}
    for path in (train_file, dev_file, test_file):
        if path is None:
            splits.append([])
            continue
        header, rows = numbered_header_rows(path)
        if context_column not in header:
            raise TaskDataError(f"{path}: no column {context_column!r} in header {header} "
                                "(multiple choice: context, choice_0, choice_1, ..., label)")
        choices = [i for i, h in enumerate(header) if h.startswith("choice_")]
        if len(choices) < 2 or (num is not None and len(choices) != num):
            raise TaskDataError(f"{path}: {len(choices)} choice_* columns; need >= 2, the "
                                "same number in every file")
        num = len(choices)
        ic = header.index(context_column)
        il = header.index(label_column) if label_column in header else None
        out = []
        for line, row in rows:
            if len(row) != len(header):
                raise bad_row(path, line, width_problem(path, row, header))
            label = None
            if il is not None:
                label = row[il].strip()
                if not label.isdigit() or int(label) >= num:
                    raise bad_row(path, line, f"label {label!r} is not the index of one of "
                                   f"its {num} choices (0 to {num - 1})")
            out.append(Example(row[ic].strip(), tuple(row[i].strip() for i in choices), label))
        skipped[os.path.basename(path)] = 0
        splits.append(out)
    return TaskData(name, splits[0], splits[1], splits[2], [str(i) for i in range(num)],
                    False, "accuracy", skipped)


def multiple_choice_dataset(examples: Sequence[Example], tokenizer, max_seq_length: int,
                            batch_size: int, is_training: bool, seed: int | None = None,
                            input_context=None):
    """(features, labels) batches; features int32 ``[B, C, S]`` (S: the longest packed
    (context, choice) pair of ``examples``, at most ``max_seq_length``), labels int32
    ``[B]`` (-1 when missing)."""
    from albert_tf.backend import tf
    if not examples:
        raise TaskDataError("no examples")
    packed = [[tokenizer.pack(ex.text_a, c, max_seq_length, pad=False) for c in ex.text_b]
              for ex in examples]
    seq = max(len(p["input_word_ids"]) for rows in packed for p in rows)
    arrays = {}
    for name, fill in (("input_word_ids", tokenizer.pad_id), ("input_mask", 0),
                       ("input_type_ids", 0)):
        out = np.full((len(packed), len(packed[0]), seq), fill, np.int32)
        for i, rows in enumerate(packed):
            for j, p in enumerate(rows):
                values = p[name] if name != "input_mask" else [1] * len(p["input_word_ids"])
                out[i, j, :len(values)] = values
        arrays[name] = out
    labels = np.array([-1 if ex.label is None else int(ex.label) for ex in examples], np.int32)
    return batch_slices(tf.data.Dataset.from_tensor_slices((arrays, labels)), len(labels),
                        batch_size, is_training, seed, input_context)


# ------------------------------------------------------------------- example data
def rte_choice(data_dir: str, output_dir: str, num_choices: int = 4, seed: int = 0,
               train_copies: int = 4, overwrite: bool = False) -> str:
    """Writes ``rte_choice/{train,dev}.tsv`` (staged: `albert_tf.data.examples.
    staged_task_folder`); returns the directory. The context is an RTE ``sentence1``; the
    right choice is its own ``sentence2``, the distractors ``sentence2`` of other rows."""
    import random

    from albert_tf.data.examples import (check_task_folder, read_rows, staged_task_folder,
                                         write_tsv)
    from albert_tf.data.task_data import expected_glue_file
    out = check_task_folder(output_dir, "rte_choice", data_dir, overwrite)
    header = ["context"] + [f"choice_{i}" for i in range(num_choices)] + ["label"]
    splits = {}
    for split in ("train", "dev"):
        rows = read_rows(expected_glue_file(data_dir, "rte", split))[1:]
        pairs = [(r[1].strip(), r[2].strip()) for r in rows if len(r) >= 4]
        rng = random.Random(f"{seed}-{split}")
        examples = []
        for i, (context, right) in [(i, p) for _ in range(train_copies if split == "train"
                                                          else 1) for i, p in enumerate(pairs)]:
            others = [pairs[j][1] for j in rng.sample(range(len(pairs)), num_choices + 2)
                      if j != i and pairs[j][1] != right][:num_choices - 1]
            label = rng.randrange(num_choices)
            choices = others[:label] + [right] + others[label:]
            examples.append([context] + choices + [str(label)])
        splits[split] = examples
    with staged_task_folder(output_dir, "rte_choice", data_dir, overwrite) as stage:
        for split, examples in splits.items():
            write_tsv(os.path.join(stage, f"{split}.tsv"), header, examples)
    return out


# ------------------------------------------------------------------ training task
class MultipleChoiceTask(ClassificationTask):
    """Pick the right second text among C (`load_multiple_choice_task`
    format); softmax cross-entropy over the C scores, accuracy (the classification task's
    loss and metrics on ``logits [B, C]``)."""

    def load_task_data(self):
        return load_multiple_choice_task(*custom_task_files(self.config.task),
                                         name=self.config.task.name or "choice")

    def build_inputs(self, data_config, input_context=None):
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
