"""The token-classification head: a tag for every word. One module (Model Garden's
``tasks/tagging.py``): the head (export, runner, interop), its model
(`build_token_classifier`), its data (`load_token_classification_task`,
`token_classification_dataset`) and its training task (`TokenClassificationTask`).
TensorFlow is imported only when a function runs."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Sequence

import numpy as np

from albert_tf.data.task_data import (Example, TaskData, TaskDataError, bad_row,
                                      batch_slices, numbered_header_rows, width_problem)
from albert_tf.heads.base import (Head, lazy_tf, smoke_sentences, softmax_and_argmax,
                                  write_smoke_tsv)
from albert_tf.heads.decoding import word_labels
from albert_tf.heads.registry import register
from albert_tf.training.task_base import TextTask, custom_task_files

if TYPE_CHECKING:
    from albert_tf.backend import keras
    from albert_tf.config import AlbertConfig

TOKEN_CLASSIFICATION_SYNTAX = ("--task=NAME --params_override=task.type=token_classification,"
                               "task.train_file=train.tsv,task.dev_file=dev.tsv")


@register
class TokenClassificationHead(Head):
    """Tag every word: ``logits [B, S, T]``, trained on each word's first piece.

    Serving: ``text`` in; per piece ``token`` string, ``label`` string, ``label_id`` and
    ``probabilities`` out (``[B, S]``, ``[B, S, T]``; a word's tag is its first piece's).
    The runner answers per whitespace-separated word of the text, as training tags them
    (`word_labels`): ``words`` and ``labels``.
    """

    name = "token_classification"
    head_layers = ("token_classifier",)
    text_pair = False
    task_type = "token_classification"
    file_header = ("tokens", "tags")
    custom_syntax = (f"token classification: {TOKEN_CLASSIFICATION_SYNTAX} (header tokens, "
                     "tags)")
    example_task = "sst2_tags"
    labels_required = True
    lite_tokenizer = False
    hf_task = "ForTokenClassification"                 # dropout -> classifier, no pooler
    hf_dense = "token_classifier"
    decoded_output = "probabilities"
    distill_output = "logits"

    def training_task(self, config, **kwargs):
        return TokenClassificationTask(config, **kwargs)

    answer_keys = ("words", "labels")

    def keras_loss(self):
        """The cross-entropy of ``logits [B, S, T]`` against the tags ``[B, S]`` of the words'
        first pieces (labels < 0, the other pieces and pads, weigh nothing), as training's."""
        return masked_tag_loss

    def smoke_files(self, directory, vocab):
        """A custom TSV task (``tokens``, ``tags``): the numbers of the sentences are ``NUM``."""
        from albert_tf.heads.classification import smoke_tsv_overrides
        rows = [(text, " ".join("NUM" if word.isdigit() else "O" for word in text.split()))
                for text in smoke_sentences()]
        files = write_smoke_tsv(directory, ("tokens", "tags"), rows)
        return smoke_tsv_overrides(files, vocab, self.task_type)

    def example_data(self, data_dir, output_dir, overwrite=False):
        return sst2_tags(data_dir, output_dir, overwrite=overwrite)

    def build_model(self, config, info, **build_kwargs):
        return build_token_classifier(config, len(info.label_list), **build_kwargs)

    def outputs(self, source, outputs, features, sep_id):
        return softmax_and_argmax(outputs["logits"])

    def serving_strings(self, module, result, features, texts):
        tf = lazy_tf()
        return {"label": tf.gather(module.label_names, result["label_id"]),
                "token": module.tokenizer.id_to_token(features["input_word_ids"])}

    def decode(self, runner, outs, rows, example):
        text = example[0]
        _, spans = runner.tokenizer.encode_with_offsets(text)
        pieces = int(np.sum(rows[0]["input_mask"])) - 2          # [CLS] pieces [SEP]
        label_ids = np.argmax(outs[0]["probabilities"], -1)[1:pieces + 1]
        words, labels = word_labels(text, spans[:pieces], label_ids)
        return {"words": words, "labels": [runner.labels[i] for i in labels]}


