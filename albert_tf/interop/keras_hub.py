"""keras-hub `AlbertBackbone` / `BertBackbone` interop (Keras 3), both directions.

keras-hub is imported only inside these functions: the rest of albert-tf runs on
Keras 2 (``tf_keras``) and must not pull Keras 3 in at import time.

A keras-hub ``AlbertBackbone`` always has ``embedding_projection`` (also when E == H),
uses the tanh GELU and LayerNorm epsilon 1e-12, and gives layer ``i`` of ``L`` to group
``i // (L / G)`` (it requires ``L % G == 0``), which is the group our formula gives.
``BertBackbone`` is the same computation without projection or sharing (tanh GELU too).

Reading: `read_keras_hub` (``albert-tf-convert --from=keras_hub``); a ``TextClassifier``
task preset keeps its head (`read_head`, `task_model`). Writing (``albert-tf-convert
--to=keras_hub``, `albert_tf.interop.converter.export_keras_hub`): `build_preset` builds
the keras-hub backbone with our config and weights, the tokenizer (a SentencePiece
vocabulary carrying ALBERT's preprocessing: `albert_tf.text.plain_spm`) and preprocessor
(``preprocessor.json``: the finetune length, else ``max_position_embeddings``) and, for a
finetuned classifier, the ``AlbertTextClassifier`` / ``BertTextClassifier`` with our head
(`hub_task`; heads keras-hub has no task for are reported); `save_preset` writes them with
keras-hub's own ``save_to_preset``; `hub_layout` says which backbone represents a config,
or why none can.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
from typing import Any, Mapping

import numpy as np

from albert_tf.config import ACTIVATIONS, AlbertConfig, ConfigError
from albert_tf.interop import name_map
from albert_tf.interop.readers import TensorSource, as_float32
from albert_tf.interop.conversion_report import ConversionError, MappingReport

BACKBONE_CLASS = "AlbertBackbone"
BERT_BACKBONE_CLASS = "BertBackbone"
BACKBONE_CLASSES = (BACKBONE_CLASS, BERT_BACKBONE_CLASS)
# Where an exported preset keeps what keras-hub has no place for (our task.json: label
# names, task; the model directory's vocabulary as it was), for --from=keras_hub.
EXTRAS_DIR = "albert_tf"


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
    cls = _task_class(path) or getattr(keras_hub.models, class_name)
    try:
        return cls.from_preset(path)
    except Exception as e:  # noqa: BLE001 - Keras raises many types for bad files
        raise ConversionError(f"{path}: keras-hub could not load the preset ({e}).") from e


def _head_of(is_a):
    """Our `Head` whose keras-hub task ``is_a(keras-hub task class)`` says (None: none)."""
    import keras_hub

    import albert_tf.heads.registry as heads
    return heads.for_keras_hub_task(lambda base: is_a(getattr(keras_hub.models, base)))


def _task_class(path: str):
    """The keras-hub task class of the preset's ``task.json`` when one of our heads is that
    task (`Head.keras_hub_task`: a ``TextClassifier``), else None (the backbone is read)."""
    import keras_hub

    from albert_tf.checkpoints import TASK_FILE
    try:
        with open(os.path.join(path, TASK_FILE), encoding="utf-8") as f:
            name = json.load(f).get("class_name")
    except (OSError, ValueError, AttributeError):
        return None
    cls = getattr(keras_hub.models, str(name), None)
    if not isinstance(cls, type) or _head_of(lambda base: issubclass(cls, base)) is None:
        return None
    return cls


@dataclasses.dataclass
class HubHead:
    """The head of a keras-hub task, for our task model (`task_model`).

    Attributes:
      task: the keras-hub task (an ``AlbertTextClassifier``, say).
      info: our `TaskInfo` for it (the preset's ``albert_tf/task.json`` when it has one).
      weights: ``{our weight name: (keras-hub weight path, array)}``, e.g.
        ``classifier/kernel [H, C]`` from ``logits/kernel``.
    """

    task: Any
    info: Any
    weights: dict[str, tuple[str, np.ndarray]]


def _hub_task_info(task, head, path: str | None, assets: list[str], config: AlbertConfig):
    """Our `TaskInfo` for a keras-hub classifier: the one an albert-tf export kept in the
    preset (`EXTRAS_DIR`), else labels ``0 .. C-1``, the preprocessor's sequence length and
    casing."""
    from albert_tf.checkpoints import TASK_FILE, TaskInfo
    from albert_tf.text import vocabulary as vocab_lib
    kept = os.path.join(path, EXTRAS_DIR, TASK_FILE) if path else ""
    preprocessor = getattr(task, "preprocessor", None)
    try:
        if os.path.isfile(kept):
            info = TaskInfo.from_json(kept)
        else:
            info = TaskInfo(
                "keras_hub", head.name, tuple(str(i) for i in range(task.num_classes)),
                getattr(preprocessor, "sequence_length", config.max_position_embeddings),
                getattr(getattr(preprocessor, "tokenizer", None), "lowercase", True))
        if assets:
            info = dataclasses.replace(info, vocab_type=vocab_lib.kind_from_name(assets[0]))
    except ValueError as e:
        raise ConversionError(f"{kept or type(task).__name__}: {e}") from e
    if len(info.label_list or ()) != task.num_classes:
        raise ConversionError(f"{kept}: {len(info.label_list or ())} labels for a keras-hub "
                              f"task with num_classes={task.num_classes}.")
    if info.max_seq_length > config.max_position_embeddings:
        raise ConversionError(f"keras-hub preprocessor sequence_length={info.max_seq_length} "
                              "exceeds the backbone's max_sequence_length="
                              f"{config.max_position_embeddings}.")
    return info


def read_head(task, path: str | None, assets: list[str], config: AlbertConfig):
    """The `HubHead` of a keras-hub task object whose head is one of ours (a
    ``TextClassifier``: `Head.keras_hub_task`), else None. One-line `ConversionError`
    for what our head cannot compute: an activation on the logits, fewer than 2 classes."""
    import keras
    head = _head_of(lambda base: isinstance(task, base))
    if head is None:
        return None
    where = f"keras-hub {type(task).__name__}"
    activation = keras.activations.serialize(task.activation)
    if activation not in (None, "linear"):
        raise ConversionError(f"{where}: activation={activation!r} on the logits; albert-tf's "
                              f"{head.name} head outputs logits (activation=None).")
    if task.num_classes < 2:
        raise ConversionError(f"{where}: num_classes={task.num_classes}; albert-tf's "
                              f"{head.name} head needs at least 2 classes.")
    dense = task.output_dense
    weights = {f"{head.keras_hub_dense}/{part}": (v.path, as_float32(np.array(v.numpy())))
               for part, v in (("kernel", dense.kernel), ("bias", dense.bias))}
    return HubHead(task, _hub_task_info(task, head, path, assets, config), weights)


# The vocabulary files of a preset, in the order they are preferred: the model directory's
# vocabulary kept by an albert-tf export (`EXTRAS_DIR`), then keras-hub's tokenizer assets.
PRESET_VOCABULARIES = (f"{EXTRAS_DIR}/vocab.model", f"{EXTRAS_DIR}/vocab.txt",
                       "assets/tokenizer/vocabulary.spm", "vocabulary.spm",
                       "assets/tokenizer/vocabulary.txt")


def read_keras_hub(backbone_or_path):
    """``(config, tensors, assets, head)`` of an `AlbertBackbone` or `BertBackbone` (object or
    preset directory). The assets are the preset's vocabulary, if any (`PRESET_VOCABULARIES`:
    ``vocabulary.spm``, SentencePiece, ``AlbertTokenizer``; ``vocabulary.txt``, WordPiece,
    ``BertTokenizer``).

    A task is accepted too: a ``*TextClassifier`` (preset with ``task.json``, or object)
    gives its head (`read_head`; None otherwise), a ``*MaskedLM`` object its backbone (the
    keras-hub MLM head is reported as skipped).
    """
    assets: list[str] = []
    path = None
    if isinstance(backbone_or_path, (str, os.PathLike)):
        path = os.fspath(backbone_or_path)
        if not os.path.isdir(path):
            raise ConversionError(f"{path!r} is not a keras-hub preset directory.")
        from albert_tf import user_inputs
        problem = user_inputs.convert_source_problem(path, "keras_hub", flag=None)
        if problem:   # an albert-tf model directory, a Hugging Face directory, an export
            raise ConversionError(problem)
        obj = _load_preset(path)
        description = f"keras-hub preset {path}"
        assets = [os.path.join(path, n) for n in PRESET_VOCABULARIES
                  if os.path.isfile(os.path.join(path, n))]
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
    head = read_head(obj, path, assets, config) if backbone is not obj else None
    if head is not None and head.task.dropout != config.hidden_dropout_prob:
        config = config.replace(classifier_dropout_prob=float(head.task.dropout))
    source = TensorSource(description)
    seen = set()
    for w in list(backbone.weights) + extra:
        if w.path in seen:
            continue
        seen.add(w.path)
        source.add(w.path, w.shape, lambda w=w: as_float32(np.array(w.numpy())))
    return config, source, assets, head


def task_model(pretrainer, config: AlbertConfig, head: HubHead, report: MappingReport):
    """Our task model for a keras-hub task: the encoder weights of ``pretrainer`` (the
    backbone, mapped) and the task's head weights; its logits are checked against the
    keras-hub task's on a probe batch. The MLM/SOP heads are not part of it."""
    from albert_tf.checkpoints import build_task_model, named_weights
    model = build_task_model(config, head.info)
    encoder = named_weights(pretrainer)
    for name, variable in named_weights(model).items():
        if name in head.weights:
            source, value = head.weights[name]
            variable.assign(value)
            report.mapped.append((source, name, name_map.IDENTITY, tuple(value.shape)))
        else:
            variable.assign(encoder[name].numpy())
    report.missing = [(n, why) for n, why in report.missing
                      if not n.startswith(name_map.HEAD_PREFIXES)]
    report.notes.append(f"keras-hub {type(head.task).__name__}: written as an albert-tf "
                        f"{head.info.head} model (task.json labels {list(head.info.label_list)}, "
                        f"max_seq_length {head.info.max_seq_length}; no MLM/SOP heads)")
    _check_logits(model, head.task, config, report)
    return model


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
    ids, mask, types = _probe_batch(config)
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


