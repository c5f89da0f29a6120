"""The mobile-SDK span study's model and answers (issue #17): a small span model trained on
the cloze SQuAD set (`albert_tf.data.examples.cloze_squad`) through the training stack
(`train_span_model`: ``albert-tf-finetune --task=squad`` in-process), our SavedModel's and
our edge runner's answers, and SQuAD scores. ``studies/mobile_sdks/span.py`` (``make figures
NAME=mobile-sdk-span``) and ``tests/test_mobile_sdk_span.py`` put them side by side with
TFLite Task Library's ``BertQuestionAnswerer`` (`albert_tf.export.sdk_metadata.compare_spans`);
the SDK itself runs in its own environment, outside this package.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Mapping, Sequence

from albert_tf.heads.span import SDK_SPAN_SEQ_LENGTH

# The experiment the span model is trained with, and the study's changes to it: albert_tiny
# with the 8k vocabulary and 384 positions, trained and recorded at the SDK's length (so the
# exports pack at it), Adam at 5e-3 without warm-up or weight decay (a quick recipe: the
# study compares the SDK with our exports, not the model with SQuAD).
EXPERIMENT = "finetune_squad_albert_mini"
OVERRIDES = ("model.config=albert_tiny", "model.vocab_size=8000",
             f"model.max_position_embeddings={SDK_SPAN_SEQ_LENGTH}",
             f"task.max_seq_length={SDK_SPAN_SEQ_LENGTH}", "task.doc_stride=64",
             "optimizer.learning_rate=0.005", "optimizer.warmup_fraction=0.0",
             "optimizer.weight_decay_rate=0.0")


def log(*args) -> None:
    """Progress on stderr (stdout carries the study's JSON)."""
    print(*args, file=sys.stderr, flush=True)


def span_experiment(work_dir: str, steps: int, batch_size: int = 16, seed: int = 0):
    """The `ExperimentConfig` that trains the study's span model: `EXPERIMENT` with
    `OVERRIDES`, ``steps`` steps of ``batch_size``, SQuAD files under ``<work_dir>/data``,
    the model directory ``<work_dir>/model`` (what ``albert-tf-finetune --task=squad
    --config_file=finetune_squad_albert_mini --params_override=...`` builds)."""
    from albert_tf import resources
    from albert_tf.training.experiment_config import build_experiment
    config = build_experiment(None, [resources.experiment_path(EXPERIMENT)], [
        ",".join(OVERRIDES), f"trainer.train_steps={steps}",
        f"task.train_data.global_batch_size={batch_size}", f"runtime.seed={seed}"])
    config.model_dir = os.path.join(work_dir, "model")
    config.task.data_dir = os.path.join(work_dir, "data")
    config.task.type = "squad"
    return config


def train_span_model(work_dir: str, train: Sequence[Mapping], steps: int,
                     batch_size: int = 16, seed: int = 0) -> str:
    """Finetunes a fresh albert_tiny-sized span model (position embeddings widened to
    `SDK_SPAN_SEQ_LENGTH`, the one length BertQuestionAnswerer feeds) on the cloze
    ``train`` items (written as ``<work_dir>/data/train-v1.1.json``) for ``steps`` steps
    through the training stack (`span_experiment`, `albert_tf.training.run_experiment`);
    the final model directory (``task.json``: squad, span, max_seq_length 384)."""
    from albert_tf.data.examples import squad_json
    from albert_tf.training.trainer import run_experiment
    from albert_tf.training.squad_task import FILE_NAMES
    config = span_experiment(work_dir, steps, batch_size, seed)
    os.makedirs(config.task.data_dir, exist_ok=True)
    with open(os.path.join(config.task.data_dir, FILE_NAMES["train"][1]), "w",
              encoding="utf-8") as f:
        json.dump(squad_json(train), f)
    run_experiment(config, "train", log=log)
    return os.path.join(config.model_dir, "final")


def calibration_tsv(path: str, items: Sequence[Mapping]) -> str:
    """A ``question<TAB>context`` calibration file (for the int8 export) of ``items``."""
    with open(path, "w", encoding="utf-8") as f:
        f.write("question\tcontext\n")
        for it in items:
            f.write(f"{it['question']}\t{it['context']}\n".replace("\t\t", "\t"))
    return path


def saved_model_answers(path: str, items: Sequence[Mapping], batch: int = 32) -> list[dict]:
    """The span SavedModel's (``serving_default`` on ``question``, ``context``) ``answer``
    (str), ``start_index``, ``end_index`` per item."""
    import tensorflow_text  # noqa: F401  (the SavedModel's tokenizer ops)

    from albert_tf.backend import tf
    fn = tf.saved_model.load(path).signatures["serving_default"]
    answers = []
    for i in range(0, len(items), batch):
        chunk = items[i:i + batch]
        out = fn(question=tf.constant([it["question"] for it in chunk]),
                 context=tf.constant([it["context"] for it in chunk]))
        for a, s, e in zip(out["answer"].numpy(), out["start_index"].numpy(),
                           out["end_index"].numpy()):
            answers.append({"answer": a.decode("utf-8"), "start_index": int(s),
                            "end_index": int(e)})
    return answers


def runner_answers(tflite: str, items: Sequence[Mapping]) -> list[dict]:
    """Our edge runner's (`albert_tf.runtime.tflite.TFLiteRunner`) answers on the
    ``tflite`` file."""
    from albert_tf.runtime.tflite import TFLiteRunner
    return TFLiteRunner(tflite).predict([it["question"] for it in items],
                                        [it["context"] for it in items])


def squad_scores(items: Sequence[Mapping], predictions: Sequence[str]) -> dict:
    """Exact match and F1 (SQuAD normalization) of ``predictions`` against the items'
    answers."""
    from albert_tf.data.examples import squad_json
    from albert_tf.data.squad import gold_answers, read_squad_examples
    from albert_tf.training.metrics import squad_metrics
    examples = read_squad_examples(squad_json(items), is_training=False)
    return squad_metrics({f"q{i}": p for i, p in enumerate(predictions)}, gold_answers(examples))
