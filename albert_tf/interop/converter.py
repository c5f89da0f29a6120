"""Converting external weights into an albert-tf model directory, and ours to Hugging Face.

Every conversion runs the same steps: read the source tensors and config, look every
source name up in the format's `NameTable`, check each shape against the weight of a
freshly built pretrainer for that config, and only when nothing is wrong assign the
values and write the output directory through `albert_tf.outputs` (a staged sibling that is
renamed into place), so a failed conversion never leaves a half-written directory and never
replaces files albert-tf did not write.

Output (``albert-tf-convert --output_dir=DIR``)::

    DIR/config.json              AlbertConfig (read by AlbertConfig.from_json)
    DIR/weights.index, .data-*   name-keyed TF checkpoint (albert_tf.checkpoints)
    DIR/conversion_report.txt    the mapping report
    DIR/vocab.model | vocab.txt  the vocabulary found beside the source, if any: a
                                 SentencePiece model or a WordPiece vocab.txt
    DIR/tokenizer_config.json    its casing (``do_lower_case``), when the source says it
                                 (`albert_tf.text.vocabulary`)

``albert_tf.load_pretrainer(DIR)`` / ``albert_tf.load_encoder(DIR)`` read it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from typing import Any, Callable

import numpy as np

from albert_tf import outputs
from albert_tf.checkpoints import (CONFIG_FILE, TASK_FILE, WEIGHTS_PREFIX,
                                   load_config_from_dir, named_weights, pretrainer_prefixes,
                                   restore_weights, write_weights)
from albert_tf.config import AlbertConfig, activation_to_hf
from albert_tf.interop import name_map
from albert_tf.interop.name_map import HEAD_PREFIXES, NameTable
from albert_tf.interop.readers import TensorSource, read_google, read_hf
from albert_tf.interop.conversion_report import ConversionError, MappingReport
from albert_tf.text import vocabulary as vocab_lib

REPORT_FILE = "conversion_report.txt"
SOURCE_FORMATS = ("google", "hf", "keras_hub")


# ----------------------------------------------------------------------- group layout
def hf_group(config: AlbertConfig, i: int) -> int:
    """Hugging Face ``AlbertTransformer``: ``int(i / (L / G))``."""
    return int(i / (config.num_hidden_layers / config.num_hidden_groups))


def keras_hub_group(config: AlbertConfig, i: int) -> int:
    """keras-hub ``AlbertBackbone``: ``i // (L // G)`` (needs ``L % G == 0``)."""
    return i // (config.num_hidden_layers // config.num_hidden_groups)


def check_group_layout(config: AlbertConfig, formula: Callable[[AlbertConfig, int], int],
                       where: str) -> None:
    """Raises unless ``formula`` gives every layer the group our encoder gives it."""
    for i in range(config.num_hidden_layers):
        if formula(config, i) != config.group_of_layer(i):
            raise ConversionError(
                f"{where} puts layer {i} in hidden group {formula(config, i)} but albert-tf "
                f"(the original int(i / L * G)) puts it in group {config.group_of_layer(i)} for "
                f"num_hidden_layers={config.num_hidden_layers}, num_hidden_groups="
                f"{config.num_hidden_groups}; this model cannot be represented exactly.")


# ---------------------------------------------------------------------------- mapping
def _transformed_shape(transform: str, shape: tuple[int, ...],
                       target: tuple[int, ...]) -> tuple[int, ...]:
    if transform == name_map.TRANSPOSE:
        return tuple(reversed(shape))
    if transform == name_map.RESHAPE:
        return target if int(np.prod(shape)) == int(np.prod(target)) else shape
    return tuple(shape)


def _identity_projection(rows: dict[str, np.ndarray], hidden: int) -> bool:
    kernel = rows.get("embedding_projection/kernel")
    bias = rows.get("embedding_projection/bias")
    if kernel is not None and not np.array_equal(kernel, np.eye(hidden, dtype=kernel.dtype)):
        return False
    return bias is None or not np.any(bias)


