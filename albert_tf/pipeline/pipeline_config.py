"""The pipeline's experiment file: dataclasses read from YAML, overridable like training.

``official_configs/experiments/run_quick.yaml`` (the README's main job) and
``run_full.yaml`` are instances, layered and checked by the package's configuration
layer, `albert_tf.hyperparams` (the same YAML, ``--params_override`` syntax and rules as
training and compression): unknown keys and wrong types are errors that name the key.
"""

from __future__ import annotations

import dataclasses
import os

from albert_tf import hyperparams
from albert_tf.hyperparams import ConfigValueError
from albert_tf.text.vocabulary import KINDS, SENTENCEPIECE


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
    """Every model size pretrains for its step budget, ``seconds`` a wall-clock guard.

    A model trains ``max_steps`` optimizer steps (``max_steps_per_model`` sets a model's
    own, ``{albert_tiny: 12000}``: sizes differ several-fold in speed) and its learning
    rate decays linearly to zero over them, so a run means the same on every machine.
    ``seconds`` stops a model that has not reached its steps by then (the rate is then
    left part-way down and the report says so): size it well above the expected time
    (3-4x) so that it only guards against a machine far slower than planned; run_full
    sizes the steps to its 25-minute budget instead. A held-out evaluation runs every
    ``validation_interval`` steps (the points of the report's pretraining curves).
    ``learning_rates`` sets a model's own peak rate (``{albert_small: 0.0005}``); the
    others use ``learning_rate``. Wider post-LN models need lower rates: albert_small
    at 2e-3 spiked (gradient norm 1.4 -> 30 by step 400) and collapsed to a constant
    predictor.
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
    # A model's vocabulary kind, ``{bert_mini: wordpiece}``; the others use SentencePiece.
    # Each kind in use gets its own vocabulary (same corpus and size) and pretraining data.
    vocab_types: dict[str, str] = dataclasses.field(default_factory=dict)

    def steps_for(self, model: str) -> int:
        """``model``'s step budget: its ``max_steps_per_model`` entry, else ``max_steps``."""
        return self.max_steps_per_model.get(model, self.max_steps)

    def vocab_type(self, model: str) -> str:
        """``model``'s vocabulary kind (`albert_tf.text.vocabulary.KINDS`)."""
        return self.vocab_types.get(model, SENTENCEPIECE)

    def vocab_kinds(self) -> list[str]:
        """The vocabulary kinds the pretrained models use, SentencePiece first."""
        return sorted({self.vocab_type(m) for m in self.models},
                      key=lambda kind: kind != SENTENCEPIECE)