# What keras-hub's tokenizers do differently from ours, for the report (measured with
# keras-hub 0.32 on SST-2 dev and odd strings: tests/test_interop_keras_hub_export.py).
ALBERT_TOKENIZER_NOTE = (
    "AlbertTokenizer: vocabulary.spm carries ALBERT's preprocessing in its normalizer "
    "(lower-casing, `` '' quotes, accents; albert_tf.text.plain_spm) and leaves the "
    "digit-comma pieces unused, so keras-hub's ids are ours on raw text; they can differ "
    "only where ALBERT's digit-comma split depends on context ('pre-2000,') and on a Greek "
    "final sigma")
BERT_TOKENIZER_NOTE = (
    "BertTokenizer: keras-hub's ids are ours on printable-ASCII text; on other text they "
    "can differ: it case-folds with NFKC (ß -> ss, ligatures, full-width and circled forms, "
    "… -> ...), splits at control and format characters (ours drops them), does not split "
    "at non-ASCII spaces (NBSP, U+3000, U+2028) and keeps U+FFFD")


def _albert_tokenizer(py, vocab: str, report: MappingReport):
    """keras-hub's AlbertTokenizer over our vocabulary with ALBERT's preprocessing in it."""
    import keras_hub

    from albert_tf.text.plain_spm import PROBE_TEXTS, carrying_proto
    try:
        proto = carrying_proto(py)
    except ValueError as e:                                   # VocabularyError
        raise ConversionError(f"{vocab}: {e}; keras-hub's AlbertTokenizer would tokenize "
                              "differently.") from None
    report.notes.append(ALBERT_TOKENIZER_NOTE)
    return keras_hub.models.AlbertTokenizer(proto=proto), PROBE_TEXTS


