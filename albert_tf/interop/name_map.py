"""Name maps between external checkpoint formats and albert-tf weight names, kept as data.

Every format is one `NameTable`: rows of ``(source name, our weight name, transform)``
plus rows of names that are deliberately not converted (with the reason) and tied
copies of other tensors. Names are templates over

* ``{g}`` hidden group and ``{k}`` inner layer (ALBERT layouts, ``sharing="all"``),
* ``{i}`` transformer layer (BERT layout: ``sharing="none"``, one inner layer),

and `NameTable.expand` turns a table into concrete names for one config. Nothing
depends on the order of the rows: a source name maps by exact lookup.

Transforms (``source -> ours``; `invert` is the way back):

* ``identity``: same array.
* ``transpose``: 2-D transpose (PyTorch ``nn.Linear`` stores ``[out, in]``, Keras
  ``[in, out]``; the original ``cls/seq_relationship/output_weights`` is ``[2, H]``).
* ``reshape``: same values in row-major order, new shape (keras-hub's multi-head
  kernels ``[H, N, D]``, ``[N, D, H]`` and biases ``[N, D]``). Reshape rows also give
  the source shape as a template over the config dimensions so that a head split
  that disagrees with the config is caught instead of silently reinterpreted.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Mapping, Sequence

import numpy as np

import albert_tf.heads.registry as heads
from albert_tf.config import AlbertConfig

IDENTITY = "identity"
TRANSPOSE = "transpose"
RESHAPE = "reshape"
TRANSFORMS = (IDENTITY, TRANSPOSE, RESHAPE)

# Our weights that are heads rather than encoder (the pretraining head's layers, ``mlm/`` and
# ``sop/``): a source without them still converts (the heads are freshly initialized and
# reported); a missing encoder weight is an error.
HEAD_PREFIXES = tuple(f"{layer}/" for layer in heads.get("pretraining").head_layers)


@dataclasses.dataclass(frozen=True)
class Rule:
    """One row of a name map: ``source`` -> ``target`` (our weight name) via ``transform``."""

    source: str
    target: str
    transform: str = IDENTITY
    source_shape: tuple[str, ...] | None = None   # reshape rows: dims as config letters

    def __post_init__(self) -> None:
        if self.transform not in TRANSFORMS:
            raise ValueError(f"unknown transform {self.transform!r} in rule {self.source!r}")
        if self.transform == RESHAPE and self.source_shape is None:
            raise ValueError(f"reshape rule {self.source!r} needs source_shape")

    def format(self, **indices: int) -> "Rule":
        return dataclasses.replace(self, source=self.source.format(**indices),
                                   target=self.target.format(**indices))


@dataclasses.dataclass(frozen=True)
class NameTable:
    """A complete name map for one external format.

    Attributes:
      name: format name used in reports (``google``, ``hf_albert``, ...).
      layout: ``groups`` (templates over ``{g}``/``{k}``; our owners are ``group_{g}``,
        needs ``sharing="all"``) or ``layers`` (templates over ``{i}``; our owners are
        ``layer_{i}``, needs ``sharing="none"`` and ``inner_group_num=1``).
      rules: the mapped tensors.
      skips: ``(regex, reason)``: source tensors that are knowingly not converted.
      ties: ``(source, tied_to)``: a source tensor that must equal another source
        tensor (a tied decoder); equal copies are skipped, different ones are an error.
    """

    name: str
    layout: str
    rules: tuple[Rule, ...]
    skips: tuple[tuple[str, str], ...] = ()
    ties: tuple[tuple[str, str], ...] = ()

    def expand(self, config: AlbertConfig) -> dict[str, Rule]:
        """``{concrete source name: concrete Rule}`` for ``config``."""
        out: dict[str, Rule] = {}
        for rule in self.rules:
            for indices in _index_space(rule.source, config, self.layout):
                concrete = rule.format(**indices)
                if concrete.source in out:
                    raise ValueError(f"name map {self.name}: {concrete.source!r} listed twice")
                out[concrete.source] = concrete
        return out

    def skip_reason(self, source_name: str) -> str | None:
        for pattern, reason in self.skips:
            if re.fullmatch(pattern, source_name):
                return reason
        return None

    def tie_of(self, source_name: str) -> str | None:
        for name, tied_to in self.ties:
            if name == source_name:
                return tied_to
        return None


def _index_space(template: str, config: AlbertConfig, layout: str) -> list[dict[str, int]]:
    if "{g}" in template or "{k}" in template:
        if layout != "groups":
            raise ValueError(f"template {template!r} uses groups in a {layout} table")
        return [{"g": g, "k": k} for g in range(config.num_hidden_groups)
                for k in range(config.inner_group_num)]
    if "{i}" in template:
        return [{"i": i} for i in range(config.num_hidden_layers)]
    return [{}]


def dims(config: AlbertConfig) -> dict[str, int]:
    """Config dimensions by the letters used in shape templates."""
    return {"V": config.vocab_size, "E": config.embedding_size, "H": config.hidden_size,
            "N": config.num_attention_heads, "D": config.head_size,
            "I": config.intermediate_size, "P": config.max_position_embeddings,
            "T": config.type_vocab_size}


def source_shape(rule: Rule, config: AlbertConfig) -> tuple[int, ...] | None:
    if rule.source_shape is None:
        return None
    d = dims(config)
    return tuple(d[letter] for letter in rule.source_shape)


def apply(transform: str, array: np.ndarray, target_shape: Sequence[int]) -> np.ndarray:
    """Source array -> our layout."""
    if transform == IDENTITY:
        return array
    if transform == TRANSPOSE:
        if array.ndim != 2:
            raise ValueError(f"transpose needs a 2-D tensor, got shape {list(array.shape)}")
        return np.ascontiguousarray(array.T)
    if array.size != int(np.prod(target_shape)):
        raise ValueError(f"cannot reshape {list(array.shape)} to {list(target_shape)}")
    return array.reshape(tuple(target_shape))


def invert(transform: str, array: np.ndarray, shape: Sequence[int] | None = None) -> np.ndarray:
    """Our array -> the source layout (``shape`` is the source shape, for reshape)."""
    if transform == IDENTITY:
        return np.ascontiguousarray(array)
    if transform == TRANSPOSE:
        return np.ascontiguousarray(array.T)
    return np.ascontiguousarray(array.reshape(tuple(shape)))


def identity_projection(name: str, hidden: int) -> np.ndarray:
    """Our absent E == H embedding projection for formats that always have one: kernel
    ``[H, H]`` identity, bias ``[H]`` zeros (exact in float32)."""
    if name.endswith("kernel"):
        return np.eye(hidden, dtype=np.float32)
    return np.zeros(hidden, np.float32)


# ------------------------------------------------------------------------------------
# Google's original TF1 checkpoints (google-research/albert, TF-Hub TF1 modules with the
# "module/" prefix stripped by the reader). Dense kernels are [in, out] like ours.
_G = "bert/encoder/transformer/group_{g}/inner_group_{k}/"
_A = "group_{g}_inner_{k}_attention/"
_F = "group_{g}_inner_{k}_ffn/"
_GOOGLE_EMBEDDINGS = (
    Rule("bert/embeddings/word_embeddings", "embeddings/word_embeddings/embeddings"),
    Rule("bert/embeddings/position_embeddings", "embeddings/position_embeddings"),
    Rule("bert/embeddings/token_type_embeddings", "embeddings/token_type_embeddings/embeddings"),
    Rule("bert/embeddings/LayerNorm/gamma", "embeddings/layer_norm/gamma"),
    Rule("bert/embeddings/LayerNorm/beta", "embeddings/layer_norm/beta"),
)
_GOOGLE_HEADS = (      # pooler, MLM (decoder tied to the word embeddings) and SOP/NSP
    Rule("bert/pooler/dense/kernel", "pooler/dense/kernel"),
    Rule("bert/pooler/dense/bias", "pooler/dense/bias"),
    Rule("cls/predictions/transform/dense/kernel", "mlm/dense/kernel"),
    Rule("cls/predictions/transform/dense/bias", "mlm/dense/bias"),
    Rule("cls/predictions/transform/LayerNorm/gamma", "mlm/layer_norm/gamma"),
    Rule("cls/predictions/transform/LayerNorm/beta", "mlm/layer_norm/beta"),
    Rule("cls/predictions/output_bias", "mlm/output_bias"),
    Rule("cls/seq_relationship/output_weights", "sop/kernel", TRANSPOSE),
    Rule("cls/seq_relationship/output_bias", "sop/bias"),
)
GOOGLE = NameTable(
    name="google",
    layout="groups",
    rules=_GOOGLE_EMBEDDINGS + (
        Rule("bert/encoder/embedding_hidden_mapping_in/kernel", "embedding_projection/kernel"),
        Rule("bert/encoder/embedding_hidden_mapping_in/bias", "embedding_projection/bias"),
        Rule(_G + "attention_1/self/query/kernel", _A + "query/kernel"),
        Rule(_G + "attention_1/self/query/bias", _A + "query/bias"),
        Rule(_G + "attention_1/self/key/kernel", _A + "key/kernel"),
        Rule(_G + "attention_1/self/key/bias", _A + "key/bias"),
        Rule(_G + "attention_1/self/value/kernel", _A + "value/kernel"),
        Rule(_G + "attention_1/self/value/bias", _A + "value/bias"),
        Rule(_G + "attention_1/output/dense/kernel", _A + "output_dense/kernel"),
        Rule(_G + "attention_1/output/dense/bias", _A + "output_dense/bias"),
        Rule(_G + "LayerNorm/gamma", _A + "layer_norm/gamma"),
        Rule(_G + "LayerNorm/beta", _A + "layer_norm/beta"),
        Rule(_G + "ffn_1/intermediate/dense/kernel", _F + "intermediate/kernel"),
        Rule(_G + "ffn_1/intermediate/dense/bias", _F + "intermediate/bias"),
        Rule(_G + "ffn_1/intermediate/output/dense/kernel", _F + "output_dense/kernel"),
        Rule(_G + "ffn_1/intermediate/output/dense/bias", _F + "output_dense/bias"),
        Rule(_G + "LayerNorm_1/gamma", _F + "layer_norm/gamma"),
        Rule(_G + "LayerNorm_1/beta", _F + "layer_norm/beta"),
    ) + _GOOGLE_HEADS,
    skips=(
        (r".+/adam_m", "optimizer slot (Adam/LAMB first moment)"),
        (r".+/adam_v", "optimizer slot (Adam/LAMB second moment)"),
        (r"global_step", "training step counter"),
        (r"(.+/)?(beta1_power|beta2_power)", "optimizer state"),
    ),
)

_TASK_HEAD = ("task head of a fine-tuned Hugging Face model: not converted (build the task "
              "model with albert_tf.build_classifier & co. and fine-tune it)")

# Hugging Face transformers ALBERT (AlbertForPreTraining names; the reader adds the
# "albert." prefix to a bare AlbertModel). nn.Linear weights are [out, in].
_HG = "albert.encoder.albert_layer_groups.{g}.albert_layers.{k}."
HF_ALBERT = NameTable(
    name="hf_albert",
    layout="groups",
    rules=(
        Rule("albert.embeddings.word_embeddings.weight", "embeddings/word_embeddings/embeddings"),
        Rule("albert.embeddings.position_embeddings.weight", "embeddings/position_embeddings"),
        Rule("albert.embeddings.token_type_embeddings.weight",
             "embeddings/token_type_embeddings/embeddings"),
        Rule("albert.embeddings.LayerNorm.weight", "embeddings/layer_norm/gamma"),
        Rule("albert.embeddings.LayerNorm.bias", "embeddings/layer_norm/beta"),
        Rule("albert.encoder.embedding_hidden_mapping_in.weight", "embedding_projection/kernel",
             TRANSPOSE),
        Rule("albert.encoder.embedding_hidden_mapping_in.bias", "embedding_projection/bias"),
        Rule(_HG + "attention.query.weight", _A + "query/kernel", TRANSPOSE),
        Rule(_HG + "attention.query.bias", _A + "query/bias"),
        Rule(_HG + "attention.key.weight", _A + "key/kernel", TRANSPOSE),
        Rule(_HG + "attention.key.bias", _A + "key/bias"),
        Rule(_HG + "attention.value.weight", _A + "value/kernel", TRANSPOSE),
        Rule(_HG + "attention.value.bias", _A + "value/bias"),
        Rule(_HG + "attention.dense.weight", _A + "output_dense/kernel", TRANSPOSE),
        Rule(_HG + "attention.dense.bias", _A + "output_dense/bias"),
        Rule(_HG + "attention.LayerNorm.weight", _A + "layer_norm/gamma"),
        Rule(_HG + "attention.LayerNorm.bias", _A + "layer_norm/beta"),
        Rule(_HG + "ffn.weight", _F + "intermediate/kernel", TRANSPOSE),
        Rule(_HG + "ffn.bias", _F + "intermediate/bias"),
        Rule(_HG + "ffn_output.weight", _F + "output_dense/kernel", TRANSPOSE),
        Rule(_HG + "ffn_output.bias", _F + "output_dense/bias"),
        Rule(_HG + "full_layer_layer_norm.weight", _F + "layer_norm/gamma"),
        Rule(_HG + "full_layer_layer_norm.bias", _F + "layer_norm/beta"),
        Rule("albert.pooler.weight", "pooler/dense/kernel", TRANSPOSE),
        Rule("albert.pooler.bias", "pooler/dense/bias"),
        Rule("predictions.dense.weight", "mlm/dense/kernel", TRANSPOSE),
        Rule("predictions.dense.bias", "mlm/dense/bias"),
        Rule("predictions.LayerNorm.weight", "mlm/layer_norm/gamma"),
        Rule("predictions.LayerNorm.bias", "mlm/layer_norm/beta"),
        Rule("predictions.bias", "mlm/output_bias"),
        Rule("sop_classifier.classifier.weight", "sop/kernel", TRANSPOSE),
        Rule("sop_classifier.classifier.bias", "sop/bias"),
    ),
    skips=(
        (r".*position_ids", "non-persistent buffer (positions 0..P-1)"),
        (r".*embeddings\.token_type_ids", "non-persistent buffer (zeros)"),
        (r"(classifier|qa_outputs)\.(weight|bias)", _TASK_HEAD),
    ),
    ties=(
        ("predictions.decoder.weight", "albert.embeddings.word_embeddings.weight"),
        ("predictions.decoder.bias", "predictions.bias"),
    ),
)

def hf_head_rules(linear: str, dense: str) -> tuple[Rule, Rule]:
    """The rows of a Hugging Face task head's ``nn.Linear`` ``linear`` (``classifier``,
    ``qa_outputs``), which is our Dense layer ``dense`` (`albert_tf.heads` names both)."""
    return (Rule(f"{linear}.weight", f"{dense}/kernel", TRANSPOSE),
            Rule(f"{linear}.bias", f"{dense}/bias"))


# Hugging Face transformers BERT (BertModel / BertForPreTraining): our BERT layout,
# E == H, sharing "none", owners layer_{i}; the NSP head loads into our sop/ head.
_HB = "bert.encoder.layer.{i}."
_LA = "layer_{i}_inner_0_attention/"
_LF = "layer_{i}_inner_0_ffn/"
HF_BERT = NameTable(
    name="hf_bert",
    layout="layers",
    rules=(
        Rule("bert.embeddings.word_embeddings.weight", "embeddings/word_embeddings/embeddings"),
        Rule("bert.embeddings.position_embeddings.weight", "embeddings/position_embeddings"),
        Rule("bert.embeddings.token_type_embeddings.weight",
             "embeddings/token_type_embeddings/embeddings"),
        Rule("bert.embeddings.LayerNorm.weight", "embeddings/layer_norm/gamma"),
        Rule("bert.embeddings.LayerNorm.bias", "embeddings/layer_norm/beta"),
        Rule(_HB + "attention.self.query.weight", _LA + "query/kernel", TRANSPOSE),
        Rule(_HB + "attention.self.query.bias", _LA + "query/bias"),
        Rule(_HB + "attention.self.key.weight", _LA + "key/kernel", TRANSPOSE),
        Rule(_HB + "attention.self.key.bias", _LA + "key/bias"),
        Rule(_HB + "attention.self.value.weight", _LA + "value/kernel", TRANSPOSE),
        Rule(_HB + "attention.self.value.bias", _LA + "value/bias"),
        Rule(_HB + "attention.output.dense.weight", _LA + "output_dense/kernel", TRANSPOSE),
        Rule(_HB + "attention.output.dense.bias", _LA + "output_dense/bias"),
        Rule(_HB + "attention.output.LayerNorm.weight", _LA + "layer_norm/gamma"),
        Rule(_HB + "attention.output.LayerNorm.bias", _LA + "layer_norm/beta"),
        Rule(_HB + "intermediate.dense.weight", _LF + "intermediate/kernel", TRANSPOSE),
        Rule(_HB + "intermediate.dense.bias", _LF + "intermediate/bias"),
        Rule(_HB + "output.dense.weight", _LF + "output_dense/kernel", TRANSPOSE),
        Rule(_HB + "output.dense.bias", _LF + "output_dense/bias"),
        Rule(_HB + "output.LayerNorm.weight", _LF + "layer_norm/gamma"),
        Rule(_HB + "output.LayerNorm.bias", _LF + "layer_norm/beta"),
        Rule("bert.pooler.dense.weight", "pooler/dense/kernel", TRANSPOSE),
        Rule("bert.pooler.dense.bias", "pooler/dense/bias"),
        Rule("cls.predictions.transform.dense.weight", "mlm/dense/kernel", TRANSPOSE),
        Rule("cls.predictions.transform.dense.bias", "mlm/dense/bias"),
        Rule("cls.predictions.transform.LayerNorm.weight", "mlm/layer_norm/gamma"),
        Rule("cls.predictions.transform.LayerNorm.bias", "mlm/layer_norm/beta"),
        Rule("cls.predictions.bias", "mlm/output_bias"),
        Rule("cls.seq_relationship.weight", "sop/kernel", TRANSPOSE),
        Rule("cls.seq_relationship.bias", "sop/bias"),
    ),
    skips=(
        (r".*position_ids", "non-persistent buffer (positions 0..P-1)"),
        (r".*embeddings\.token_type_ids", "non-persistent buffer (zeros)"),
        (r"(classifier|qa_outputs)\.(weight|bias)", _TASK_HEAD),
    ),
    ties=(
        ("cls.predictions.decoder.weight", "bert.embeddings.word_embeddings.weight"),
        ("cls.predictions.decoder.bias", "cls.predictions.bias"),
    ),
)

# Google's original BERT TF1 checkpoints (google-research/bert: bert_model.ckpt beside
# bert_config.json and vocab.txt): our BERT layout, as HF_BERT; kernels are [in, out].
_GB = "bert/encoder/layer_{i}/"
GOOGLE_BERT = NameTable(
    name="google_bert",
    layout="layers",
    rules=_GOOGLE_EMBEDDINGS + (
        Rule(_GB + "attention/self/query/kernel", _LA + "query/kernel"),
        Rule(_GB + "attention/self/query/bias", _LA + "query/bias"),
        Rule(_GB + "attention/self/key/kernel", _LA + "key/kernel"),
        Rule(_GB + "attention/self/key/bias", _LA + "key/bias"),
        Rule(_GB + "attention/self/value/kernel", _LA + "value/kernel"),
        Rule(_GB + "attention/self/value/bias", _LA + "value/bias"),
        Rule(_GB + "attention/output/dense/kernel", _LA + "output_dense/kernel"),
        Rule(_GB + "attention/output/dense/bias", _LA + "output_dense/bias"),
        Rule(_GB + "attention/output/LayerNorm/gamma", _LA + "layer_norm/gamma"),
        Rule(_GB + "attention/output/LayerNorm/beta", _LA + "layer_norm/beta"),
        Rule(_GB + "intermediate/dense/kernel", _LF + "intermediate/kernel"),
        Rule(_GB + "intermediate/dense/bias", _LF + "intermediate/bias"),
        Rule(_GB + "output/dense/kernel", _LF + "output_dense/kernel"),
        Rule(_GB + "output/dense/bias", _LF + "output_dense/bias"),
        Rule(_GB + "output/LayerNorm/gamma", _LF + "layer_norm/gamma"),
        Rule(_GB + "output/LayerNorm/beta", _LF + "layer_norm/beta"),
    ) + _GOOGLE_HEADS,
    skips=GOOGLE.skips,
)

# keras-hub AlbertBackbone / BertBackbone (Keras 3 weight paths). MultiHeadAttention keeps
# per-head kernels [H, N, D] / [N, D, H] and biases [N, D]; ours are [H, H] and [H]. Both
# backbones name a TransformerEncoder's weights alike: only the layer prefix differs.
def _keras_hub_layer(layer: str, attention: str, ffn: str) -> tuple[Rule, ...]:
    """The rows of one keras-hub ``TransformerEncoder`` named ``layer`` (a template)."""
    mha = layer + "self_attention_layer/"
    return (
        Rule(mha + "query/kernel", attention + "query/kernel", RESHAPE, ("H", "N", "D")),
        Rule(mha + "query/bias", attention + "query/bias", RESHAPE, ("N", "D")),
        Rule(mha + "key/kernel", attention + "key/kernel", RESHAPE, ("H", "N", "D")),
        Rule(mha + "key/bias", attention + "key/bias", RESHAPE, ("N", "D")),
        Rule(mha + "value/kernel", attention + "value/kernel", RESHAPE, ("H", "N", "D")),
        Rule(mha + "value/bias", attention + "value/bias", RESHAPE, ("N", "D")),
        Rule(mha + "attention_output/kernel", attention + "output_dense/kernel", RESHAPE,
             ("N", "D", "H")),
        Rule(mha + "attention_output/bias", attention + "output_dense/bias"),
        Rule(layer + "self_attention_layer_norm/gamma", attention + "layer_norm/gamma"),
        Rule(layer + "self_attention_layer_norm/beta", attention + "layer_norm/beta"),
        Rule(layer + "feedforward_intermediate_dense/kernel", ffn + "intermediate/kernel"),
        Rule(layer + "feedforward_intermediate_dense/bias", ffn + "intermediate/bias"),
        Rule(layer + "feedforward_output_dense/kernel", ffn + "output_dense/kernel"),
        Rule(layer + "feedforward_output_dense/bias", ffn + "output_dense/bias"),
        Rule(layer + "feedforward_layer_norm/gamma", ffn + "layer_norm/gamma"),
        Rule(layer + "feedforward_layer_norm/beta", ffn + "layer_norm/beta"),
    )


_KH_EMBEDDINGS = (
    Rule("token_embedding/embeddings", "embeddings/word_embeddings/embeddings"),
    Rule("position_embedding/embeddings", "embeddings/position_embeddings"),
    Rule("segment_embedding/embeddings", "embeddings/token_type_embeddings/embeddings"),
    Rule("embeddings_layer_norm/gamma", "embeddings/layer_norm/gamma"),
    Rule("embeddings_layer_norm/beta", "embeddings/layer_norm/beta"),
)
_KH_POOLER = (
    Rule("pooled_dense/kernel", "pooler/dense/kernel"),
    Rule("pooled_dense/bias", "pooler/dense/bias"),
)
_KH_MLM_SKIP = (r"mlm_head/.*", "keras-hub MaskedLM head (LayerNorm epsilon 1e-5, not "
                "ALBERT's 1e-12): not converted; the MLM head is freshly initialized")
KERAS_HUB = NameTable(
    name="keras_hub",
    layout="groups",
    rules=_KH_EMBEDDINGS + (
        Rule("embedding_projection/kernel", "embedding_projection/kernel"),
        Rule("embedding_projection/bias", "embedding_projection/bias"),
    ) + _keras_hub_layer("group_{g}_inner_layer_{k}/", _A, _F) + _KH_POOLER,
    skips=(_KH_MLM_SKIP,),
)
# keras-hub BertBackbone: our BERT layout (E == H, no projection, owners layer_{i}).
KERAS_HUB_BERT = NameTable(
    name="keras_hub_bert",
    layout="layers",
    rules=_KH_EMBEDDINGS + _keras_hub_layer("transformer_layer_{i}/", _LA, _LF) + _KH_POOLER,
    skips=(_KH_MLM_SKIP,),
)

TABLES: Mapping[str, NameTable] = {t.name: t for t in (GOOGLE, GOOGLE_BERT, HF_ALBERT, HF_BERT,
                                                       KERAS_HUB, KERAS_HUB_BERT)}


def table_for(config: AlbertConfig, table: NameTable) -> NameTable:
    """Checks that ``config`` has the weight layout ``table`` describes."""
    from albert_tf.interop.conversion_report import ConversionError
    if table.layout == "groups" and config.sharing != "all":
        raise ConversionError(
            f"the {table.name} format shares every sublayer within a hidden group, but the config "
            f"has sharing={config.sharing!r}; only sharing='all' models map to it.")
    if table.layout == "layers" and (config.sharing != "none" or config.inner_group_num != 1):
        raise ConversionError(
            f"the {table.name} format has one unshared layer per depth, but the config has "
            f"sharing={config.sharing!r}, inner_group_num={config.inner_group_num}; it needs "
            "sharing='none' and inner_group_num=1.")
    return table