def masked_tag_loss(labels, logits):
    """Mean cross-entropy of ``logits [B, S, T]`` over the positions whose ``labels [B, S]``
    are >= 0 (a word's first piece): the token-classification loss as a Keras loss."""
    from albert_tf.training import metrics as metrics_lib
    tf = lazy_tf()
    labels = tf.cast(labels, tf.int32)
    weights = tf.cast(labels >= 0, tf.float32)
    xent = metrics_lib.sparse_xent(tf.maximum(labels, 0), tf.cast(logits, tf.float32))
    return tf.reduce_sum(xent * weights) / tf.maximum(tf.reduce_sum(weights), 1.0)


# -------------------------------------------------------------------------- model
def build_token_classifier(config: "AlbertConfig", num_classes: int,
                           seq_length: int | None = None,
                           name: str = "albert_token_classifier") -> "keras.Model":
    """Per-token tagging (NER, POS): ``logits [B, S, num_classes]``."""
    from albert_tf.backend import keras
    from albert_tf.models.task_models import dropout_rate, encode, head_dense
    from albert_tf.networks.encoder import AlbertFunctionalModel
    inputs, encoded = encode(config, seq_length)
    x = keras.layers.Dropout(dropout_rate(config), name="classifier_dropout")(
        encoded["sequence_output"])
    logits = head_dense(num_classes, config, "token_classifier")(x)
    return AlbertFunctionalModel(inputs, {"logits": logits}, albert_config=config, name=name)


# --------------------------------------------------------------------------- data
def load_token_classification_task(train_file: str, dev_file: str | None = None,
                                   test_file: str | None = None,
                                   name: str = "token_classification",
                                   label_list: Sequence[str] | None = None,
                                   tokens_column: str = "tokens", tags_column: str = "tags"
                                   ) -> TaskData:
    """A token (word) classification task: one tag per whitespace-separated word.

    Format: TSV (CSV for ``.csv``) with a header ``tokens<TAB>tags``: the words of a
    sentence separated by single spaces, and as many tags, also space-separated (``O`` for
    untagged words, by convention). ``tags`` may be absent in the test file. Examples are
    ``Example(text_a="w1 w2 ...", label=("T1", "T2", ...))``; ``label_list`` defaults to
    the sorted tags of the train file; the metric is ``f1``: micro F1 over the words whose
    gold or predicted tag is not ``O`` (`albert_tf.training.metrics.tagging_metrics`).
    """
    splits: list[list[Example]] = []
    skipped: dict = {}
    given_labels = bool(label_list)
    label_list = list(label_list) if label_list else None
    for path in (train_file, dev_file, test_file):
        if path is None:
            splits.append([])
            continue
        header, rows = numbered_header_rows(path)
        if tokens_column not in header:
            raise TaskDataError(f"{path}: no column {tokens_column!r} in header {header} "
                                "(token classification: tokens, tags)")
        it = header.index(tokens_column)
        ig = header.index(tags_column) if tags_column in header else None
        out = []
        for line, row in rows:
            if len(row) != len(header):
                raise bad_row(path, line, width_problem(path, row, header))
            words = row[it].split()
            tags = tuple(row[ig].split()) if ig is not None else None
            if not words:
                raise bad_row(path, line, "no words")
            if tags is not None and len(tags) != len(words):
                raise bad_row(path, line, f"{len(words)} words but {len(tags)} tags")
            unknown = sorted(set(tags) - set(label_list)) if tags and label_list else []
            if unknown:
                known = ("task.label_list" if given_labels else
                         f"the tags of the train file {train_file}")
                raise bad_row(path, line, f"tag {unknown[0]!r} is not one of the task's tags "
                               f"({', '.join(label_list)}: {known}), so no model of this "
                               "task can answer it")
            out.append(Example(" ".join(words), None, tags))
        skipped[os.path.basename(path)] = 0
        splits.append(out)
        if label_list is None:             # the train file's tags: dev and test are checked
            label_list = sorted({t for e in out for t in (e.label or ())})
    return TaskData(name, splits[0], splits[1], splits[2], list(label_list), False, "f1",
                    skipped)