def _bert_tokenizer(py, vocab: str, report: MappingReport):
    """keras-hub's BertTokenizer over our ``vocab.txt``, with our casing; probed on the
    printable-ASCII texts only (`BERT_TOKENIZER_NOTE`)."""
    import keras_hub

    from albert_tf.export.sdk_metadata import WORDPIECE_PROBE_TEXTS, in_wordpiece_same_ids
    lower = py.do_lower_case
    report.notes.append(f"BertTokenizer lowercase={lower}, strip_accents={lower} (as Hugging "
                        "Face's BertTokenizer)")
    report.notes.append(BERT_TOKENIZER_NOTE)
    tokenizer = keras_hub.models.BertTokenizer(vocabulary=vocab, lowercase=lower,
                                               strip_accents=lower)
    return tokenizer, tuple(filter(in_wordpiece_same_ids, WORDPIECE_PROBE_TEXTS))


def hub_tokenizer(vocab: str, model_dir: str, config: AlbertConfig, report: MappingReport,
                  do_lower_case: bool | None = None):
    """``(keras-hub tokenizer, our Python tokenizer, probe texts)`` for our vocabulary:
    ``AlbertTokenizer`` (``vocab.model``, carrying our preprocessing) or ``BertTokenizer``
    (``vocab.txt``). The vocabulary must fit the embedding matrix (`check_vocab_size`) and
    keras-hub's ids must be ours on the probe texts (a `ConversionError` naming the first
    text that differs)."""
    from albert_tf.text import vocabulary as vocab_lib
    from albert_tf.text.plain_spm import first_difference
    wordpiece = not vocab.endswith(".model")
    if wordpiece:
        _check_unique(vocab)
    lower, source = tokenizer_casing(model_dir, do_lower_case, vocab if wordpiece else None)
    report.notes.append(f"tokenizer casing: do_lower_case={lower} (from {source})")
    kind, build = ("BertTokenizer", _bert_tokenizer) if wordpiece else \
        ("AlbertTokenizer", _albert_tokenizer)
    try:
        py = vocab_lib.load_tokenizer(vocab, do_lower_case=lower)
    except ValueError as e:                                   # VocabularyError
        raise ConversionError(str(e)) from e
    try:
        tokenizer, probes = build(py, vocab, report)
    except ConversionError:
        raise
    except (ValueError, TypeError, RuntimeError) as e:
        raise ConversionError(f"{vocab}: keras-hub's {kind} refuses it: "
                              f"{' '.join(str(e).split())}") from e
    try:
        vocab_lib.check_vocab_size(int(tokenizer.vocabulary_size()), config.vocab_size, vocab)
    except vocab_lib.VocabularyError as e:
        raise ConversionError(str(e)) from e
    difference = first_difference(py, tokenizer, probes)
    if difference:
        raise ConversionError(f"{vocab}: keras-hub's {kind} would give other ids than "
                              f"albert-tf: {difference} in keras-hub.")
    report.assets.append(f"{vocab} -> keras-hub {kind}")
    return tokenizer, py, probes