def map_into_pretrainer(source: TensorSource, table: NameTable, config: AlbertConfig,
                        report: MappingReport, allow_unmapped: bool = False, model=None):
    """Builds our pretrainer for ``config`` (or takes ``model``: a Hugging Face task's task
    model) and loads ``source`` into it through ``table``.

    Raises `ConversionError` (with ``report``) listing every problem: shapes that
    disagree with the config, source tensors in no row of the table (unless
    ``allow_unmapped``), missing encoder weights, untied decoders, a non-identity
    projection when E == H. Heads the source lacks stay freshly initialized.
    """
    from albert_tf.models.pretrainer import build_pretrainer
    name_map.table_for(config, table)
    model = build_pretrainer(config) if model is None else model
    variables = named_weights(model)
    mapping = _Mapping(source, table, config, report,
                       expected={n: tuple(v.shape.as_list()) for n, v in variables.items()},
                       rules=table.expand(config))
    mapping.find_duplicates()
    for name in source.names():
        mapping.map_tensor(name)
    mapping.check_projection()
    mapping.check_missing()
    mapping.check_unmapped(allow_unmapped)
    mapping.raise_problems()
    for target, value in mapping.values.items():
        variables[target].assign(value)
    return model


@dataclasses.dataclass
class _Mapping:
    """`map_into_pretrainer`'s work: every source tensor looked up in the table's
    ``rules`` (canonical source name -> rule) and checked against the ``expected`` shapes
    of our weights; ``values`` (our weight name -> array) to assign, ``problems`` (in the
    order they are listed), and ``report`` filled as it goes."""

    source: TensorSource
    table: NameTable
    config: AlbertConfig
    report: MappingReport
    expected: dict[str, tuple[int, ...]]
    rules: dict
    by_canonical: dict[str, str] = dataclasses.field(default_factory=dict)
    problems: list[str] = dataclasses.field(default_factory=list)
    values: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    value_source: dict[str, str] = dataclasses.field(default_factory=dict)
    projection: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    projection_names: list[str] = dataclasses.field(default_factory=list)

    def find_duplicates(self) -> None:
        """Source names by canonical name; two names of one tensor are a problem."""
        for name in self.source.names():
            canonical = self.source.canonical(name)
            if canonical in self.by_canonical:
                self.problems.append(f"{name} and {self.by_canonical[canonical]} are the same "
                                     f"tensor ({canonical}) twice")
            self.by_canonical[canonical] = name

    def map_tensor(self, name: str) -> None:
        """One source tensor: its value for our weight, once its shape fits, or why not
        (a tied copy, skipped, unknown, a projection E == H, a problem)."""
        rule = self.rules.get(self.source.canonical(name))
        if rule is None:
            self._unmapped(name)
        elif rule.target not in self.expected:
            self._not_in_model(name, rule)
        elif self._shape_fits(name, rule):
            if rule.target in self.values:
                self.problems.append(f"{name} and {self.value_source[rule.target]} both map "
                                     f"to {rule.target}")
                return
            target_shape = self.expected[rule.target]
            self.values[rule.target] = name_map.apply(rule.transform, self.source.get(name),
                                                      target_shape)
            self.value_source[rule.target] = name
            self.report.mapped.append((name, rule.target, rule.transform,
                                       tuple(self.source.shape(name))))

    def _unmapped(self, name: str) -> None:
        """A tensor in no row: a tied copy (equal to its tensor, or a problem), skipped with
        the table's reason, or unknown."""
        canonical = self.source.canonical(name)
        tied_to = self.table.tie_of(canonical)
        if tied_to is not None:
            other = self.by_canonical.get(tied_to)
            if other is None:
                self.problems.append(f"{name}: a tied copy of {tied_to}, which the source "
                                     "lacks")
            elif self.source.shape(other) == self.source.shape(name) and np.array_equal(
                    self.source.get(name), self.source.get(other)):
                self.report.skipped.append((name, f"tied copy of {other}"))
            else:
                self.problems.append(f"{name} differs from {other}; albert-tf ties the MLM "
                                     "decoder to that tensor, so an untied decoder cannot be "
                                     "represented")
            return
        reason = self.table.skip_reason(canonical)
        if reason is not None:
            self.report.skipped.append((name, reason))
        else:
            self.report.unknown.append(name)

    def _not_in_model(self, name: str, rule) -> None:
        """A target our model lacks: an embedding projection when E == H (kept to check it
        is the identity), else a problem."""
        config = self.config
        if rule.target.startswith("embedding_projection/") and \
                config.embedding_size == config.hidden_size:
            self.projection[rule.target] = name_map.apply(
                rule.transform, self.source.get(name),
                (config.hidden_size,) * (2 if rule.target.endswith("kernel") else 1))
            self.projection_names.append(name)
            return
        self.problems.append(f"{name}: maps to {rule.target}, which a model with this config "
                             "does not have")

    def _shape_fits(self, name: str, rule) -> bool:
        """The source shape is the config's, and the transform gives our weight's shape;
        otherwise a problem."""
        shape = self.source.shape(name)
        want_source = name_map.source_shape(rule, self.config)
        target_shape = self.expected[rule.target]
        if want_source is not None and tuple(shape) != want_source:
            self.problems.append(f"{name}: shape {list(shape)} disagrees with the config, "
                                 f"which needs {list(want_source)} (for {rule.target})")
            return False
        if _transformed_shape(rule.transform, shape, target_shape) != target_shape:
            how = "" if rule.transform == name_map.IDENTITY else f" after {rule.transform}"
            self.problems.append(f"{name}: shape {list(shape)}{how} disagrees with the "
                                 f"config, which needs {list(target_shape)} for {rule.target}")
            return False
        return True

    def check_projection(self) -> None:
        """A projection in the source of a model with E == H is skipped when it is the
        identity, else a problem (albert-tf builds none)."""
        if not self.projection_names:
            return
        if _identity_projection(self.projection, self.config.hidden_size):
            reason = ("identity projection: embedding_size == hidden_size and albert-tf "
                      "builds no embedding_projection")
            self.report.skipped += [(n, reason) for n in self.projection_names]
            return
        self.problems.append(
            f"{', '.join(self.projection_names)}: embedding_size == hidden_size "
            f"({self.config.hidden_size}) but the embedding projection is not the identity; "
            "albert-tf builds no projection when E == H, so this model cannot be represented "
            "exactly")

    def check_missing(self) -> None:
        """Our weights the source lacks: heads stay freshly initialized (reported), the
        encoder's are a problem."""
        target_to_source = {r.target: r.source for r in self.rules.values()}
        missing_encoder = []
        for target in self.expected:
            if target in self.values:
                continue
            if target.startswith(HEAD_PREFIXES):
                self.report.missing.append((target, "not in the source; freshly initialized"))
            else:
                missing_encoder.append(f"{target_to_source.get(target, '?')} (-> {target})")
        if missing_encoder:
            self.problems.append(f"the source lacks {len(missing_encoder)} encoder tensor(s): "
                                 f"{missing_encoder[:10]}")

    def check_unmapped(self, allow_unmapped: bool) -> None:
        """Source tensors in no row of the table are the first problem, unless allowed."""
        if not self.report.unknown or allow_unmapped:
            return
        config = self.config
        self.problems.insert(0, (
            f"{len(self.report.unknown)} source tensor(s) are in no row of the "
            f"{self.table.name} name map for this config (num_hidden_layers="
            f"{config.num_hidden_layers}, num_hidden_groups={config.num_hidden_groups}, "
            f"inner_group_num={config.inner_group_num}): {self.report.unknown[:10]}; pass "
            "--allow_unmapped to skip them"))

    def raise_problems(self) -> None:
        """A `ConversionError` listing the problems (the first 20), if any."""
        if not self.problems:
            return
        shown = self.problems[:20]
        if len(self.problems) > 20:
            shown.append(f"... and {len(self.problems) - 20} more")
        raise ConversionError(f"cannot convert {self.source.description}:\n  - "
                              + "\n  - ".join(shown), self.report)


