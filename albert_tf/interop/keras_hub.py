"""keras-hub `AlbertBackbone` / `BertBackbone` interop (Keras 3), both directions.

keras-hub is imported only inside these functions: the rest of albert-tf runs on
Keras 2 (``tf_keras``) and must not pull Keras 3 in at import time.

A keras-hub ``AlbertBackbone`` always has ``embedding_projection`` (also when E == H),
uses the tanh GELU and LayerNorm epsilon 1e-12, and gives layer ``i`` of ``L`` to group
``i // (L / G)`` (it requires ``L % G == 0``), which is the group our formula gives.
``BertBackbone`` is the same computation without projection or sharing (tanh GELU too).

Reading: `read_keras_hub` (``albert-tf-convert --from=keras_hub``). Writing
(``albert-tf-convert --to=keras_hub``, `albert_tf.interop.converter.export_keras_hub`):
`build_preset` builds the keras-hub backbone (and tokenizer) with our config and weights,
`save_preset` writes them with keras-hub's own ``save_to_preset``; `hub_layout` says which
backbone represents a config, or why none can.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from typing import Any, Mapping

import numpy as np

from albert_tf.config import ACTIVATIONS, AlbertConfig, ConfigError
from albert_tf.interop import name_map
from albert_tf.interop.readers import TensorSource, as_float32
from albert_tf.interop.conversion_report import ConversionError, MappingReport

BACKBONE_CLASS = "AlbertBackbone"
BERT_BACKBONE_CLASS = "BertBackbone"
BACKBONE_CLASSES = (BACKBONE_CLASS, BERT_BACKBONE_CLASS)


def config_from_keras_hub(values: dict[str, Any], where: str = "keras-hub config",
                          class_name: str = BACKBONE_CLASS) -> AlbertConfig:
    """Our config from ``AlbertBackbone.get_config()`` (or ``BertBackbone``'s: E == H,
    ``sharing="none"``)."""
    bert = class_name == BERT_BACKBONE_CLASS
    try:
        dropout = float(values.get("dropout", 0.0))
        return AlbertConfig(
            vocab_size=values["vocabulary_size"],
            embedding_size=values["hidden_dim" if bert else "embedding_dim"],
            hidden_size=values["hidden_dim"], num_hidden_layers=values["num_layers"],
            num_hidden_groups=1 if bert else values.get("num_groups", 1),
            inner_group_num=1 if bert else values.get("num_inner_repetitions", 1),
            num_attention_heads=values["num_heads"], intermediate_size=values["intermediate_dim"],
            hidden_act="gelu", hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout,
            max_position_embeddings=values.get("max_sequence_length", 512),
            type_vocab_size=values.get("num_segments", 2), layer_norm_eps=1e-12,
            sharing="none" if bert else "all")
    except KeyError as e:
        raise ConversionError(f"{where}: missing {class_name} config key {e}.") from e
    except (ConfigError, TypeError) as e:
        raise ConversionError(f"{where}: {e}") from e


def _load_preset(path: str):
    config_path = os.path.join(path, "config.json")
    if not os.path.isfile(config_path):
        raise ConversionError(f"{path}: no config.json; pass a keras-hub preset directory "
                              "written by AlbertBackbone.save_to_preset.")
    try:
        with open(config_path, encoding="utf-8") as f:
            meta = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        raise ConversionError(f"{config_path}: cannot read ({e}).") from e
    class_name = meta.get("class_name") if isinstance(meta, dict) else None
    if class_name not in BACKBONE_CLASSES:
        hint = ""
        if isinstance(meta, dict) and "model_type" in meta:
            hint = " This is a Hugging Face config; convert the directory with --from=hf."
        raise ConversionError(f"{config_path}: class_name {class_name!r} is not "
                              f"{BACKBONE_CLASS!r} or {BERT_BACKBONE_CLASS!r}.{hint}")
    weights = [n for n in os.listdir(path) if n.endswith((".weights.h5", ".weights.json"))]
    if not weights:
        raise ConversionError(f"{path}: no weights file (model.weights.h5) in the preset.")
    import keras_hub
    try:
        return getattr(keras_hub.models, class_name).from_preset(path)
    except Exception as e:  # noqa: BLE001 - Keras raises many types for bad files
        raise ConversionError(f"{path}: keras-hub could not load the preset ({e}).") from e


def read_keras_hub(backbone_or_path) -> tuple[AlbertConfig, TensorSource, list[str]]:
    """Config, tensors and assets of an `AlbertBackbone` or `BertBackbone` (object or preset
    directory). The assets are the preset's vocabulary, if any: ``vocabulary.spm``
    (SentencePiece, ``AlbertTokenizer``) or ``vocabulary.txt`` (WordPiece, ``BertTokenizer``).

    A ``*MaskedLM`` task object is accepted too: its backbone is converted and the
    keras-hub MLM head is reported as skipped.
    """
    assets: list[str] = []
    if isinstance(backbone_or_path, (str, os.PathLike)):
        path = os.fspath(backbone_or_path)
        if not os.path.isdir(path):
            raise ConversionError(f"{path!r} is not a keras-hub preset directory.")
        obj = _load_preset(path)
        description = f"keras-hub preset {path}"
        for name in ("assets/tokenizer/vocabulary.spm", "vocabulary.spm",
                     "assets/tokenizer/vocabulary.txt"):
            if os.path.isfile(os.path.join(path, name)):
                assets.append(os.path.join(path, name))
    else:
        obj = backbone_or_path
        description = f"keras-hub {type(obj).__name__} object"
    extra = []
    backbone = obj
    if type(obj).__name__ not in BACKBONE_CLASSES and hasattr(obj, "backbone"):
        backbone = obj.backbone
        extra = [w for w in obj.weights if w.path.startswith("mlm_head/")]
    class_name = type(backbone).__name__
    if class_name not in BACKBONE_CLASSES:
        raise ConversionError(f"{description}: expected a keras-hub {BACKBONE_CLASS} or "
                              f"{BERT_BACKBONE_CLASS}, got {class_name}.")
    config = config_from_keras_hub(backbone.get_config(), description, class_name)
    source = TensorSource(description)
    seen = set()
    for w in list(backbone.weights) + extra:
        if w.path in seen:
            continue
        seen.add(w.path)
        source.add(w.path, w.shape, lambda w=w: as_float32(np.array(w.numpy())))
    return config, source, assets


# ------------------------------------------------------------------------- export
HUB_ACTIVATION = "gelu_tanh"            # keras-hub's gelu_approximate, in both backbones
HUB_LAYER_NORM_EPS = 1e-12
PROBE_TOLERANCE = 1e-3                  # a probe difference above this refuses the export
_OWNER = re.compile(r"(?:group|layer)_(\d+)_inner_(\d+)_(attention|ffn)/")


@dataclasses.dataclass(frozen=True)
class HubLayout:
    """How one of our configs is written as a keras-hub backbone.

    Attributes:
      backbone: ``AlbertBackbone`` or ``BertBackbone``.
      kwargs: the backbone's constructor arguments.
      table: the name map (`name_map.KERAS_HUB` / `name_map.KERAS_HUB_BERT`).
      table_config: the config the table expands over (keras-hub's groups as ours).
      layers_per_owner: layers per keras-hub group (``L / num_groups``; 1 for BERT).
      notes: how the architecture was read, for the report.
    """

    backbone: str
    kwargs: dict[str, Any]
    table: name_map.NameTable
    table_config: AlbertConfig
    layers_per_owner: int
    notes: tuple[str, ...] = ()


def _owners_match(config: AlbertConfig, per: int) -> bool:
    """Whether keras-hub groups of ``per`` consecutive layers own exactly our sublayers: every
    layer of a keras-hub group uses the same weights of ours, and no two groups share."""
    from albert_tf.networks.encoder import sublayer_name
    slots: dict[tuple[int, int, str], set[str]] = {}
    for i in range(config.num_hidden_layers):
        for k in range(config.inner_group_num):
            for kind in ("attention", "ffn"):
                slots.setdefault((i // per, k, kind), set()).add(sublayer_name(config, i, kind, k))
    owners = [next(iter(s)) for s in slots.values()]
    return all(len(s) == 1 for s in slots.values()) and len(set(owners)) == len(owners)


def _unsupported(config: AlbertConfig) -> list[str]:
    """What keras-hub's backbones compute differently from ``config`` (empty: nothing)."""
    reasons = []
    function = ACTIVATIONS[config.hidden_act]
    if function != HUB_ACTIVATION:
        alias = "" if function == config.hidden_act else f" ({function})"
        reasons.append(f"hidden_act={config.hidden_act!r}{alias}, but keras-hub's backbones "
                       "use the tanh-approximate GELU (our 'gelu')")
    if config.layer_norm_eps != HUB_LAYER_NORM_EPS:
        reasons.append(f"layer_norm_eps={config.layer_norm_eps:g}, but keras-hub's backbones "
                       f"fix it at {HUB_LAYER_NORM_EPS:g}")
    width = config.num_attention_heads * config.head_size
    if width != config.hidden_size:
        reasons.append(f"{config.num_attention_heads} heads of width {config.head_size} "
                       f"(pruned heads) span {width}, not hidden_size={config.hidden_size}; "
                       "keras-hub's heads are hidden_size / num_heads wide")
    return reasons


def hub_layout(config: AlbertConfig, where: str = "model") -> HubLayout:
    """The keras-hub backbone that computes exactly what ``config`` does.

    Decided by architecture, not by the ``sharing`` label: E == H, one inner layer and no
    weights shared between layers is a ``BertBackbone``; anything else an ``AlbertBackbone``
    (``num_groups`` = our groups for ``sharing="all"``, = layers when nothing is shared).
    Raises `ConversionError` (one line) for what neither backbone can represent.
    """
    reasons = _unsupported(config)
    if reasons:
        raise ConversionError(f"{where}: cannot be represented in keras-hub: "
                              + "; ".join(reasons) + ".")
    layers, groups = config.num_hidden_layers, config.num_hidden_groups
    common = dict(vocabulary_size=config.vocab_size, num_layers=layers,
                  num_heads=config.num_attention_heads, hidden_dim=config.hidden_size,
                  intermediate_dim=config.intermediate_size,
                  dropout=config.hidden_dropout_prob,
                  max_sequence_length=config.max_position_embeddings,
                  num_segments=config.type_vocab_size)
    unshared = _owners_match(config, 1)
    if config.embedding_size == config.hidden_size and config.inner_group_num == 1 and unshared:
        notes = () if config.sharing == "none" else (
            f"sharing={config.sharing!r} but every layer has its own weights and E == H: "
            "BERT-shaped, written as a BertBackbone",)
        return HubLayout(BERT_BACKBONE_CLASS, common, name_map.KERAS_HUB_BERT, config, 1, notes)
    candidates = ([layers // groups] if layers % groups == 0 else []) + [1]
    per = next((p for p in candidates if _owners_match(config, p)), None)
    if per is None:
        raise ConversionError(
            f"{where}: sharing={config.sharing!r} with num_hidden_groups={groups} over "
            f"num_hidden_layers={layers} cannot be represented in keras-hub: AlbertBackbone "
            "shares whole layers within equal hidden groups (sharing='all', num_hidden_layers "
            "divisible by num_hidden_groups) or nothing (sharing='none'); BertBackbone shares "
            "nothing.")
    kwargs = dict(common, embedding_dim=config.embedding_size, num_groups=layers // per,
                  num_inner_repetitions=config.inner_group_num)
    notes = []
    if config.sharing != "all":
        notes.append(f"sharing={config.sharing!r}: every layer has its own weights; written as "
                     f"an AlbertBackbone with num_groups = num_layers = {layers}")
    if config.embedding_size == config.hidden_size:
        notes.append("embedding_size == hidden_size: AlbertBackbone's embedding_projection "
                     "is written as the identity (exact)")
    table_config = config.replace(num_hidden_groups=layers // per, sharing="all")
    return HubLayout(BACKBONE_CLASS, kwargs, name_map.KERAS_HUB, table_config, per, tuple(notes))


def _our_name(target: str, config: AlbertConfig, per: int) -> str:
    """Our weight name for a name-map target over keras-hub's groups (``group_3_inner_0_ffn/``
    of keras-hub group 3 = our owner of its first layer, ``layer_6_inner_0_ffn/`` say)."""
    from albert_tf.networks.encoder import sublayer_name
    m = _OWNER.match(target)
    if m is None:
        return target
    owner = sublayer_name(config, int(m[1]) * per, m[3], int(m[2]))
    return f"{owner}/{target[m.end():]}"


def hub_weights(config: AlbertConfig, layout: HubLayout, ours: Mapping[str, np.ndarray],
                report: MappingReport) -> dict[str, np.ndarray]:
    """``{keras-hub weight path: array}`` from our named encoder weights (the name map run
    backwards); records every row in ``report``."""
    out = {}
    for path, rule in layout.table.expand(layout.table_config).items():
        name = _our_name(rule.target, config, layout.layers_per_owner)
        if name in ours:
            value = np.asarray(ours[name], np.float32)
            report.mapped.append((name, path, rule.transform, tuple(value.shape)))
        elif name.startswith("embedding_projection/"):           # E == H
            value = name_map.identity_projection(name, config.hidden_size)
        else:
            raise ConversionError(f"our model has no weight {name!r} for keras-hub {path!r}.")
        shape = name_map.source_shape(rule, layout.table_config)
        out[path] = name_map.invert(rule.transform, value, shape)
    return out


def build_backbone(layout: HubLayout, values: Mapping[str, np.ndarray]):
    """The keras-hub backbone of ``layout`` holding ``values`` (every weight, exactly)."""
    import keras_hub
    backbone = getattr(keras_hub.models, layout.backbone)(**layout.kwargs)
    weights = {w.path: w for w in backbone.weights}
    if set(weights) != set(values):
        raise ConversionError(
            f"keras-hub {layout.backbone} weights {sorted(set(weights) - set(values))[:5]} "
            f"have no row in the name map, or rows {sorted(set(values) - set(weights))[:5]} no "
            "weight (another keras-hub version?).")
    for path, value in values.items():
        if tuple(weights[path].shape) != value.shape:
            raise ConversionError(f"keras-hub {path}: shape {list(weights[path].shape)} vs "
                                  f"ours {list(value.shape)}.")
        weights[path].assign(value)
    return backbone


def probe_difference(encoder, backbone, config: AlbertConfig) -> dict[str, float]:
    """Max abs differences of ``sequence_output [B, S, H]`` and ``pooled_output [B, H]``
    between our encoder and the keras-hub backbone on a fixed random batch with padding."""
    rng = np.random.RandomState(0)
    length = min(16, config.max_position_embeddings)
    ids = rng.randint(0, config.vocab_size, size=(2, length)).astype(np.int32)
    mask = np.ones_like(ids)
    mask[1, length // 2:] = 0
    types = np.zeros_like(ids)
    types[:, length // 2:] = min(1, config.type_vocab_size - 1)
    ours = encoder({"input_word_ids": ids, "input_mask": mask, "input_type_ids": types})
    theirs = backbone({"token_ids": ids, "segment_ids": types, "padding_mask": mask})
    return {k: float(np.abs(np.asarray(ours[k]) - np.asarray(theirs[k])).max())
            for k in ("sequence_output", "pooled_output")}


# ---------------------------------------------------------------- export: vocabulary
def find_vocab(model_dir: str) -> str | None:
    """The model directory's ``vocab.model`` (SentencePiece) or ``vocab.txt`` (WordPiece);
    None without either; a `ConversionError` with both."""
    from albert_tf.text import vocabulary as vocab_lib
    try:
        return vocab_lib.find_vocabulary(model_dir)[1]
    except vocab_lib.VocabularyError as e:
        if any(os.path.isfile(os.path.join(model_dir, n)) for n in vocab_lib.FILE_NAMES.values()):
            raise ConversionError(str(e)) from e                     # both
        return None


def _check_unique(path: str) -> None:
    """A `ConversionError` naming the lines of a token a ``vocab.txt`` lists twice."""
    try:
        with open(path, encoding="utf-8") as f:
            tokens = f.read().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise ConversionError(f"{path}: cannot read the WordPiece vocabulary ({e}).") from e
    seen: dict[str, int] = {}
    for i, token in enumerate(tokens):
        if token in seen:
            raise ConversionError(f"{path}: token {token!r} on lines {seen[token] + 1} and "
                                  f"{i + 1}; a WordPiece vocabulary lists each token once.")
        seen[token] = i


def tokenizer_casing(model_dir: str, do_lower_case: bool | None,
                     wordpiece: str | None = None) -> tuple[bool, str]:
    """``(lower-case?, where that came from)``: the argument, else what the directory records
    (``task.json``, ``tokenizer_config.json``), else the ``wordpiece`` vocab.txt's casing
    (uncased iff no non-special token has an upper-case letter), else lower-case."""
    from albert_tf.checkpoints import recorded_casing
    from albert_tf.text import vocabulary as vocab_lib
    if do_lower_case is not None:
        return do_lower_case, "--do_lower_case"
    try:
        recorded = recorded_casing(model_dir)
        if recorded is not None:
            return recorded, "task.json / tokenizer_config.json"
        if wordpiece is not None:
            uncased = vocab_lib.wordpiece_is_uncased(wordpiece)
            return uncased, f"{vocab_lib.WORDPIECE_FILE}: {'no' if uncased else 'some'} " \
                            "upper-case tokens"
    except (ValueError, TypeError, OSError) as e:        # VocabularyError is a ValueError
        raise ConversionError(f"{model_dir}: {e}") from e
    return True, "the albert-tf default"


def _albert_tokenizer(vocab: str, lower: bool, report: MappingReport):
    import keras_hub
    report.notes.append(
        "AlbertTokenizer runs SentencePiece only: give it text already through "
        f"albert_tf.text.preprocessing.preprocess_text(text, lower={lower}) (lower-casing, "
        "`` '' quotes, accents); ALBERT's digit-comma split ('1,000') is not applied")
    return keras_hub.models.AlbertTokenizer(proto=vocab)


def _bert_tokenizer(vocab: str, lower: bool, report: MappingReport):
    import keras_hub
    report.notes.append(f"BertTokenizer lowercase={lower}, strip_accents={lower} (as Hugging "
                        "Face's BertTokenizer)")
    return keras_hub.models.BertTokenizer(vocabulary=vocab, lowercase=lower, strip_accents=lower)


def hub_tokenizer(vocab: str, model_dir: str, config: AlbertConfig, report: MappingReport,
                  do_lower_case: bool | None = None):
    """keras-hub's ``AlbertTokenizer`` (``vocab.model``) or ``BertTokenizer`` (``vocab.txt``)
    for our vocabulary, which must fit the embedding matrix (`check_vocab_size`)."""
    from albert_tf.text import vocabulary as vocab_lib
    wordpiece = not vocab.endswith(".model")
    if wordpiece:
        _check_unique(vocab)
    lower, source = tokenizer_casing(model_dir, do_lower_case, vocab if wordpiece else None)
    report.notes.append(f"tokenizer casing: do_lower_case={lower} (from {source})")
    kind, build = ("BertTokenizer", _bert_tokenizer) if wordpiece else \
        ("AlbertTokenizer", _albert_tokenizer)
    try:
        tokenizer = build(vocab, lower, report)
    except (ValueError, TypeError, RuntimeError) as e:
        raise ConversionError(f"{vocab}: keras-hub's {kind} refuses it: "
                              f"{' '.join(str(e).split())}") from e
    try:
        vocab_lib.check_vocab_size(int(tokenizer.vocabulary_size()), config.vocab_size, vocab)
    except vocab_lib.VocabularyError as e:
        raise ConversionError(str(e)) from e
    report.assets.append(f"{vocab} -> keras-hub {kind}")
    return tokenizer


# ------------------------------------------------------------------ export: the preset
def _restore_encoder(model_dir: str, config: AlbertConfig, report: MappingReport):
    """Our encoder with the directory's weights; heads in the directory are reported."""
    from albert_tf.checkpoints import named_weights, restore_weights
    from albert_tf.networks.encoder import build_encoder
    encoder = build_encoder(config)
    restored = restore_weights(encoder, model_dir, required=("",))
    report.skipped += [(n, "head or training state: not part of a keras-hub backbone")
                       for n in restored.unused_in_checkpoint]
    return encoder, {n: v.numpy() for n, v in named_weights(encoder).items()}


def _note_pairing(backbone: str, tokenizer: str, report: MappingReport) -> None:
    """The backbone follows the architecture, the tokenizer the vocabulary file; a mixed
    pair (a BERT-shaped model with a SentencePiece vocabulary, say) is said in the report."""
    usual = "AlbertTokenizer" if backbone == BACKBONE_CLASS else "BertTokenizer"
    if tokenizer != usual:
        report.notes.append(f"the preset pairs a {backbone} (by architecture) with a {tokenizer} "
                            f"(by vocabulary): load it with {tokenizer}.from_preset; keras-hub's "
                            f"{backbone[:-len('Backbone')]} tasks expect a {usual}")


def save_preset(backbone, tokenizer, directory: str) -> None:
    """Writes ``backbone`` (and ``tokenizer``) with keras-hub's ``save_to_preset`` into
    ``directory`` and checks that ``from_preset`` gives the same weights back."""
    import keras_hub
    backbone.save_to_preset(directory)
    if tokenizer is not None:
        tokenizer.save_to_preset(directory)
    reloaded = getattr(keras_hub.models, type(backbone).__name__).from_preset(directory)
    theirs = {w.path: np.asarray(w.numpy()) for w in reloaded.weights}
    bad = [w.path for w in backbone.weights
           if not np.array_equal(np.asarray(w.numpy()), theirs.get(w.path))]
    if bad:
        raise ConversionError(f"{directory}: from_preset gives back other weights {bad[:5]}.")


def build_preset(model_dir: str, do_lower_case: bool | None = None):
    """``(keras-hub backbone, tokenizer or None, report)`` for an albert-tf model directory.

    The backbone (`hub_layout`: ``AlbertBackbone`` or ``BertBackbone``) holds our encoder
    weights; heads (MLM, SOP, task) are not part of it. The tokenizer comes from the
    directory's ``vocab.model`` / ``vocab.txt`` (None without either, said in the report).
    Both models run on a probe batch first. ``do_lower_case``: casing of a WordPiece
    tokenizer (default: ``task.json``, else the vocabulary's). Raises `ConversionError`.
    """
    from albert_tf.checkpoints import load_config_from_dir
    config = load_config_from_dir(model_dir)
    layout = hub_layout(config, model_dir)
    vocab = find_vocab(model_dir)
    report = MappingReport(source=f"albert-tf model directory {model_dir} -> keras-hub "
                                  f"{layout.backbone} preset", notes=list(layout.notes))
    if config.attention_probs_dropout_prob != config.hidden_dropout_prob:
        report.notes.append(f"keras-hub has one dropout rate: dropout={config.hidden_dropout_prob}"
                            f" (attention dropout {config.attention_probs_dropout_prob} dropped)")
    tokenizer = None
    if vocab is None:
        report.notes.append(f"no vocab.model or vocab.txt in {model_dir}: wrote the backbone "
                            "only (no tokenizer)")
    else:
        tokenizer = hub_tokenizer(vocab, model_dir, config, report, do_lower_case)
        _note_pairing(layout.backbone, type(tokenizer).__name__, report)
    encoder, ours = _restore_encoder(model_dir, config, report)
    backbone = build_backbone(layout, hub_weights(config, layout, ours, report))
    diffs = probe_difference(encoder, backbone, config)
    report.notes.append("probe batch, max abs difference to ours: "
                        + ", ".join(f"{k} {v:.2e}" for k, v in diffs.items()))
    if max(diffs.values()) > PROBE_TOLERANCE:
        raise ConversionError(f"keras-hub's {layout.backbone} differs from ours by "
                              f"{max(diffs.values()):.3g} on a probe batch.", report)
    return backbone, tokenizer, report
