"""The compression stages of ``albert-tf-run``: what each finetuned model becomes.

Each `Compression` is one run of ``albert-tf-compress`` (one of its stages) on a
finetuned model; its candidate name, ``<model>+<label>`` (``albert_small+prune0.8``),
labels the exported artifacts in the report. The settings start from the tuned
``official_configs/experiments/compress_sst2_*.yaml`` of that stage; the pipeline
overrides the model, the data, the seed and the training length.

Budget. albert-tf-compress trains for a number of optimizer steps and has no
wall-clock stop. ``compress.steps`` gives them directly (`stage_steps`: the same on
every machine, what run_quick does); with ``compress.steps`` 0, ``compress.seconds`` is
turned into steps when the stage starts (`training_steps`, run_full): the training time
is ``TRAIN_SHARE`` of what is left after ``OVERHEAD_SECONDS`` (process start-up,
loading the task, tracing the pruned / fake-quantized graph, two dev evaluations:
about 45 s on 2 busy cores for a tiny model), at least ``MIN_TRAIN_SHARE`` of the
budget; it is converted at the dense finetuning speed of the same model on the same
machine (the median of its finetuning ``steps_per_sec`` summaries, or
``compress.steps_per_second``) divided by ``STEP_COST``, the time of one step of the
method relative to a dense finetuning step.
``STEP_COST`` is set above what the albert_small compression benchmarks logged on a
2-core machine (pruning, QAT and structured pruning 4-7 steps/s, distillation into a
smaller student faster, against 1-5 steps/s for the dense finetuning). Long budgets
are therefore met with a margin (larger models trace and evaluate longer); budgets
under about a minute are not: the stage then trains a quarter of its budget and its
fixed cost comes on top.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from albert_tf.config import AlbertConfig, load_config
from albert_tf.pipeline.pipeline_config import CompressConfig, PipelineConfig
from albert_tf.pipeline.stages import write_text
from albert_tf.training.experiment_config import ConfigValueError, override_params

OVERHEAD_SECONDS, TRAIN_SHARE, MIN_TRAIN_SHARE = 45.0, 0.75, 0.25
STEP_COST = {"pruning": 1.5, "structured": 1.0, "distillation": 1.5, "qat": 2.0}
BASE_CONFIGS = {"pruning": "compress_sst2_pruning", "structured": "compress_sst2_structured",
                "distillation": "compress_sst2_distill", "qat": "compress_sst2_qat"}
HEAD_FRACTION, FFN_FRACTION = 0.25, 0.5
PRUNE_END_FRACTION, PRUNE_UPDATES = 0.75, 10     # sparsity reached at 75% of the steps
MAX_IMPORTANCE_BATCHES = 32
STUDENT_FILE = "student_config.json"


@dataclasses.dataclass(frozen=True)
class Compression:
    """One compression of a finetuned model.

    Attributes:
      label: the method in candidate names (``prune0.8``, ``structured``...).
      stage: the albert-tf-compress stage (``pruning``, ``structured``,
        ``distillation``, ``qat``).
      sparsity: the final sparsity (pruning only).
      block_size: ``pruning.block_size`` (pruning only; "" = unstructured).
      budget_of: the model whose int8 export's measured latency, divided by ``factor``,
        is the latency budget (``compress_sst2_speedup``; "" = none).
    """

    label: str
    stage: str
    sparsity: float = 0.0
    block_size: str = ""
    budget_of: str = ""
    factor: float = 1.0

    def candidate(self, model: str) -> str:
        return f"{model}+{self.label}"


def compressions(compress: CompressConfig) -> list[Compression]:
    """The compressions ``compress`` asks for, in a fixed order."""
    block = prune_block(compress)
    out = [Compression(f"prune{s:g}" + (f"_{block}" if block else ""), "pruning", s, block)
           for s in compress.prune_sparsities]
    for enabled, label, stage in ((compress.structured, "structured", "structured"),
                                  (compress.distill, "distill", "distillation"),
                                  (compress.qat, "qat", "qat")):
        if enabled:
            out.append(Compression(label, stage))
    for model in compress.latency_of:
        for factor in compress.latency_factors:
            label = f"at_{model}" + (f"_x{factor:g}" if factor != 1 else "")
            out.append(Compression(label, "structured", budget_of=model, factor=factor))
    return out


def latency_file(export_dir_of, model: str) -> str:
    """Where the int8 export of ``model`` records its latency (the pipeline's
    ``export/<model>/int8_latency.json``; ``export_dir_of(*parts)`` makes the path)."""
    return export_dir_of("export", model, "int8_latency.json")


def prune_block(compress: CompressConfig) -> str:
    """``compress.prune_block_size`` as ``"RxC"``; "" when unstructured (""/"1x1")."""
    from albert_tf.compression.compression_config import parse_block_size
    rows, cols = parse_block_size(compress.prune_block_size, "compress.prune_block_size")
    return "" if (rows, cols) == (1, 1) else f"{rows}x{cols}"


def compressed_models(config: PipelineConfig) -> list[str]:
    """The finetuned models that get compressed."""
    return list(config.compress.models or config.pretrain.models)


def export_quantizations(config: PipelineConfig, compression: Compression) -> list[str]:
    """TFLite exports of a compressed model: the recipe(s) of `albert_tf.export.quantization`
    that convert a quantization-aware model (``qat``) for QAT, int8 for a latency budget
    (what its shape was timed as), else the configured ones."""
    if compression.budget_of:
        return ["int8"]
    if compression.stage == "qat":
        from albert_tf.export import quantization as recipes
        return list(recipes.qat_names())
    return list(config.compress.quantizations or config.export.quantizations)


def sparse_exports(config: PipelineConfig, compression: Compression) -> dict[str, str]:
    """quantization -> pattern: the exports of a compressed model with sparse weights
    (``compress.sparse_weights``: pruned models only)."""
    if not config.compress.sparse_weights or compression.stage != "pruning":
        return {}
    from albert_tf.compression.compression_config import parse_block_size
    from albert_tf.export import sparsity
    block = parse_block_size(compression.block_size or "1x1", "compress.prune_block_size")
    return sparsity.kernels_for_block("tflite", block, export_quantizations(config, compression))


# -------------------------------------------------------------------------- budget
def training_steps(seconds: float, steps_per_second: float, stage: str) -> int:
    """Optimizer steps of a compression stage with a wall-clock budget of ``seconds``
    (see the module docstring); at least 1."""
    train_seconds = max(MIN_TRAIN_SHARE * seconds, TRAIN_SHARE * (seconds - OVERHEAD_SECONDS))
    return max(1, int(train_seconds * steps_per_second / STEP_COST[stage]))


def stage_steps(compress: CompressConfig, steps_per_second: float | None, stage: str,
                budget: bool = False) -> int:
    """The optimizer steps of one compression stage: ``compress.latency_steps`` for a
    latency budget (``budget``) when set, ``compress.steps``, else ``compress.seconds`` at
    ``steps_per_second`` (`training_steps`)."""
    if budget and compress.latency_steps > 0:
        return compress.latency_steps
    if compress.steps > 0:
        return compress.steps
    return training_steps(compress.seconds, steps_per_second or 1.0, stage)


def pruning_schedule(steps: int) -> dict[str, int]:
    """Begin at step 0, reach the final sparsity after ``PRUNE_END_FRACTION`` of the
    steps in (up to) ``PRUNE_UPDATES`` mask updates, recover for the rest."""
    end = max(1, int(steps * PRUNE_END_FRACTION))
    updates = min(PRUNE_UPDATES, end)
    frequency = end // updates
    return {"begin_step": 0, "end_step": frequency * updates, "frequency": frequency,
            "train_steps": steps}


def structured_settings(steps: int, num_heads: int) -> dict[str, Any]:
    """25% of the heads (0 when that rounds to none) and 50% of the FFN neurons; the
    gradient-importance batches come out of the step budget."""
    batches = max(1, min(MAX_IMPORTANCE_BATCHES, steps // 4))
    heads = HEAD_FRACTION if int(round(HEAD_FRACTION * num_heads)) >= 1 else 0.0
    return {"head_fraction": heads, "ffn_fraction": FFN_FRACTION,
            "importance_batches": batches, "train_steps": max(1, steps - batches)}


# ------------------------------------------------------------------------- student
def half_depth_student(teacher: AlbertConfig) -> AlbertConfig:
    """The default student: the teacher with half its layers (and at most as many
    hidden groups), so that every student weight can start from a teacher weight."""
    layers = max(1, teacher.num_hidden_layers // 2)
    return teacher.replace(num_hidden_layers=layers,
                           num_hidden_groups=min(teacher.num_hidden_groups, layers))


def student_reference(compress: CompressConfig, out_dir: str) -> str:
    """What ``distillation.student_config`` names: ``compress.distill_student`` or the
    half-depth student's JSON in the stage's directory (`write_student`)."""
    return compress.distill_student or os.path.join(out_dir, STUDENT_FILE)


def write_student(compress: CompressConfig, model: str, out_dir: str) -> None:
    """Writes the half-depth student's config (nothing when one is named)."""
    if not compress.distill_student:
        os.makedirs(out_dir, exist_ok=True)
        half_depth_student(load_config(model)).to_json(os.path.join(out_dir, STUDENT_FILE))