@dataclasses.dataclass
class FinetuneConfig:
    """Each pretrained model finetunes for ``max_steps`` steps (evaluating on dev every
    ``validation_interval``; the best dev checkpoint is kept); ``seconds`` is a
    wall-clock guard like ``pretrain.seconds``."""

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
    (`albert_tf.pipeline.candidates`); every compressed model is then exported, scored
    and timed like the finetuned ones, labelled ``<model>+<method>``.

    Attributes:
      models: the finetuned models to compress ([] = every ``pretrain.models``).
      prune_sparsities: one magnitude-pruned model (TF-MOT PolynomialDecay) per final
        sparsity, each in (0, 1); [] = no pruning.
      prune_block_size: ``"RxC"`` block sparsity of those pruned models
        (``pruning.block_size`` of albert-tf-compress: R inputs x C outputs of each
        Keras ``[in, out]`` kernel; ``"16x1"`` / ``"4x1"`` are the 1x16 int8 / 1x4 float
        blocks of TFLite's sparse FULLY_CONNECTED kernels); their candidates are named
        ``prune<sparsity>_<RxC>`` (``prune0.9_16x1``). "" or "1x1" = unstructured
        (``prune0.9``). Each compressed model's kernels must be whole blocks.
      structured: remove 25% of the attention heads (none when that rounds to zero
        heads, i.e. fewer than 3) and 50% of the FFN neurons, then fine-tune.
      distill: distil the finetuned model (the teacher) into ``distill_student``.
      distill_student: the student's config name or JSON path; "" = the teacher at
        half its depth, initialised from the teacher's embeddings and layers.
      qat: quantization-aware training, exported with ``quantization=qat`` only.
      steps: optimizer steps of each compression stage (the same on every machine);
        0 = turn ``seconds`` into steps at the measured finetuning speed (run_full).
        The importance batches of structured pruning are counted in them.
      seconds: with ``steps`` 0, the wall-clock budget of each compression stage,
        turned into steps (see `albert_tf.pipeline.candidates`). albert-tf-compress has
        no wall-clock stop, so with ``steps`` set it is only reported, not enforced.
      steps_per_second: the dense finetuning speed that conversion uses (0 = measured:
        the median ``steps_per_sec`` of the model's finetuning summaries).
      quantizations: TFLite exports of each compressed model ([] =
        ``export.quantizations``; the QAT model is exported as ``qat`` alone).
      sparse_weights: also export each pruned model with its weights stored sparse
        (``albert-tf-export --sparse_weights``) at every one of those quantizations whose
        TFLite export has a sparse kernel for its blocks (`albert_tf.export.sparsity`:
        ``none`` runs 1x4 blocks = ``prune_block_size`` 4x1 or 16x1, ``int8`` 1x16 =
        16x1), scored and timed on LiteRT's builtin kernels; labelled
        ``<quantization>_sparse``.
      latency_of: models whose int8 TFLite export's measured latency is a budget: each
        model of ``models`` is compressed with ``compress_sst2_speedup`` (structured
        pruning on a schedule with distillation, the shape chosen from latencies timed on
        this CPU: ``albert-tf-compress --latency_budget_ms``) to run within it, a candidate
        ``at_<model>`` exported at int8: "at the small model's latency, does the compressed
        large model beat it?" (needs ``int8`` in ``export.quantizations``).
      latency_factors: budgets per model of ``latency_of``: its latency divided by each
        factor (>= 1; 1 = the same latency, 2 = twice as fast; ``at_<model>_x<factor>``).
      latency_steps: optimizer steps of each of those compressions (0 = as every stage).
    """

    models: list[str] = dataclasses.field(default_factory=list)
    prune_sparsities: list[float] = dataclasses.field(default_factory=lambda: [0.5, 0.8])
    prune_block_size: str = ""
    structured: bool = True
    distill: bool = True
    distill_student: str = ""
    qat: bool = True
    steps: int = 0
    seconds: float = 300.0
    steps_per_second: float = 0.0
    quantizations: list[str] = dataclasses.field(default_factory=list)
    sparse_weights: bool = False
    latency_of: list[str] = dataclasses.field(default_factory=list)
    latency_factors: list[float] = dataclasses.field(default_factory=lambda: [1.0])
    latency_steps: int = 0

    @property
    def enabled(self) -> bool:
        """Whether any compression is asked for."""
        return bool(self.prune_sparsities or self.structured or self.distill or self.qat
                    or self.latency_of)


@dataclasses.dataclass
class ExportConfig:
    """TFLite exports of every model; each is timed at batch 1, ``seq_length`` tokens,
    ``threads`` threads, for at least 30 runs and ``timing_seconds`` seconds; then all of
    them together in ``timing_rounds`` interleaved rounds (each round runs every export in
    turn, the order rotating; 0 = no such stage): the report's latencies are the medians of
    the round medians, with their spread, and the final choice treats latencies whose
    spreads overlap as ties."""

    quantizations: list[str] = dataclasses.field(default_factory=lambda: [
        "none", "dynamic", "int8"])
    seq_length: int = 64
    threads: int = 2
    timing_seconds: float = 2.0
    timing_rounds: int = 5


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
    """The whole run; ``output_dir`` holds every artifact, log and the report.

    ``data_dir`` empty means ``--data_dir``, else ``$ALBERT_TF_DATA_DIR``: `resolve_data_dir`
    makes it an absolute path once, when the run starts, and every stage gets that path.
    """

    data_dir: str = ""
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


def resolve_data_dir(config: PipelineConfig, flag: str = "--data_dir",
                     corpus_needed: bool = True) -> str:
    """Sets ``config.data_dir`` to the absolute data root (the experiment's or the flag's
    value, else ``$ALBERT_TF_DATA_DIR``) and checks that the files the run reads are there:
    `albert_tf.resources.DataDirError` (one line naming the flag, the variable or the
    missing file) otherwise. ``corpus_needed=False``: the corpus is already split."""
    from albert_tf import resources
    from albert_tf.data.task_data import expected_glue_file, find_glue_task_dir, glue_task_key
    root = os.path.abspath(resources.data_dir(config.data_dir or None, flag))
    config.data_dir = root
    needed = []
    if corpus_needed and config.corpus.input and not any(c in config.corpus.input for c in "*?["):
        needed.append(config.data_path(config.corpus.input))
    task = config.finetune.task
    if glue_task_key(task):    # where the finetuning reads it (`data.tasks.load_task`)
        task_dir = find_glue_task_dir(root, task)
        needed += ([os.path.join(task_dir, f"{split}.tsv") for split in ("train", "dev")]
                   if task_dir else [expected_glue_file(root, task)])
    for path in needed:
        if not os.path.exists(path):
            raise resources.DataDirError(
                f"{path} not found: the data directory {root} lacks a file the run reads; "
                f"{resources.data_dir_fix(flag)} to a directory in the layout of the "
                "project's shared data (corpus/, glue/SST-2/, ...).")
    return root


def load_pipeline_config(experiment: str, overrides: list[str] = ()) -> PipelineConfig:
    """``experiment`` is a YAML path or a name in official_configs/experiments/; the
    result is validated (`validate`); errors name the file or ``--params_override``."""
    return hyperparams.build_config(PipelineConfig(), [experiment], overrides, validate)


def validate(config: PipelineConfig) -> None:
    """Rejects bad values before any stage runs, naming the key and the fix (`run_pipeline`
    also builds every compression config, `albert_tf.pipeline.candidates`)."""
    _check_models(config.pretrain.models)
    pretrain = config.pretrain
    _check_pretrained("pretrain.learning_rates", "rates", pretrain.learning_rates, pretrain.models)
    for model, rate in pretrain.learning_rates.items():
        if not 0 < rate < 1:
            raise ConfigValueError(f"pretrain.learning_rates.{model}={rate}: a peak learning "
                                   "rate is positive and below 1 (e.g. 0.0005).")
    _check_pretrained("pretrain.max_steps_per_model", "caps", pretrain.max_steps_per_model,
                      pretrain.models)
    _check_pretrained("pretrain.vocab_types", "vocabulary kinds", pretrain.vocab_types,
                      pretrain.models)
    for model, kind in pretrain.vocab_types.items():
        if kind not in KINDS:
            raise ConfigValueError(f"pretrain.vocab_types.{model}={kind!r}: use "
                                   f"{' or '.join(KINDS)}.")
    for model, steps in pretrain.max_steps_per_model.items():
        if steps <= pretrain.warmup_steps:
            raise ConfigValueError(
                f"pretrain.max_steps_per_model.{model}={steps}: a step cap must exceed "
                f"pretrain.warmup_steps ({pretrain.warmup_steps}).")
    if config.pretrain.seconds <= 0 or config.finetune.seconds <= 0:
        raise ConfigValueError("pretrain.seconds and finetune.seconds must be positive.")
    for section in ("pretrain", "finetune"):
        values = getattr(config, section)
        if values.max_steps <= values.warmup_steps:
            raise ConfigValueError(
                f"{section}.max_steps={values.max_steps}: the step budget must exceed "
                f"{section}.warmup_steps ({values.warmup_steps}).")
        if values.validation_interval <= 0:
            raise ConfigValueError(
                f"{section}.validation_interval={values.validation_interval}: give the "
                "steps between evaluations, a positive number (e.g. 100).")
    _check_quantizations("export.quantizations", config.export.quantizations)
    if config.export.timing_rounds < 0:
        raise ConfigValueError(f"export.timing_rounds={config.export.timing_rounds}: give the "
                               "interleaved timing rounds (e.g. 5), or 0 for none.")
    _check_compress(config.compress, config.pretrain.models, config.export.quantizations)
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
    """Each must be a recipe of `albert_tf.export.quantization` the pipeline may list."""
    from albert_tf.export import quantization as recipes
    allowed = list(recipes.pipeline_names())
    for quantization in quantizations:
        if quantization not in allowed:
            hint = (f" (the QAT model, compress.qat, is exported as {quantization} by itself)"
                    if quantization in recipes.qat_names() else "")
            raise ConfigValueError(f"{key}: {quantization!r} is not one of {allowed}{hint}.")


def _check_block_size(compress: CompressConfig, models: list[str]) -> None:
    """``compress.prune_block_size`` parses and tiles the pruned encoder kernels of every
    compressed model (``[H, H]``, ``[H, I]``, ``[I, H]``, ``[E, H]``: what
    compress_sst2_pruning's targets select); albert-tf-compress checks the real model
    again before it trains."""
    from albert_tf.compression.compression_config import (CompressionConfigError,
                                                          parse_block_size)
    from albert_tf.config import load_config
    key = "compress.prune_block_size"
    try:
        rows, cols = parse_block_size(compress.prune_block_size, key)
    except CompressionConfigError as e:
        raise ConfigValueError(str(e)) from None
    if (rows, cols) == (1, 1) or not compress.prune_sparsities:
        return
    for model in compress.models or models:
        c = load_config(model)
        h, i, e = c.hidden_size, c.intermediate_size, c.embedding_size
        for shape in ((h, h), (h, i), (i, h), (e, h)):
            if shape[0] % rows or shape[1] % cols:
                raise ConfigValueError(
                    f"{key}: {rows}x{cols} does not tile {model}'s [in, out] kernel "
                    f"{list(shape)} (H={h}, I={i}, E={e}); choose a block that divides it.")


def _check_sparse_weights(compress: CompressConfig, export_quantizations: list[str]) -> None:
    """``compress.sparse_weights`` needs pruned models whose blocks a TFLite sparse kernel
    runs at one of the quantizations they are exported at."""
    if not compress.sparse_weights:
        return
    from albert_tf.compression.compression_config import parse_block_size
    from albert_tf.export import sparsity
    quantizations = compress.quantizations or export_quantizations
    block = parse_block_size(compress.prune_block_size, "compress.prune_block_size")
    if not compress.prune_sparsities or not sparsity.kernels_for_block("tflite", block,
                                                                        quantizations):
        raise ConfigValueError(
            "compress.sparse_weights: no pruned model here runs sparse on TFLite "
            f"(prune_sparsities {compress.prune_sparsities}, prune_block_size "
            f"{compress.prune_block_size or '1x1'!r}, quantizations {quantizations}); TFLite's "
            f"sparse kernels: {sparsity.runs_on()} (prune_block_size Nx1 for 1xN).")


def _check_latency_of(compress: CompressConfig, models: list[str],
                      export_quantizations: list[str]) -> None:
    """``compress.latency_of`` names pretrained models whose int8 export is timed."""
    unknown = [m for m in compress.latency_of if m not in models]
    if unknown:
        raise ConfigValueError(f"compress.latency_of: {unknown} are not in pretrain.models "
                               f"{models}; name the models whose latency is the budget.")
    if compress.latency_of and "int8" not in export_quantizations:
        raise ConfigValueError("compress.latency_of: the budget is the measured latency of "
                               "the model's int8 export; add int8 to export.quantizations.")
    if compress.latency_steps < 0:
        raise ConfigValueError("compress.latency_steps: must be >= 0 (0 = compress.steps).")
    bad = [f for f in compress.latency_factors if not f >= 1.0]
    if bad or (compress.latency_of and not compress.latency_factors):
        raise ConfigValueError(f"compress.latency_factors: {compress.latency_factors}: give "
                               "factors >= 1 (1 = the same latency, 2 = twice as fast).")


def _check_compress(compress: CompressConfig, models: list[str],
                    export_quantizations: list[str]) -> None:
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
    _check_block_size(compress, models)
    _check_sparse_weights(compress, export_quantizations)
    if compress.enabled and compress.seconds <= 0:
        raise ConfigValueError(f"compress.seconds: must be positive, got {compress.seconds}.")
    if compress.steps < 0:
        raise ConfigValueError(f"compress.steps={compress.steps}: give the optimizer steps "
                               "of each compression stage (e.g. 200), or 0 to turn "
                               "compress.seconds into steps at the measured speed.")
    if compress.steps_per_second < 0:
        raise ConfigValueError("compress.steps_per_second: must be >= 0 (0 = measured from "
                               "the finetuning).")
    _check_quantizations("compress.quantizations", compress.quantizations)
    _check_latency_of(compress, models, export_quantizations)
    if compress.distill and compress.distill_student:
        from albert_tf.config import load_config
        try:
            load_config(compress.distill_student)
        except (FileNotFoundError, ValueError) as e:
            raise ConfigValueError(f"compress.distill_student: {e} Use \"\" for the teacher "
                                   "at half depth.") from None
