"""SavedModel export in the TF Serving layout, tokenizing raw UTF-8 text in-graph.

    export_saved_model("runs/sst2", "serving")     # -> serving/sst2/1/

Layout: ``<base>/<name>/<version>/`` with ``saved_model.pb``, ``variables/`` and ``assets/``
(the vocabulary the tokenizer was built from: ``vocab.model``, SentencePiece, or
``vocab.txt``, WordPiece; and ``labels.txt`` for classifiers). Signatures:

================  ==========================================  ===================================
signature         inputs                                      outputs
================  ==========================================  ===================================
serving_default   ``text`` string [B] (``text_a``/``text_b``    classification: ``probabilities``
                  for pair tasks, ``question``/``context``     float [B, C], ``label`` string [B],
                  for span models, ``context`` [B] and         ``label_id`` int32 [B];
                  ``choices`` [B, C] for multiple choice)      regression: ``value`` float [B];
                                                               span: ``answer`` string [B],
                                                               ``start_index``/``end_index``
                                                               int32 [B], ``score`` float [B];
                                                               multiple choice: ``choice``
                                                               string [B], ``choice_id`` int32
                                                               [B], ``probabilities`` [B, C];
                                                               token classification: per piece
                                                               ``token``, ``label`` string
                                                               [B, S], ``label_id`` [B, S],
                                                               ``probabilities`` [B, S, T];
                                                               pretrained: ``pooled_output``
tokenize          as serving_default                          ``input_word_ids``, ``input_mask``,
                                                               ``input_type_ids`` int32 [B, S]
                                                               ([B, C, S]: multiple choice)
encode            the three int32 [B, S] ids                  ``sequence_output`` [B, S, H],
                                                               ``pooled_output`` [B, H]
mlm (pretrained)  the three int32 [B, S] ids                  ``mlm_logits`` [B, S, V],
                                                               ``sop_logits`` [B, 2]
================  ==========================================  ===================================

Text is tokenized exactly as the Python tokenizer's ``pack`` (``AlbertTokenizer`` or
``WordPieceTokenizer``, in the graph: `albert_tf.export.tokenizers.saved_model_tokenizer`),
truncated to the model's ``max_seq_length``; invalid UTF-8 is decoded with U+FFFD (dropped
by WordPiece), so any byte string but a blank one gets an answer. An empty or
whitespace-only string (in any input, of ``serving_default`` and ``tokenize``) is an
InvalidArgumentError naming its index (TF Serving answers HTTP 400), as the Python runners'
ValueError (`refuse_blank`). What differs by head comes from
`albert_tf.heads`. Loading needs ``import tensorflow_text`` (for its ops) and nothing
of albert_tf.
"""

from __future__ import annotations

import os
import re
import tempfile

from albert_tf.backend import tf
from albert_tf import outputs
from albert_tf.export.common import (ExportError, ExportSource, export_inputs, load_source,
                                     task_outputs, without_keras_traces)
from albert_tf.networks import INPUT_NAMES

KIND = outputs.export_kind("saved_model")   # what its output marker records


# An empty or whitespace-only string (RE2): `str.isspace`'s characters, Unicode's Z* and the
# controls \t-\r, \x1c-\x1f, \x85, as `albert_tf.runtime.runner.is_blank` (tested to agree).
BLANK_TEXT = r"[\pZ\t-\r\x{1c}-\x{1f}\x{85}]*"


def refuse_blank(texts: list[tf.Tensor], names) -> list[tf.Tensor]:
    """``texts`` (string inputs ``names``, any shape), gated on an InvalidArgumentError (TF
    Serving: HTTP 400) naming the first empty or whitespace-only string, e.g. ``text[1]`` or
    ``choices[0][2]``: a blank text has no answer. Graph ops of the signature's function,
    before the model (never inside it)."""
    checks = []
    for name, text in zip(names, texts):
        blank = tf.strings.regex_full_match(text, BLANK_TEXT)
        first = tf.strings.reduce_join(tf.strings.as_string(tf.where(blank)[:1]),
                                       separator="][")
        checks.append(tf.debugging.Assert(
            tf.logical_not(tf.reduce_any(blank)),
            [tf.strings.join([f"{name}[", first, "] is empty or only whitespace: a blank "
                              "text has no answer; remove it or give it a text."])]))
    with tf.control_dependencies(checks):
        return [tf.identity(text) for text in texts]


