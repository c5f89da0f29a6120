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
    steps the fastest model reaches within ``seconds`` (a wall-clock stop before
    ``max_steps`` leaves the rate part-way down).
    """

    models: list[str] = dataclasses.field(default_factory=lambda: ["albert_mini", "albert_small"])
    seconds: float = 600.0
    batch_size: int = 32
    learning_rate: float = 0.002
    validation_interval: int = 200
    max_steps: int = 5000
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
    """Which compressions to apply to each finetuned model (see albert-tf-compress)."""

    prune_sparsities: list[float] = dataclasses.field(default_factory=lambda: [0.5, 0.8])
    structured: bool = True
    distill: bool = True
    qat: bool = True
    seconds: float = 300.0


@dataclasses.dataclass
class ExportConfig:
    quantizations: list[str] = dataclasses.field(default_factory=lambda: [
        "none", "dynamic", "int8"])
    seq_length: int = 64
    threads: int = 2


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

    def data_path(self, relative: str) -> str:
        return relative if os.path.isabs(relative) else os.path.join(self.data_dir, relative)


def load_pipeline_config(experiment: str, overrides: list[str] = ()) -> PipelineConfig:
    """``experiment`` is a YAML path or a name in official_configs/experiments/."""
    config = override_params(PipelineConfig(), load_yaml_file(resolve_config_file(experiment)))
    for text in overrides:
        override_params(config, parse_params_override(text))
    if not config.pretrain.models:
        raise ConfigValueError("pretrain.models: list at least one model config.")
    if config.pretrain.seconds <= 0 or config.finetune.seconds <= 0:
        raise ConfigValueError("pretrain.seconds and finetune.seconds must be positive.")
    return config
