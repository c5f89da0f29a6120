"""The pipeline's experiment file: dataclasses read from YAML, overridable like training.

``official_configs/experiments/run_quick.yaml`` (the README's main job) and
``run_full.yaml`` are instances. Unknown keys and wrong types are errors that name
the key (the same rules and code as the training experiments,
`albert_tf.training.config.override_params`).
"""

from __future__ import annotations

import dataclasses
import os

from albert_tf.training.config import (ConfigValueError, load_yaml_file, override_params,
                                       parse_params_override, resolve_config_file)


@dataclasses.dataclass
class VocabularyConfig:
    """`albert-tf-train-spm` on the corpora (paths relative to ``data_dir``); an empty
    ``input`` trains on the pipeline's own training corpus (``corpus_split``)."""

    input: list[str] = dataclasses.field(default_factory=lambda: [
        "corpus/imdb-unsup.txt", "corpus/python-docs/**/*.rst.txt"])
    vocab_size: int = 8000
    input_sentence_size: int = 300000
    do_lower_case: bool = True


@dataclasses.dataclass
class CorpusConfig:
    """The pretraining corpus, split by document into training and held-out text."""

    input: str = "corpus/imdb-unsup.txt"
    max_documents: int = 0          # 0: the whole corpus
    heldout_documents: int = 500    # the last documents read, for held-out MLM loss
    max_seq_length: int = 128
    max_predictions_per_seq: int = 20
    dupe_factor: int = 2
    num_workers: int = 2


@dataclasses.dataclass
class PretrainConfig:
    """Every model size pretrains for the same wall-clock budget.

    The learning rate decays linearly to zero over ``max_steps``; size it near the
    steps a model reaches within ``seconds`` (a wall-clock stop before ``max_steps``
    leaves the rate part-way down; a cap reached early ends that model's run early).
    Sizes differ several-fold in speed, so ``max_steps_per_model`` sets a model's own
    cap (``{albert_tiny: 12000}``); the others use ``max_steps``. ``learning_rates`` sets
    a model's own peak rate (``{albert_small: 0.0005}``); the others use
    ``learning_rate``. Wider
    post-LN models need lower rates: albert_small at 2e-3 spiked (gradient norm 1.4 ->
    30 by step 400) and collapsed to a constant predictor.
    """

    models: list[str] = dataclasses.field(default_factory=lambda: ["albert_mini", "albert_small"])
    seconds: float = 600.0
    batch_size: int = 32
    learning_rate: float = 0.002
    learning_rates: dict[str, float] = dataclasses.field(default_factory=dict)
    validation_interval: int = 200
    max_steps: int = 5000
    max_steps_per_model: dict[str, int] = dataclasses.field(default_factory=dict)
    warmup_steps: int = 200


@dataclasses.dataclass
class FinetuneConfig:
    task: str = "sst2"
    seconds: float = 600.0
    max_seq_length: int = 64
    batch_size: int = 32
    learning_rate: float = 0.0005
    max_steps: int = 3000
    warmup_steps: int = 100
    validation_interval: int = 500


@dataclasses.dataclass
class CompressConfig:
    """Compressions of each finetuned model, each one stage of albert-tf-compress
    (`albert_tf.pipeline.compress`); every compressed model is then exported, scored
    and timed like the finetuned ones, labelled ``<model>+<method>``.

    Attributes:
      models: the finetuned models to compress ([] = every ``pretrain.models``).
      prune_sparsities: one magnitude-pruned model (TF-MOT PolynomialDecay) per final
        sparsity, each in (0, 1); [] = no pruning.
      structured: remove 25% of the attention heads (none when that rounds to zero
        heads, i.e. fewer than 3) and 50% of the FFN neurons, then fine-tune.
      distill: distil the finetuned model (the teacher) into ``distill_student``.
      distill_student: the student's config name or JSON path; "" = the teacher at
        half its depth, initialised from the teacher's embeddings and layers.
      qat: quantization-aware training, exported with ``quantization=qat`` only.
      seconds: wall-clock budget of each compression stage. albert-tf-compress counts
        optimizer steps, so it becomes steps: see `albert_tf.pipeline.compress`.
      steps_per_second: the dense finetuning speed that conversion uses (0 = measured:
        the median ``steps_per_sec`` of the model's finetuning summaries).
      quantizations: TFLite exports of each compressed model ([] =
        ``export.quantizations``; the QAT model is exported as ``qat`` alone).
    """

    models: list[str] = dataclasses.field(default_factory=list)
    prune_sparsities: list[float] = dataclasses.field(default_factory=lambda: [0.5, 0.8])
    structured: bool = True
    distill: bool = True
    distill_student: str = ""
    qat: bool = True
    seconds: float = 300.0
    steps_per_second: float = 0.0
    quantizations: list[str] = dataclasses.field(default_factory=list)

    @property
    def enabled(self) -> bool:
        """Whether any compression is asked for."""
        return bool(self.prune_sparsities or self.structured or self.distill or self.qat)


@dataclasses.dataclass
class ExportConfig:
    """TFLite exports of every model; each is timed at batch 1, ``seq_length`` tokens,
    ``threads`` threads, for at least 30 runs and ``timing_seconds`` seconds."""

    quantizations: list[str] = dataclasses.field(default_factory=lambda: [
        "none", "dynamic", "int8"])
    seq_length: int = 64
    threads: int = 2
    timing_seconds: float = 2.0


@dataclasses.dataclass
class FinalTestConfig:
    """The one look at the task's test split, after everything else has run.

    The chosen artifact is the fastest one whose dev accuracy is within
    ``max_dev_drop`` points of the best dev accuracy of the run (`report.choose_final`);
    it alone is scored on test, once: the result is a recorded stage, so reruns reuse it.
    """

    enabled: bool = True
    max_dev_drop: float = 1.0