# ----------------------------------------------------------------------------- output
def _inputs(source: Any) -> list[tuple[str, str | None]]:
    """The conversion's input, which ``--output_dir`` may not equal, contain or lie in."""
    return [("--input", source if isinstance(source, (str, os.PathLike)) else None)]


def write_model_dir(model, config: AlbertConfig, output_dir: str, report: MappingReport,
                    assets=(), overwrite: bool = False, inputs=(), task_info=None) -> str:
    """Writes config, name-keyed weights, ``task.json`` (a task model's `TaskInfo`), assets
    and the report (`albert_tf.outputs`)."""
    with outputs.staged_output(output_dir, kind=outputs.CONVERTED_MODEL, inputs=inputs,
                               overwrite=overwrite, flag="--output_dir") as tmp:
        config.to_json(os.path.join(tmp, CONFIG_FILE))
        if task_info is not None:
            task_info.to_json(os.path.join(tmp, TASK_FILE))
        write_weights(named_weights(model), os.path.join(tmp, WEIGHTS_PREFIX))
        for asset in assets[:1]:                  # the vocabulary
            _copy_vocabulary(asset, tmp, report)
        restore_weights(model, tmp, required=pretrainer_prefixes())   # readable?
        with open(os.path.join(tmp, REPORT_FILE), "w", encoding="utf-8") as f:
            f.write(str(report) + "\n")
    return os.path.abspath(os.path.expanduser(output_dir))