def encode_tagged(example: Example, tokenizer, max_seq_length: int,
                  label_index: dict[str, int] | None) -> tuple[list[int], list[int]]:
    """(packed ids, labels): ``[CLS] pieces [SEP]``; each word's first piece carries its tag
    index (-2 for an untagged word), every other position -1 (negative labels are ignored
    by the loss and the metrics). Each word is encoded on its own, so its pieces are known
    whatever the vocabulary (SentencePiece: ``▁`` starts the word; WordPiece: ``##``
    continues it; neither is looked at)."""
    ids, labels = [tokenizer.cls_id], [-1]
    tags = example.label or [None] * len(example.text_a.split())
    for word, tag in zip(example.text_a.split(), tags):
        pieces = tokenizer.encode(word)
        if not pieces:
            continue
        if len(ids) + len(pieces) > max_seq_length - 1:
            break
        ids += pieces
        first = -2 if tag is None or label_index is None else label_index[tag]
        labels += [first] + [-1] * (len(pieces) - 1)
    return ids + [tokenizer.sep_id], labels + [-1]


def token_classification_dataset(examples: Sequence[Example], tokenizer, max_seq_length: int,
                                 batch_size: int, is_training: bool, label_list: Sequence[str],
                                 seed: int | None = None, input_context=None):
    """(features, labels) batches; features int32 ``[B, S]``, labels int32 ``[B, S]`` (-1:
    not a word's first piece, -2: a first piece without a tag); S = ``max_seq_length``."""
    from albert_tf.backend import tf
    if not examples:
        raise TaskDataError("no examples")
    index = {t: i for i, t in enumerate(label_list)}
    n, seq = len(examples), max_seq_length
    arrays = {"input_word_ids": np.full((n, seq), tokenizer.pad_id, np.int32),
              "input_mask": np.zeros((n, seq), np.int32),
              "input_type_ids": np.zeros((n, seq), np.int32)}
    labels = np.full((n, seq), -1, np.int32)
    for i, ex in enumerate(examples):
        ids, tags = encode_tagged(ex, tokenizer, seq, index)
        arrays["input_word_ids"][i, :len(ids)] = ids
        arrays["input_mask"][i, :len(ids)] = 1
        labels[i, :len(tags)] = tags
    return batch_slices(tf.data.Dataset.from_tensor_slices((arrays, labels)), len(labels),
                        batch_size, is_training, seed, input_context)


# ------------------------------------------------------------------- example data
TAGS = ("NEG", "O", "POS")          # the tags of sst2_tags


def sentiment_lexicon(data_dir: str) -> dict[str, str]:
    """``{word: POS|NEG}``: the one-word phrases of SST-2 train and their label."""
    from albert_tf.data import examples
    from albert_tf.data.task_data import expected_glue_file
    lexicon = {}
    for row in examples.read_rows(expected_glue_file(data_dir, "sst2", "train"))[1:]:
        if len(row) == 2 and len(row[0].split()) == 1 and row[1] in ("0", "1"):
            lexicon[row[0].strip()] = "POS" if row[1] == "1" else "NEG"
    return lexicon


def sst2_tags(data_dir: str, output_dir: str, num_train: int = 6000, seed: int = 0,
              overwrite: bool = False) -> str:
    """Writes ``sst2_tags/{train,dev}.tsv`` (staged: `albert_tf.data.examples.
    staged_task_folder`); returns the directory. Every word of an SST-2 text is tagged
    ``POS`` / ``NEG`` when it is in the `sentiment_lexicon`, else ``O``."""
    import random

    from albert_tf.data import examples
    from albert_tf.data.task_data import expected_glue_file
    out = examples.check_task_folder(output_dir, "sst2_tags", data_dir, overwrite)
    lexicon = sentiment_lexicon(data_dir)

    def tagged(text: str) -> list[str]:
        words = text.split()
        return [" ".join(words), " ".join(lexicon.get(w, "O") for w in words)]

    def rows(split: str) -> list[list[str]]:
        return examples.read_rows(expected_glue_file(data_dir, "sst2", split))[1:]

    train = sorted({r[0].strip() for r in rows("train")
                    if len(r) == 2 and len(r[0].split()) >= 6})
    train = [t for t in train if any(w in lexicon for w in t.split())]
    random.Random(seed).shuffle(train)
    dev = [r[0] for r in rows("dev") if len(r) == 2]
    with examples.staged_task_folder(output_dir, "sst2_tags", data_dir, overwrite) as stage:
        examples.write_tsv(os.path.join(stage, "train.tsv"), ["tokens", "tags"],
                           [tagged(t) for t in train[:num_train]])
        examples.write_tsv(os.path.join(stage, "dev.tsv"), ["tokens", "tags"],
                           [tagged(t) for t in dev])
    return out