# ------------------------------------------------------------------ export: the preset
def _restore_encoder(model_dir: str, config: AlbertConfig, report: MappingReport):
    """Our encoder with the directory's weights; heads in the directory are reported."""
    from albert_tf.checkpoints import named_weights, restore_weights
    from albert_tf.networks.encoder import build_encoder
    encoder = build_encoder(config)
    restored = restore_weights(encoder, model_dir, required=("",), allow_missing=("pooler/",))
    report.skipped += [(n, "head or training state: not part of a keras-hub backbone")
                       for n in restored.unused_in_checkpoint]
    report.missing += [(n, "not in the model directory (a span or token model has no "
                           "pooler): written freshly initialized; pooled_output is not trained")
                       for n in restored.missing_in_checkpoint]
    return encoder, {n: v.numpy() for n, v in named_weights(encoder).items()}


def _note_pairing(backbone: str, tokenizer: str, report: MappingReport) -> None:
    """The backbone follows the architecture, the tokenizer the vocabulary file; a mixed
    pair (a BERT-shaped model with a SentencePiece vocabulary, say) is said in the report."""
    usual = "AlbertTokenizer" if backbone == BACKBONE_CLASS else "BertTokenizer"
    if tokenizer != usual:
        report.notes.append(f"the preset pairs a {backbone} (by architecture) with a {tokenizer} "
                            f"(by vocabulary): load it with {tokenizer}.from_preset; keras-hub's "
                            f"{backbone[:-len('Backbone')]} tasks expect a {usual}")


