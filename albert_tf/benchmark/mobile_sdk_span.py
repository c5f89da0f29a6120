"""The mobile-SDK span study's model and answers (issue #17): a small span model trained on
the cloze SQuAD set (`albert_tf.data.examples.cloze_squad`), our SavedModel's and our edge
runner's answers, and SQuAD scores. ``benchmarks/mobile_sdk_span.py`` (``make figures
NAME=mobile-sdk-span``) and ``tests/test_mobile_sdk_span.py`` put them side by side with
TFLite Task Library's ``BertQuestionAnswerer`` (`albert_tf.export.sdk_metadata.compare_spans`);
the SDK itself runs in its own environment, outside this package.
"""

from __future__ import annotations

import sys
from typing import Mapping, Sequence

from albert_tf.heads.span import SDK_SPAN_SEQ_LENGTH

TRAIN_SEQ = 128          # training length (contexts are short; positions up to 384 exist)


def log(*args) -> None:
    """Progress on stderr (stdout carries the study's JSON)."""
    print(*args, file=sys.stderr, flush=True)


def train_span_model(model_dir: str, train: Sequence[Mapping], steps: int,
                     batch_size: int = 16, seed: int = 0) -> str:
    """Finetunes a fresh albert_tiny-sized span model (vocabulary: the shipped 8k
    SentencePiece, `resources.DEFAULT_VOCAB`; position embeddings widened to
    `SDK_SPAN_SEQ_LENGTH`, the one length BertQuestionAnswerer feeds) on the cloze ``train``
    items for ``steps`` steps of ``batch_size`` at `TRAIN_SEQ` ids, and writes the model
    directory (``task.json``: squad, span, max_seq_length 384, so the exports pack at the
    SDK's length); its path.

    The study's own quick recipe (Adam 5e-3, one ``tf.function`` step, no warm-up, no
    evaluation), kept as measured: ``albert-tf-finetune --task=squad`` trains at its
    ``task.max_seq_length`` and writes that into ``task.json``, so it would train at 384
    (about 3x the steps' cost) to export at the SDK's length.
    """
    import albert_tf
    from albert_tf import resources
    from albert_tf.backend import keras, tf
    from albert_tf.checkpoints import TaskInfo
    from albert_tf.data.examples import squad_json
    from albert_tf.data.squad import (convert_examples_to_features, read_squad_examples,
                                      squad_dataset)
    from albert_tf.export.sdk_metadata import SDK_QA_MAX_QUERY_LENGTH
    from albert_tf.text.tokenizer import AlbertTokenizer

    keras.utils.set_random_seed(seed)
    vocab = resources.resolve(resources.DEFAULT_VOCAB)
    examples = read_squad_examples(squad_json(train), is_training=True)
    features = convert_examples_to_features(examples, AlbertTokenizer(vocab), TRAIN_SEQ, 64,
                                            SDK_QA_MAX_QUERY_LENGTH, is_training=True)
    data = iter(squad_dataset(features, batch_size, True, seed=seed).repeat())
    config = albert_tf.load_config("albert_tiny").replace(
        vocab_size=8000, max_position_embeddings=SDK_SPAN_SEQ_LENGTH)
    model = albert_tf.build_span_extractor(config)
    optimizer = keras.optimizers.Adam(learning_rate=5e-3)
    xent = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def step(inputs, labels):
        with tf.GradientTape() as tape:
            out = model(inputs, training=True)
            loss = (xent(labels["start_positions"], out["start_logits"])
                    + xent(labels["end_positions"], out["end_logits"])) / 2
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    for i in range(steps):
        loss = step(*next(data))
        if (i + 1) % 100 == 0:
            log(f"step {i + 1}: loss {float(loss):.3f}")
    albert_tf.save_model_dir(model, model_dir, task_info=TaskInfo(
        "squad", "span", None, SDK_SPAN_SEQ_LENGTH, text_pair=True), vocab_file=vocab)
    return model_dir


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
    """Our edge runner's (`albert_tf.export.tflite_runner.TFLiteRunner`) answers on the
    ``tflite`` file."""
    from albert_tf.export.tflite_runner import TFLiteRunner
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