def _source_casing(source_dir: str, vocab: str, kind: str) -> tuple[bool | None, str]:
    """``(do_lower_case, why)`` of a source's vocabulary (copied to ``vocab``): the source's
    ``tokenizer_config.json`` (Hugging Face), else for WordPiece whether it has upper-case
    tokens."""
    recorded = vocab_lib.read_casing(source_dir)
    if recorded is not None:
        return recorded, f"from the source's {vocab_lib.CASING_FILE}"
    if kind == vocab_lib.WORDPIECE:
        uncased = vocab_lib.wordpiece_is_uncased(vocab)
        return uncased, ("no upper-case token in the vocabulary" if uncased
                         else "the vocabulary has upper-case tokens")
    return None, ""


def _copy_vocabulary(asset: str, directory: str, report: MappingReport) -> None:
    """Copies a source's vocabulary into ``directory`` under its model-directory name
    (``vocab.model`` / ``vocab.txt``; a WordPiece ``tokenizer.json`` is written as the
    ``vocab.txt`` it holds) and records its casing when the source tells it."""
    from_json = os.path.basename(asset) == vocab_lib.HF_TOKENIZER_FILE
    kind = vocab_lib.WORDPIECE if from_json else vocab_lib.kind_from_name(asset)
    target = os.path.join(directory, vocab_lib.file_name(kind))
    try:
        if from_json:                      # transformers >= 5 saves no vocab.txt
            vocab_lib.write_vocab_txt(vocab_lib.tokenizer_json_wordpiece(asset), target)
        else:
            shutil.copyfile(asset, target)
        casing, why = _source_casing(os.path.dirname(os.path.abspath(asset)), target, kind)
    except vocab_lib.VocabularyError as e:
        raise ConversionError(str(e), report) from e
    report.assets.append(f"{asset} -> {os.path.basename(target)}")
    if casing is not None:
        vocab_lib.write_casing(directory, casing)
        report.notes.append(f"do_lower_case={casing} ({why}) -> {vocab_lib.CASING_FILE}")


# ----------------------------------------------------------------------- entry points
def load_source(source_format: str, source: Any, config_path: str | None = None,
                allow_unmapped: bool = False):
    """``(pretrainer with the source weights, config, report, assets)``, nothing written
    (a keras-hub task preset: our task model instead of the pretrainer; `load_task_source`)."""
    return load_task_source(source_format, source, config_path, allow_unmapped)[:4]