# -------------------------------------------------------------------------- config
def stage_settings(config: PipelineConfig, compression: Compression, model: str, steps: int,
                   out_dir: str) -> dict[str, Any]:
    """The pipeline's overrides of the compression stage's own section."""
    if compression.budget_of:      # the recipe's schedule, fitted to the steps
        return {**pruning_schedule(steps), "schedule": "polynomial_decay"}
    if compression.stage == "pruning":
        block = {"block_size": compression.block_size} if compression.block_size else {}
        return {"schedule": "polynomial_decay", "initial_sparsity": 0.0,
                "final_sparsity": compression.sparsity, **pruning_schedule(steps), **block}
    if compression.stage == "structured":
        return structured_settings(steps, load_config(model).num_attention_heads)
    if compression.stage == "distillation":
        return {"student_config": student_reference(config.compress, out_dir),
                "student_init": "teacher", "train_steps": steps}
    return {"train_steps": steps}


def speedup_settings(config: PipelineConfig, budget_ms: float, out_dir: str) -> dict[str, Any]:
    """The latency search of a ``latency_of`` compression: the budget, timed as the
    pipeline times its exports (batch 1, ``export.seq_length``, ``export.threads``), the
    timings cached beside the compress runs (``compress/latency_cache``)."""
    return {"latency_budget_ms": budget_ms, "batch_size": 1,
            "seq_length": config.export.seq_length, "threads": config.export.threads,
            "cache_dir": os.path.join(os.path.dirname(os.path.abspath(out_dir)),
                                      "latency_cache")}