PACKING_PROBE_PAIRS = 4                 # probe-text pairs packed as text pairs


@dataclasses.dataclass
class HubPreset:
    """What `build_preset` builds and `save_preset` writes.

    Attributes:
      model: the keras-hub task of a finetuned model whose head keras-hub has
        (``AlbertTextClassifier`` / ``BertTextClassifier``), else the backbone.
      preprocessor: the ``*TextClassifierPreprocessor`` (tokenizer + ``[CLS] a [SEP] b
        [SEP]`` packing to ``[B, sequence_length]``); None without a vocabulary.
      extras: ``{file name under EXTRAS_DIR/: the file to copy}``.
      report: the mapping report.
    """

    model: Any
    preprocessor: Any
    extras: dict[str, str]
    report: MappingReport


def _check_packing(preprocessor, py, texts, sequence_length: int) -> None:
    """keras-hub's packed ``token_ids`` / ``segment_ids`` / ``padding_mask`` ``[B, S]`` of
    single texts and text pairs must be our ``pack``'s; a `ConversionError` if not."""
    texts = list(texts) + [" ".join(["word"] * sequence_length)]              # truncated
    pairs = [(a, b) for a in texts[-PACKING_PROBE_PAIRS:] for b in texts[:2] + texts[-1:]]
    packed = ((preprocessor(texts), [(t, None) for t in texts]),
              (preprocessor(x=([a for a, _ in pairs], [b for _, b in pairs])), pairs))
    for got, cases in packed:
        for row, (a, b) in enumerate(cases):
            theirs = {"input_word_ids": got["token_ids"][row],
                      "input_type_ids": got["segment_ids"][row],
                      "input_mask": got["padding_mask"][row]}
            want = py.pack(a, b, max_seq_length=sequence_length)
            if any(np.asarray(theirs[k]).astype(int).tolist() != v for k, v in want.items()):
                raise ConversionError(f"keras-hub's preprocessor packs {(a, b)!r} otherwise "
                                      "than albert-tf.")


def hub_preprocessor(tokenizer, py, probes, config: AlbertConfig, info,
                     report: MappingReport):
    """keras-hub's ``AlbertTextClassifierPreprocessor`` / ``BertTextClassifierPreprocessor``
    (by tokenizer) packing to ``task.json``'s ``max_seq_length`` (``info``: the length the
    model was finetuned and is evaluated at), else to ``max_position_embeddings`` (the
    longest input the backbone takes); checked against our packing on the probe texts."""
    import keras_hub
    if info is not None:
        length, why = info.max_seq_length, "task.json max_seq_length"
    else:
        length, why = config.max_position_embeddings, "max_position_embeddings"
    if length > config.max_position_embeddings:
        raise ConversionError(f"task.json max_seq_length={length} exceeds the model's "
                              f"max_position_embeddings={config.max_position_embeddings}.")
    family = type(tokenizer).__name__[:-len("Tokenizer")]
    cls = getattr(keras_hub.models, f"{family}TextClassifierPreprocessor")
    preprocessor = cls(tokenizer=tokenizer, sequence_length=length)
    _check_packing(preprocessor, py, probes, length)
    report.notes.append(f"{cls.__name__} sequence_length={length} (from {why}), "
                        "truncation as ours (round_robin = longest first)")
    return preprocessor