def load_task_source(source_format: str, source: Any, config_path: str | None = None,
                     allow_unmapped: bool = False):
    """`load_source` plus the `TaskInfo` of the task the source holds (None: none). A
    keras-hub ``TextClassifier`` preset holds one: the model is then our task model with
    its head (`albert_tf.interop.keras_hub.task_model`)."""
    head = hf_model = hf_info = None
    if source_format == "google":
        notes: list[str] = []
        config, tensors, assets = read_google(os.fspath(source), config_path, notes)
        table = name_map.GOOGLE_BERT if config.sharing == "none" else name_map.GOOGLE
    elif source_format == "hf":
        notes = []
        if config_path is not None:
            raise ConversionError("--config applies to --from=google only; a Hugging Face "
                                  "directory carries its config.json.")
        config, model_type, tensors, assets = read_hf(os.fspath(source), notes)
        table = name_map.HF_ALBERT if model_type == "albert" else name_map.HF_BERT
        if model_type == "albert":
            check_group_layout(config, hf_group, "Hugging Face AlbertTransformer")
        else:
            notes.append("BERT: sharing='none', embedding_size == hidden_size; the NSP head "
                         "(cls.seq_relationship) loads into the sop/ head")
        hf_model, hf_info, table = _hf_task_source(os.fspath(source), config, model_type,
                                                   table, notes, assets)
    elif source_format == "keras_hub":
        from albert_tf.interop.keras_hub import read_keras_hub
        config, tensors, assets, head = read_keras_hub(source)
        bert = config.sharing == "none"                  # a BertBackbone
        family = "BertBackbone" if bert else "AlbertBackbone"
        notes = [f"keras-hub {family}: tanh GELU ('gelu'), LayerNorm epsilon 1e-12"]
        table = name_map.KERAS_HUB_BERT if bert else name_map.KERAS_HUB
        if config.num_hidden_layers % config.num_hidden_groups:
            raise ConversionError(f"{tensors.description}: num_layers must be divisible by "
                                  "num_groups in keras-hub.")
        if not bert:
            check_group_layout(config, keras_hub_group, "keras-hub AlbertBackbone")
    else:
        raise ConversionError(f"unknown source format {source_format!r}; use one of "
                              f"{list(SOURCE_FORMATS)}.")
    report = MappingReport(source=f"{tensors.description} [{table.name} name map]", notes=notes)
    if len(tensors) == 0:
        raise ConversionError(f"{tensors.description}: holds no tensors.", report)
    model = map_into_pretrainer(tensors, table, config, report, allow_unmapped, hf_model)
    if head is None:
        return model, config, report, assets, hf_info
    from albert_tf.interop.keras_hub import task_model
    return task_model(model, config, head, report), config, report, assets, head.info


def _hf_task_source(source: str, config: AlbertConfig, model_type: str, table: NameTable,
                    notes: list[str], assets=()):
    """``(task model, TaskInfo, table)`` of a Hugging Face task directory, the table mapping
    its head (`albert_tf.interop.hf_tasks`); ``(None, None, table)`` for a base or
    pretraining model. ``assets``: the directory's vocabulary (its kind is the task's
    ``vocab_type``)."""
    from albert_tf.checkpoints import build_task_model
    from albert_tf.interop import hf_tasks
    directory = source if os.path.isdir(source) else os.path.dirname(os.path.abspath(source))
    found = hf_tasks.read_head(directory, config, model_type, notes,
                               assets[0] if assets else None)
    if found is None:
        return None, None, table
    head, info = found
    model = build_task_model(config, info)
    return model, info, hf_tasks.task_table(head, table, named_weights(model))


def convert(source_format: str, source: Any, output_dir: str, config_path: str | None = None,
            allow_unmapped: bool = False, overwrite: bool = False) -> MappingReport:
    """Converts ``source`` (google / hf / keras_hub) into an albert-tf model directory.

    Returns the mapping report; raises `ConversionError` (nothing written) on any problem.
    """
    outputs.check_output(output_dir, kind=outputs.CONVERTED_MODEL, inputs=_inputs(source),
                         overwrite=overwrite, flag="--output_dir")
    model, config, report, assets, task_info = load_task_source(source_format, source,
                                                                config_path, allow_unmapped)
    write_model_dir(model, config, output_dir, report, assets, overwrite, _inputs(source),
                    task_info)
    return report


def convert_google(checkpoint: str, output_dir: str, config_path: str | None = None,
                   **kwargs) -> MappingReport:
    """Original TF1 checkpoint (``model.ckpt-best`` + ``albert_config.json``, or a TF-Hub
    TF1 module directory) -> albert-tf model directory."""
    return convert("google", checkpoint, output_dir, config_path, **kwargs)


