"""Task models: the encoder with a head for classification, regression, spans, choices, tags.

Each builder returns one flat functional model whose encoder layers carry the
canonical names of `albert_tf.networks.encoder`, so weights from a pretrainer load
into it by name (`albert_tf.checkpoints.restore_encoder_weights`).
"""

from __future__ import annotations

from albert_tf.backend import keras
from albert_tf.config import AlbertConfig
from albert_tf.layers import FoldChoices, SpanLogits, UnfoldChoices
from albert_tf.layers.util import truncated_normal
from albert_tf.networks.encoder import (INPUT_NAMES, AlbertFunctionalModel, encoder_graph,
                                        model_inputs)


def _dropout_rate(config: AlbertConfig) -> float:
    if config.classifier_dropout_prob is not None:
        return config.classifier_dropout_prob
    return config.hidden_dropout_prob


def _dense(units: int, config: AlbertConfig, name: str) -> keras.layers.Dense:
    return keras.layers.Dense(units, kernel_initializer=truncated_normal(config.initializer_range),
                              name=name, dtype="float32")


def _encode(config: AlbertConfig, seq_length: int | None):
    inputs = model_inputs(seq_length=seq_length)
    encoded = encoder_graph(config, inputs)
    encoded.pop("_embeddings")
    return inputs, encoded


def build_classifier(config: AlbertConfig, num_classes: int, seq_length: int | None = None,
                     name: str = "albert_classifier") -> keras.Model:
    """Sequence classification: ``logits [B, num_classes]`` from the pooled ``[CLS]``."""
    if num_classes < 2:
        raise ValueError(f"num_classes must be >= 2, got {num_classes}; use build_regressor "
                         "for a single real-valued output.")
    inputs, encoded = _encode(config, seq_length)
    x = keras.layers.Dropout(_dropout_rate(config), name="classifier_dropout")(
        encoded["pooled_output"])
    logits = _dense(num_classes, config, "classifier")(x)
    return AlbertFunctionalModel(inputs, {"logits": logits}, albert_config=config, name=name)


def build_regressor(config: AlbertConfig, seq_length: int | None = None,
                    name: str = "albert_regressor") -> keras.Model:
    """Sequence regression (e.g. STS-B): ``value [B, 1]`` from the pooled ``[CLS]``."""
    inputs, encoded = _encode(config, seq_length)
    x = keras.layers.Dropout(_dropout_rate(config), name="classifier_dropout")(
        encoded["pooled_output"])
    value = _dense(1, config, "regressor")(x)
    return AlbertFunctionalModel(inputs, {"value": value}, albert_config=config, name=name)


def build_span_extractor(config: AlbertConfig, seq_length: int | None = None,
                         name: str = "albert_span_extractor") -> keras.Model:
    """SQuAD-style span extraction: ``start_logits``, ``end_logits`` ``[B, S]`` (pads masked)."""
    inputs, encoded = _encode(config, seq_length)
    start, end = SpanLogits(config.initializer_range, name="span")(
        [encoded["sequence_output"], inputs["input_mask"]])
    return AlbertFunctionalModel(inputs, {"start_logits": start, "end_logits": end},
                                 albert_config=config, name=name)


def build_token_classifier(config: AlbertConfig, num_classes: int,
                           seq_length: int | None = None,
                           name: str = "albert_token_classifier") -> keras.Model:
    """Per-token tagging (NER, POS): ``logits [B, S, num_classes]``."""
    inputs, encoded = _encode(config, seq_length)
    x = keras.layers.Dropout(_dropout_rate(config), name="classifier_dropout")(
        encoded["sequence_output"])
    logits = _dense(num_classes, config, "token_classifier")(x)
    return AlbertFunctionalModel(inputs, {"logits": logits}, albert_config=config, name=name)


def build_multiple_choice(config: AlbertConfig, num_choices: int | None = None,
                          seq_length: int | None = None,
                          name: str = "albert_multiple_choice") -> keras.Model:
    """Multiple choice (SWAG, RACE, `albert_tf.heads.multiple_choice.MultipleChoiceHead`): inputs
    ``[B, C, S]``, ``logits [B, C]``.

    The C choices are folded into the batch (``[B * C, S]``), scored from the pooled
    ``[CLS]`` by a Dense(1), and unfolded. ``num_choices`` / ``seq_length`` None: any C
    and S (the weights do not depend on either).
    """
    inputs = {n: keras.Input(shape=(num_choices, seq_length), dtype="int32", name=n)
              for n in INPUT_NAMES}
    flat = {n: FoldChoices(name=f"fold_{n}")(t) for n, t in inputs.items()}
    encoded = encoder_graph(config, flat)
    encoded.pop("_embeddings")
    x = keras.layers.Dropout(_dropout_rate(config), name="classifier_dropout")(
        encoded["pooled_output"])
    scores = _dense(1, config, "choice_scorer")(x)                       # [B * C, 1]
    logits = UnfoldChoices(num_choices, name="unfold_choices")(
        scores if num_choices else [scores, inputs["input_word_ids"]])
    return AlbertFunctionalModel(inputs, {"logits": logits}, albert_config=config, name=name)