def _probe_batch(config: AlbertConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """int32 ``[2, S]`` ids, mask and type ids (the second row half padding), S <= 16."""
    rng = np.random.RandomState(0)
    length = min(16, config.max_position_embeddings)
    ids = rng.randint(0, config.vocab_size, size=(2, length)).astype(np.int32)
    mask = np.ones_like(ids)
    mask[1, length // 2:] = 0
    types = np.zeros_like(ids)
    types[:, length // 2:] = min(1, config.type_vocab_size - 1)
    return ids, mask, types


def _check_logits(ours, task, config: AlbertConfig, report: MappingReport) -> None:
    """Our task model's and the keras-hub task's ``logits [B, C]`` on the probe batch
    (`_probe_batch`) must agree to `PROBE_TOLERANCE`; the difference goes in the report."""
    ids, mask, types = _probe_batch(config)
    mine = ours({"input_word_ids": ids, "input_mask": mask, "input_type_ids": types})["logits"]
    theirs = task({"token_ids": ids, "segment_ids": types, "padding_mask": mask})
    diff = float(np.abs(np.asarray(mine) - np.asarray(theirs)).max())
    report.notes.append(f"probe batch, max abs difference to ours: logits {diff:.2e}")
    if diff > PROBE_TOLERANCE:
        raise ConversionError(f"keras-hub's {type(task).__name__} differs from ours by "
                              f"{diff:.3g} on a probe batch.", report)


def hub_task(model_dir: str, layout: HubLayout, backbone, preprocessor, info,
             report: MappingReport):
    """The keras-hub task of a finetuned model (our head's weights in it), or ``backbone``
    with a note when keras-hub has no task for the head (`Head.keras_hub_task`)."""
    import keras_hub

    import albert_tf.heads.registry as heads
    from albert_tf.checkpoints import load_task_model, named_weights
    head = heads.get(info.head)
    if head.keras_hub_task is None:
        report.notes.append(f"task.json head {head.name!r}: keras-hub {keras_hub.__version__} "
                            "has no task that computes it; the preset holds the backbone"
                            f"{' and preprocessor' if preprocessor else ''} only")
        return backbone
    ours, _ = load_task_model(model_dir)
    cls = getattr(keras_hub.models, layout.backbone[:-len("Backbone")] + head.keras_hub_task)
    task = cls(backbone=backbone, num_classes=len(info.label_list), preprocessor=preprocessor,
               dropout=ours.get_layer("classifier_dropout").rate)
    weights = named_weights(ours)
    mapped = set()
    for part, variable in (("kernel", task.output_dense.kernel),
                           ("bias", task.output_dense.bias)):
        name = f"{head.keras_hub_dense}/{part}"
        variable.assign(weights[name].numpy())
        mapped.add(name)
        report.mapped.append((name, variable.path, name_map.IDENTITY,
                              tuple(weights[name].shape.as_list())))
    report.skipped = [(n, why) for n, why in report.skipped if n not in mapped]
    report.source = report.source.replace(f"{layout.backbone} preset", f"{cls.__name__} preset")
    _check_logits(ours, task, ours.albert_config, report)
    return task


def _extras(model_dir: str, vocab: str | None, report: MappingReport) -> dict[str, str]:
    """Our task.json and vocabulary, kept in the preset under `EXTRAS_DIR`."""
    from albert_tf.checkpoints import TASK_FILE
    files = [f for f in [os.path.join(model_dir, TASK_FILE), vocab] if f and os.path.isfile(f)]
    report.assets += [f"{f} -> {EXTRAS_DIR}/{os.path.basename(f)} (for albert-tf-convert "
                      "--from=keras_hub)" for f in files]
    return {os.path.basename(f): f for f in files}


def save_preset(preset: HubPreset, directory: str) -> None:
    """Writes ``preset`` with keras-hub's own ``save_to_preset`` (a task writes its backbone
    and preprocessor too) into ``directory`` (the extras under `EXTRAS_DIR`) and checks that
    ``from_preset`` gives the same weights and sequence length back."""
    model, preprocessor = preset.model, preset.preprocessor
    model.save_to_preset(directory)
    is_task = hasattr(model, "backbone")
    if preprocessor is not None and not is_task:
        preprocessor.save_to_preset(directory)
    if preset.extras:
        os.makedirs(os.path.join(directory, EXTRAS_DIR))
        for name, path in preset.extras.items():
            shutil.copyfile(path, os.path.join(directory, EXTRAS_DIR, name))
    reloaded = type(model).from_preset(directory)
    theirs = {w.path: np.asarray(w.numpy()) for w in reloaded.weights}
    bad = [w.path for w in model.weights
           if not np.array_equal(np.asarray(w.numpy()), theirs.get(w.path))]
    if bad:
        raise ConversionError(f"{directory}: from_preset gives back other weights {bad[:5]}.")
    if preprocessor is not None:
        back = reloaded.preprocessor if is_task else type(preprocessor).from_preset(directory)
        if back.sequence_length != preprocessor.sequence_length:
            raise ConversionError(f"{directory}: from_preset gives back sequence_length "
                                  f"{back.sequence_length}, not {preprocessor.sequence_length}.")


def _model_task_info(model_dir: str):
    """The directory's `TaskInfo` (None without task.json)."""
    from albert_tf.checkpoints import TASK_FILE, load_task_info
    if not os.path.isfile(os.path.join(model_dir, TASK_FILE)):
        return None
    try:
        return load_task_info(model_dir)
    except ValueError as e:                         # a bad task.json: one line
        raise ConversionError(str(e)) from e


def build_preset(model_dir: str, do_lower_case: bool | None = None) -> HubPreset:
    """The keras-hub preset (`HubPreset`) of an albert-tf model directory.

    The backbone (`hub_layout`: ``AlbertBackbone`` or ``BertBackbone``) holds our encoder
    weights; a finetuned classifier (``task.json``) becomes keras-hub's
    ``AlbertTextClassifier`` / ``BertTextClassifier`` with our head's weights, other heads
    are reported (keras-hub has no task for them), MLM/SOP heads are not part of it. The
    tokenizer and preprocessor come from the directory's ``vocab.model`` / ``vocab.txt``
    (none without either, said in the report). Both models run on a probe batch first.
    ``do_lower_case``: the tokenizer's casing (default: ``task.json``, else the
    vocabulary's). Raises `ConversionError`.
    """
    from albert_tf.checkpoints import load_config_from_dir
    config = load_config_from_dir(model_dir)
    layout = hub_layout(config, model_dir)
    vocab = find_vocab(model_dir)
    info = _model_task_info(model_dir)
    report = MappingReport(source=f"albert-tf model directory {model_dir} -> keras-hub "
                                  f"{layout.backbone} preset", notes=list(layout.notes))
    if config.attention_probs_dropout_prob != config.hidden_dropout_prob:
        report.notes.append(f"keras-hub has one dropout rate: dropout={config.hidden_dropout_prob}"
                            f" (attention dropout {config.attention_probs_dropout_prob} dropped)")
    preprocessor = None
    if vocab is None:
        report.notes.append(f"no vocab.model or vocab.txt in {model_dir}: wrote the backbone "
                            "only (no tokenizer)")
    else:
        tokenizer, py, probes = hub_tokenizer(vocab, model_dir, config, report, do_lower_case)
        _note_pairing(layout.backbone, type(tokenizer).__name__, report)
        preprocessor = hub_preprocessor(tokenizer, py, probes, config, info, report)
    encoder, ours = _restore_encoder(model_dir, config, report)
    backbone = build_backbone(layout, hub_weights(config, layout, ours, report))
    diffs = probe_difference(encoder, backbone, config)
    report.notes.append("probe batch, max abs difference to ours: "
                        + ", ".join(f"{k} {v:.2e}" for k, v in diffs.items()))
    if max(diffs.values()) > PROBE_TOLERANCE:
        raise ConversionError(f"keras-hub's {layout.backbone} differs from ours by "
                              f"{max(diffs.values()):.3g} on a probe batch.", report)
    model = backbone if info is None else hub_task(model_dir, layout, backbone, preprocessor,
                                                   info, report)
    return HubPreset(model, preprocessor, _extras(model_dir, vocab, report), report)