def convert_hf(model_dir: str, output_dir: str, **kwargs) -> MappingReport:
    """Hugging Face ALBERT/BERT directory -> albert-tf model directory."""
    return convert("hf", model_dir, output_dir, **kwargs)


def convert_keras_hub(backbone_or_preset, output_dir: str, **kwargs) -> MappingReport:
    """keras-hub AlbertBackbone (object or preset directory) -> albert-tf model directory."""
    return convert("keras_hub", backbone_or_preset, output_dir, **kwargs)


# ------------------------------------------------------------------- Hugging Face export
def hf_config_dict(config: AlbertConfig, architecture: str) -> dict[str, Any]:
    """A Hugging Face ALBERT ``config.json`` for ``config``."""
    classifier_dropout = (config.classifier_dropout_prob
                          if config.classifier_dropout_prob is not None
                          else config.hidden_dropout_prob)
    return {
        "architectures": [architecture], "model_type": "albert",
        "vocab_size": config.vocab_size, "embedding_size": config.embedding_size,
        "hidden_size": config.hidden_size, "num_hidden_layers": config.num_hidden_layers,
        "num_hidden_groups": config.num_hidden_groups,
        "num_attention_heads": config.num_attention_heads,
        "intermediate_size": config.intermediate_size, "inner_group_num": config.inner_group_num,
        "hidden_act": activation_to_hf(config.hidden_act),
        "hidden_dropout_prob": config.hidden_dropout_prob,
        "attention_probs_dropout_prob": config.attention_probs_dropout_prob,
        "max_position_embeddings": config.max_position_embeddings,
        "type_vocab_size": config.type_vocab_size, "initializer_range": config.initializer_range,
        "layer_norm_eps": config.layer_norm_eps, "classifier_dropout_prob": classifier_dropout,
        "position_embedding_type": "absolute", "pad_token_id": 0, "bos_token_id": 2,
        "eos_token_id": 3, "tie_word_embeddings": True, "dtype": "float32",
    }


def hf_bert_config_dict(config: AlbertConfig, architecture: str) -> dict[str, Any]:
    """A Hugging Face BERT ``config.json`` for a BERT-shaped ``config`` (E == H, no sharing)."""
    values = hf_config_dict(config, architecture)
    for key in ("embedding_size", "num_hidden_groups", "inner_group_num",
                "classifier_dropout_prob", "bos_token_id", "eos_token_id"):
        values.pop(key)
    values.update(model_type="bert", classifier_dropout=config.classifier_dropout_prob)
    return values


def _hf_layout(config: AlbertConfig, model_dir: str) -> bool:
    """Whether ``config`` is written as a Hugging Face BERT (else ALBERT); a one-line
    `ConversionError` when neither represents it exactly."""
    is_bert = config.is_bert and config.num_hidden_groups == 1 and config.inner_group_num == 1
    if config.sharing != "all" and not is_bert:
        raise ConversionError(
            f"{model_dir}: sharing={config.sharing!r} cannot be exported to Hugging Face ALBERT, "
            "whose layers share every sublayer within a hidden group (sharing='all' only).")
    if config.num_attention_heads * config.head_size != config.hidden_size:
        raise ConversionError(
            f"{model_dir}: {config.num_attention_heads} heads of width {config.head_size} (pruned "
            f"heads) do not span hidden_size={config.hidden_size}; Hugging Face ALBERT needs "
            "num_attention_heads * head width == hidden_size.")
    if not is_bert:
        check_group_layout(config, hf_group, "Hugging Face AlbertTransformer")
    return is_bert