# ------------------------------------------------------------------ training task
class TokenClassificationTask(TextTask):
    """Tag every word (`load_token_classification_task` format): the
    loss and the metrics are on each word's first piece; main metric: micro F1 of the
    tags other than ``O`` (`albert_tf.training.metrics.tagging_metrics`)."""

    main_metric = "f1"

    def load_task_data(self):
        task = self.config.task
        return load_token_classification_task(*custom_task_files(task),
                                              name=task.name or "tagging",
                                              label_list=task.label_list or None)

    def build_inputs(self, data_config, input_context=None):
        return token_classification_dataset(
            self.examples(data_config.split), self.tokenizer, self.config.task.max_seq_length,
            data_config.global_batch_size, data_config.is_training,
            self.task_data.label_list, self.seed(data_config), input_context)

    def train_metric_names(self) -> list[str]:
        return ["accuracy"]

    def _parts(self, inputs, outputs):
        """``labels [B, S]`` (-1: not a word's first piece), their ``weights``, the
        cross-entropy ``[B, S]`` and the predicted tags ``[B, S]``."""
        from albert_tf.training import metrics as metrics_lib
        tf = lazy_tf()
        labels = tf.cast(self.labels(inputs), tf.int32)                     # [B, S]
        logits = tf.cast(outputs["logits"], tf.float32)                     # [B, S, T]
        weights = tf.cast(labels >= 0, tf.float32)
        xent = metrics_lib.sparse_xent(tf.maximum(labels, 0), logits) * weights
        predictions = tf.argmax(logits, -1, output_type=tf.int32)
        return labels, weights, xent, predictions

    def train_loss(self, inputs, outputs):
        from albert_tf.training import metrics as metrics_lib
        tf = lazy_tf()
        labels, weights, xent, predictions = self._parts(inputs, outputs)
        loss, _, count = metrics_lib.weighted_mean_loss(xent, weights)
        correct = tf.cast(tf.equal(predictions, labels), tf.float32) * weights
        return loss, {"accuracy_num": tf.reduce_sum(correct), "accuracy_den": count}

    def eval_outputs(self, inputs, outputs) -> dict:
        tf = lazy_tf()
        labels, weights, xent, predictions = self._parts(inputs, outputs)
        return {"prediction": predictions, "label": labels,
                "xent": tf.reduce_sum(xent, -1), "words": tf.reduce_sum(weights, -1)}

    def reduce_eval(self, outputs):
        from albert_tf.training import metrics as metrics_lib
        result = metrics_lib.tagging_metrics(outputs["prediction"], outputs["label"],
                                             self.task_data.label_list)
        result["loss"] = float(np.sum(outputs["xent"]) / max(np.sum(outputs["words"]), 1.0))
        result["examples"] = float(len(outputs["label"]))
        return result

    def export_info(self):
        from albert_tf.checkpoints import TaskInfo
        task = self.config.task
        return (TaskInfo(task=task.name or "tagging", head="token_classification",
                         label_list=tuple(self.task_data.label_list),
                         max_seq_length=task.max_seq_length, do_lower_case=task.do_lower_case),
                self._vocab_or_none())

    def predict(self, model, outputs, path: str) -> str:
        labels = list(self.task_data.label_list)
        with open(path, "w", encoding="utf-8") as f:
            f.write("index\ttags\n")
            for i, (pred, gold) in enumerate(zip(outputs["prediction"], outputs["label"])):
                tags = [labels[int(p)] for p, g in zip(pred, gold) if g != -1]
                f.write(f"{i}\t{' '.join(tags)}\n")
        return path