class ServingModule(tf.Module):
    """The tf.Module saved as the SavedModel; its functions are the signatures."""

    def __init__(self, source: ExportSource, labels_file: str | None = None):
        super().__init__(name="albert_serving")
        from albert_tf.export.tokenizers import saved_model_tokenizer

        info = source.task_info
        self.source = source
        self.head = source.head
        self.model = source.model
        self.encoder = source.encoder
        self.tokenizer = saved_model_tokenizer(source.vocab_file, info.do_lower_case,
                                          max_seq_length=info.max_seq_length, fast=False)
        self.vocab_asset = tf.saved_model.Asset(source.vocab_file)
        self.labels_asset = tf.saved_model.Asset(labels_file) if labels_file else None
        self.label_names = tf.constant(list(info.label_list)) if info.label_list else None
        self.head.prepare_serving(self)

    # -- building blocks ---------------------------------------------------------------

    def _features(self, texts: list[tf.Tensor]) -> dict[str, tf.Tensor]:
        """The ids of raw-text inputs ``texts``; a blank one is refused (`refuse_blank`)."""
        texts = refuse_blank(texts, self.source.text_inputs)
        return self.head.tokenize(self.tokenizer, texts, self.source.text_inputs)

    def serve(self, *texts: tf.Tensor) -> dict[str, tf.Tensor]:
        features = self._features(list(texts))
        outputs = self.model(features, training=False)
        result = task_outputs(self.source, outputs, features, self.tokenizer.sep_id)
        result.update(self.head.serving_strings(self, result, features, list(texts)))
        return result

    def tokenize(self, *texts: tf.Tensor) -> dict[str, tf.Tensor]:
        return self._features(list(texts))

    def encode(self, input_word_ids, input_mask, input_type_ids) -> dict[str, tf.Tensor]:
        features = {"input_word_ids": input_word_ids, "input_mask": input_mask,
                    "input_type_ids": input_type_ids}
        features = self.head.model_features(features)
        return {k: tf.cast(v, tf.float32)
                for k, v in self.encoder(features, training=False).items()}

    # -- signatures --------------------------------------------------------------------

    def signatures(self) -> dict[str, tf.types.experimental.ConcreteFunction]:
        text_specs = [tf.TensorSpec(self.head.text_shape(n), tf.string, name=n)
                      for n in self.source.text_inputs]
        id_specs = [tf.TensorSpec([None, None], tf.int32, name=n) for n in INPUT_NAMES]

        def named(fn, name, specs):
            fn.__name__ = name
            return tf.function(fn, input_signature=specs).get_concrete_function()

        if len(text_specs) == 1:
            def serve(text):
                return self.serve(text)

            def tokenize(text):
                return self.tokenize(text)
        else:
            def serve(a, b):
                return self.serve(a, b)

            def tokenize(a, b):
                return self.tokenize(a, b)

        def encode(input_word_ids, input_mask, input_type_ids):
            return self.encode(input_word_ids, input_mask, input_type_ids)

        result = {"serving_default": named(serve, "serving_default", text_specs),
                  "tokenize": named(tokenize, "tokenize", text_specs),
                  "encode": named(encode, "encode", id_specs)}
        for name, fn in self.head.extra_signatures(self).items():   # the head's own
            result[name] = named(fn, name, id_specs)
        return result


def next_version(model_base: str) -> int:
    """One more than the highest numeric version directory under ``model_base`` (or 1)."""
    if not os.path.isdir(model_base):
        return 1
    versions = [int(d) for d in os.listdir(model_base) if re.fullmatch(r"\d+", d)]
    return max(versions, default=0) + 1


def export_saved_model(model_dir: str, output: str, name: str | None = None,
                       version: int | None = None, overwrite: bool = False,
                       vocab_file: str | None = None,
                       source: ExportSource | None = None) -> str:
    """Exports ``model_dir`` to ``<output>/<name>/<version>/``; returns that path.

    ``name`` defaults to the task name (``pretrained`` for a pretrained model directory),
    ``version`` to one more than the highest existing version. The SavedModel is written to
    a temporary directory next to the version directory and renamed at the end.
    """
    inputs = export_inputs(model_dir, vocab_file)
    outputs.check_base_directory(output, inputs=inputs)   # not '.', '~', an input, an export...
    source = source or load_source(model_dir, vocab_file)
    name = name or source.task_info.task
    if not re.fullmatch(r"[A-Za-z0-9_.\-]+", name):
        raise ExportError(f"--name={name!r}: use letters, digits, '_', '-' or '.'.")
    base = os.path.join(output, name)
    version = next_version(base) if version is None else int(version)
    if version < 0:
        raise ExportError(f"--version must be >= 0, got {version}.")
    final = os.path.join(base, str(version))
    outputs.check_output(final, kind=KIND, inputs=inputs, overwrite=overwrite)
    with outputs.staged_output(final, kind=KIND, inputs=inputs,
                               overwrite=overwrite) as tmp, \
            tempfile.TemporaryDirectory() as scratch:
        labels_file = None
        if source.labels:
            labels_file = os.path.join(scratch, "labels.txt")
            with open(labels_file, "w", encoding="utf-8") as f:
                f.write("".join(label + "\n" for label in source.labels))
        module = ServingModule(source, labels_file)
        with without_keras_traces():
            tf.saved_model.save(module, tmp, signatures=module.signatures())
    return final
