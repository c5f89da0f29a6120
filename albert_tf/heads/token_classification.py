"""The token-classification head: a tag for every word."""

from __future__ import annotations

import numpy as np

from albert_tf.heads.base import Head, lazy_tf, softmax_and_argmax
from albert_tf.heads.registry import register
from albert_tf.heads.decoding import word_labels


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
    labels_required = True
    lite_tokenizer = False
    hf_task = "ForTokenClassification"                 # dropout -> classifier, no pooler
    hf_dense = "token_classifier"
    decoded_output = "probabilities"
    distill_output = "logits"

    def training_task(self, config, **kwargs):
        from albert_tf.training.tasks import TokenClassificationTask
        return TokenClassificationTask(config, **kwargs)

    def build_model(self, config, info, **build_kwargs):
        from albert_tf.models.task_models import build_token_classifier
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