def _hf_pretrainer_export(model_dir: str, config: AlbertConfig, table: NameTable,
                          family: str, report: MappingReport):
    """``(class suffix, rules, our weights)`` of a pretrained model directory:
    ``ForPreTraining`` with the MLM and SOP heads, ``Model`` (unprefixed names) without."""
    from albert_tf.models.pretrainer import build_pretrainer
    model = build_pretrainer(config)
    restored = restore_weights(model, model_dir, required=("embeddings/",))
    variables = named_weights(model)
    absent = set(restored.missing_in_checkpoint)
    encoder_absent = sorted(n for n in absent if not n.startswith(HEAD_PREFIXES))
    if encoder_absent:
        raise ConversionError(f"{model_dir}: the checkpoint lacks encoder weights "
                              f"{encoder_absent[:10]}.")
    heads = [n for n in variables if n.startswith(HEAD_PREFIXES)]
    heads_absent = [n for n in heads if n in absent]
    if heads_absent and len(heads_absent) != len(heads):
        raise ConversionError(f"{model_dir}: has some head weights but lacks {heads_absent}; "
                              f"{family}ForPreTraining needs both the mlm/ and sop/ heads.")
    report.skipped += [(n, "not part of the Hugging Face model (task head or training state)")
                       for n in restored.unused_in_checkpoint]
    rules = table.expand(config)
    if not heads_absent:
        return "ForPreTraining", rules, variables
    prefix, base = f"{family.lower()}.", {}
    for src, rule in rules.items():
        if rule.target.startswith(HEAD_PREFIXES):
            report.missing.append((rule.target, f"not in {model_dir}; exported as {family}Model"))
        else:
            base[src[len(prefix):]] = rule
    return "Model", base, variables


def _hf_task_export(model_dir: str, config: AlbertConfig, table: NameTable, head, info,
                    report: MappingReport):
    """``(class suffix, rules, our weights, config.json task keys)`` of a finetuned model
    directory whose head a Hugging Face class computes (`albert_tf.interop.hf_tasks`)."""
    from albert_tf.checkpoints import load_task_model
    from albert_tf.interop import hf_tasks
    model, _ = load_task_model(model_dir)
    variables = named_weights(model)
    num_labels = int(variables[f"{head.hf_dense}/kernel"].shape[-1])
    fields = hf_tasks.config_fields(head, info, num_labels)
    report.notes.append(f"{head.name} head: {head.hf_dense} -> {head.hf_linear}, "
                        f"id2label {list(fields['id2label'].values())}"
                        + (f"; {head.hf_note}" if head.hf_note else ""))
    return head.hf_task, hf_tasks.task_rules(head, config, table, variables), variables, fields


def _hf_tensors(rules: dict, variables: dict, config: AlbertConfig,
                report: MappingReport) -> dict[str, np.ndarray]:
    """``{Hugging Face name: array}`` for ``rules`` over our ``variables``; the projection an
    E == H model lacks is written as the identity (exact)."""
    tensors: dict[str, np.ndarray] = {}
    for key, rule in rules.items():
        if rule.target in variables:
            value = variables[rule.target].numpy()
            report.mapped.append((rule.target, key, rule.transform, tuple(value.shape)))
        else:
            value = name_map.identity_projection(rule.target, config.hidden_size)
            report.notes.append(f"{key}: identity written (embedding_size == hidden_size)")
        tensors[key] = name_map.invert(rule.transform, value)
    return tensors