def compression_config(config: PipelineConfig, compression: Compression, model: str,
                       steps: int, init_model: str, out_dir: str, budget_ms: float = 1.0):
    """The validated `CompressionConfig` of one compression stage (``budget_ms``: the
    latency budget of a ``latency_of`` compression)."""
    from albert_tf.compression.compression_config import build_compression_config, validate
    candidate = compression.candidate(model)
    base = "compress_sst2_speedup" if compression.budget_of else \
        BASE_CONFIGS[compression.stage]
    try:
        result = build_compression_config([base])
        override_params(result, {
            "init_model": init_model, "model_dir": out_dir, "stages": [compression.stage],
            "seed": config.seed, "export": {"tflite": False},
            "data": {"data_dir": os.path.abspath(config.data_dir),
                     "batch_size": config.finetune.batch_size},
            compression.stage: stage_settings(config, compression, model, steps, out_dir)})
        if compression.budget_of:
            override_params(result, {"speedup": speedup_settings(config, budget_ms, out_dir)})
        validate(result)
    except ValueError as e:      # ConfigValueError and CompressionConfigError
        raise ConfigValueError(f"compress ({candidate}): {e}") from None
    return result


def write_compression_config(path: str, compression_cfg) -> str:
    """The resolved config as YAML, for ``albert-tf-compress --config_file``."""
    import yaml
    os.makedirs(os.path.dirname(path), exist_ok=True)
    write_text(path, yaml.safe_dump(compression_cfg.as_dict(), sort_keys=False))
    return path


def check_compression_configs(config: PipelineConfig) -> None:
    """Builds every compression config the run will use (nominal step count, nothing
    written), so that a bad combination fails before the first stage runs."""
    for model in compressed_models(config):
        for compression in compressions(config.compress):
            steps = stage_steps(config.compress, 1.0, compression.stage,
                                bool(compression.budget_of))
            compression_config(config, compression, model, steps, "finetuned", "out")