@dataclasses.dataclass
class PipelineConfig:
    """The whole run; ``output_dir`` holds every artifact, log and the report."""

    data_dir: str = "../shared/data"
    output_dir: str = "runs/quick"
    seed: int = 12345
    vocabulary: VocabularyConfig = dataclasses.field(default_factory=VocabularyConfig)
    corpus: CorpusConfig = dataclasses.field(default_factory=CorpusConfig)
    pretrain: PretrainConfig = dataclasses.field(default_factory=PretrainConfig)
    finetune: FinetuneConfig = dataclasses.field(default_factory=FinetuneConfig)
    compress: CompressConfig = dataclasses.field(default_factory=CompressConfig)
    export: ExportConfig = dataclasses.field(default_factory=ExportConfig)
    final_test: FinalTestConfig = dataclasses.field(default_factory=FinalTestConfig)

    def data_path(self, relative: str) -> str:
        return relative if os.path.isabs(relative) else os.path.join(self.data_dir, relative)


def load_pipeline_config(experiment: str, overrides: list[str] = ()) -> PipelineConfig:
    """``experiment`` is a YAML path or a name in official_configs/experiments/; the
    result is validated (`validate`)."""
    config = override_params(PipelineConfig(), load_yaml_file(resolve_config_file(experiment)))
    for text in overrides:
        override_params(config, parse_params_override(text))
    validate(config)
    return config


def validate(config: PipelineConfig) -> None:
    """Rejects bad values before any stage runs, naming the key and the fix (`run_pipeline`
    also builds every compression config, `albert_tf.pipeline.compress`)."""
    _check_models(config.pretrain.models)
    pretrain = config.pretrain
    _check_pretrained("pretrain.learning_rates", "rates", pretrain.learning_rates, pretrain.models)
    for model, rate in pretrain.learning_rates.items():
        if not 0 < rate < 1:
            raise ConfigValueError(f"pretrain.learning_rates.{model}={rate}: a peak learning "
                                   "rate is positive and below 1 (e.g. 0.0005).")
    _check_pretrained("pretrain.max_steps_per_model", "caps", pretrain.max_steps_per_model,
                      pretrain.models)
    for model, steps in pretrain.max_steps_per_model.items():
        if steps <= pretrain.warmup_steps:
            raise ConfigValueError(
                f"pretrain.max_steps_per_model.{model}={steps}: a step cap must exceed "
                f"pretrain.warmup_steps ({pretrain.warmup_steps}).")
    if config.pretrain.seconds <= 0 or config.finetune.seconds <= 0:
        raise ConfigValueError("pretrain.seconds and finetune.seconds must be positive.")
    _check_quantizations("export.quantizations", config.export.quantizations)
    _check_compress(config.compress, config.pretrain.models)
    if not 0 <= config.final_test.max_dev_drop <= 100:
        raise ConfigValueError(
            f"final_test.max_dev_drop={config.final_test.max_dev_drop}: give the allowed drop "
            "from the best dev accuracy in points, between 0 and 100 (e.g. 1.0).")


def _check_pretrained(key: str, what: str, per_model: dict, models: list[str]) -> None:
    """A per-model setting may name only models that are pretrained."""
    for model in per_model:
        if model not in models:
            raise ConfigValueError(f"{key}: {model!r} is not in pretrain.models {models}; "
                                   f"give {what} only for the models pretrained.")


def _check_models(models: list[str]) -> None:
    from albert_tf.config import load_config
    if not models:
        raise ConfigValueError("pretrain.models: list at least one model config.")
    for model in models:
        try:
            load_config(model)
        except (FileNotFoundError, ValueError) as e:
            raise ConfigValueError(f"pretrain.models: {model!r}: {e}") from None


def _check_quantizations(key: str, quantizations: list[str]) -> None:
    from albert_tf.export.tflite import QUANTIZATIONS
    allowed = [q for q in QUANTIZATIONS if q != "qat"]
    for quantization in quantizations:
        if quantization not in allowed:
            hint = (" (the QAT model, compress.qat, is exported as qat by itself)"
                    if quantization == "qat" else "")
            raise ConfigValueError(f"{key}: {quantization!r} is not one of {allowed}{hint}.")


def _check_compress(compress: CompressConfig, models: list[str]) -> None:
    for sparsity in compress.prune_sparsities:
        if not 0.0 < sparsity < 1.0:
            raise ConfigValueError(f"compress.prune_sparsities: {sparsity} is not in (0, 1); "
                                   "list final sparsities such as [0.5, 0.8, 0.9].")
    if len(set(compress.prune_sparsities)) != len(compress.prune_sparsities):
        raise ConfigValueError(f"compress.prune_sparsities: {compress.prune_sparsities} "
                               "lists a sparsity twice.")
    unknown = [m for m in compress.models if m not in models]
    if unknown:
        raise ConfigValueError(f"compress.models: {unknown} are not in pretrain.models "
                               f"{models}; list some of those, or [] for all.")
    if compress.enabled and compress.seconds <= 0:
        raise ConfigValueError(f"compress.seconds: must be positive, got {compress.seconds}.")
    if compress.steps_per_second < 0:
        raise ConfigValueError("compress.steps_per_second: must be >= 0 (0 = measured from "
                               "the finetuning).")
    _check_quantizations("compress.quantizations", compress.quantizations)
    if compress.distill and compress.distill_student:
        from albert_tf.config import load_config
        try:
            load_config(compress.distill_student)
        except (FileNotFoundError, ValueError) as e:
            raise ConfigValueError(f"compress.distill_student: {e} Use \"\" for the teacher "
                                   "at half depth.") from None