def export_hf(model_dir: str, output_dir: str, overwrite: bool = False) -> MappingReport:
    """albert-tf model directory -> Hugging Face directory (config.json, model.safetensors,
    the tokenizer files of `albert_tf.interop.hf_tokenizer`), written atomically.

    A finetuned directory (``task.json``) is written as the Hugging Face class that computes
    its head (`albert_tf.interop.hf_tasks`: ``AlbertForSequenceClassification`` & co., with
    ``id2label`` from the task's labels); a pretrained one as ``AlbertForPreTraining`` with
    MLM and SOP weights, else ``AlbertModel``. Only ``sharing="all"`` models have a Hugging
    Face ALBERT layout; with E == H an identity ``embedding_hidden_mapping_in`` is written
    (exact). A BERT-shaped model (E == H, ``sharing="none"``) is written as a Hugging Face
    BERT (``BertFor...`` / ``BertModel``).
    """
    from safetensors.numpy import save_file

    from albert_tf.interop import hf_tasks, hf_tokenizer
    outputs.check_output(output_dir, kind=outputs.HF_DIRECTORY, inputs=_inputs(model_dir),
                         overwrite=overwrite, flag="--output_dir")
    config = load_config_from_dir(model_dir)
    is_bert = _hf_layout(config, model_dir)
    family, table = ("Bert", name_map.HF_BERT) if is_bert else ("Albert", name_map.HF_ALBERT)
    head, info = hf_tasks.export_head(model_dir)
    report = MappingReport(source=f"albert-tf model directory {model_dir}")
    report.notes.append(f"hidden_act: albert-tf {config.hidden_act!r} -> Hugging Face "
                        f"{activation_to_hf(config.hidden_act)!r}")
    fields: dict[str, Any] = {}
    if head is not None and head.hf_dense:
        suffix, rules, variables, fields = _hf_task_export(model_dir, config, table, head, info,
                                                           report)
    else:
        suffix, rules, variables = _hf_pretrainer_export(model_dir, config, table, family,
                                                         report)
    report.source += f" -> Hugging Face {family}{suffix}"
    tensors = _hf_tensors(rules, variables, config, report)
    hf_config = (hf_bert_config_dict if is_bert else hf_config_dict)(config, family + suffix)
    hf_config.update(fields)
    with outputs.staged_output(output_dir, kind=outputs.HF_DIRECTORY,
                               inputs=_inputs(model_dir), overwrite=overwrite,
                               flag="--output_dir") as tmp:
        with open(os.path.join(tmp, "config.json"), "w", encoding="utf-8") as f:
            json.dump(hf_config, f, indent=2, sort_keys=True)
            f.write("\n")
        weights = os.path.join(tmp, "model.safetensors")
        save_file(tensors, weights, metadata={"format": "pt"})
        os.chmod(weights, _new_file_mode(tmp))   # safetensors writes 0600 (a temporary file)
        hf_tokenizer.write_tokenizer(model_dir, tmp, report, info.max_seq_length if info
                                     else config.max_position_embeddings)
        if info is not None and head.hf_dense:      # what config.json has no key for
            hf_tasks.write_task_record(tmp, info)
            report.notes.append(f"task.json -> {hf_tasks.EXTRAS_DIR}/task.json (text_pair="
                                f"{str(info.text_pair).lower()}, vocab_type={info.vocab_type}: "
                                "no Hugging Face key; --from=hf reads it back)")
        with open(os.path.join(tmp, REPORT_FILE), "w", encoding="utf-8") as f:
            f.write(str(report) + "\n")
    return report


def _new_file_mode(directory: str) -> int:
    """The permission bits a file created in ``directory`` gets (the umask's: 0644 under
    umask 022), read off a probe file."""
    import secrets
    probe = os.path.join(directory, f".mode-probe-{secrets.token_hex(4)}")
    fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        return os.fstat(fd).st_mode & 0o777
    finally:
        os.close(fd)
        os.remove(probe)


# ---------------------------------------------------------------------- keras-hub export
def export_keras_hub(model_dir: str, output_dir: str, overwrite: bool = False,
                     do_lower_case: bool | None = None) -> MappingReport:
    """albert-tf model directory -> keras-hub preset directory, written atomically.

    ``keras_hub.models.AlbertBackbone.from_preset(output_dir)`` (or ``BertBackbone``, by
    architecture: `albert_tf.interop.keras_hub.hub_layout`), the matching tokenizer's and
    ``TextClassifierPreprocessor``'s ``from_preset`` load it; a finetuned classifier is a
    task preset that ``keras_hub.models.TextClassifier.from_preset`` loads with its head.
    See `albert_tf.interop.keras_hub.build_preset`.
    """
    from albert_tf.interop.keras_hub import build_preset, save_preset
    outputs.check_output(output_dir, kind=outputs.KERAS_HUB_PRESET, inputs=_inputs(model_dir),
                         overwrite=overwrite, flag="--output_dir")
    preset = build_preset(model_dir, do_lower_case)
    report = preset.report
    with outputs.staged_output(output_dir, kind=outputs.KERAS_HUB_PRESET, inputs=_inputs(model_dir),
                               overwrite=overwrite, flag="--output_dir") as tmp:
        save_preset(preset, tmp)
        with open(os.path.join(tmp, REPORT_FILE), "w", encoding="utf-8") as f:
            f.write(str(report) + "\n")
    return report
