"""Span answers through TFLite Task Library ``BertQuestionAnswerer`` against our SavedModel.

    .venv/bin/python benchmarks/figures.py mobile-sdk-span [--model_dir=runs/.../final] \\
        [--data_dir=DIR] [--steps=1000] [--examples=200] [--json=figures.json]

Without ``--model_dir``, finetunes an albert_tiny-sized span model (position embeddings
widened to 384, the one length the SDK feeds) for ``--steps`` steps on a SQuAD-format set
built from the IMDB unlabeled corpus (`build_squad`: cloze questions, no test split exists
or is used). Exports the model as a SavedModel (``answer``, ``start_index``, ``end_index``)
and as an SDK-shaped ``.tflite`` (``--seq_lengths=384``, metadata embedded), answers the
held-out questions with ``BertQuestionAnswerer`` from the SDK environment (``make sdk``;
`albert_tflite.sdk_check`) and compares, per example:

* **span**: the SDK's answer equals the whitespace-separated context words that contain the
  SavedModel's answer span (`sdk_words`: the SDK answers whole words of the original
  context, split on ``' '``, never part of a word);
* **text**: the SavedModel's ``answer`` (the span's pieces, detokenized: lower-cased,
  ALBERT-normalized) equals the SDK's answer put through the same normalization
  (`normalized`); true when the span is whole words;
* **within**: the SavedModel's ``answer`` is contained in the normalized SDK answer.

Per quantization also ``runner_span_agreement``: the same comparison against our own edge
runner (`albert_tflite.runner`) on the same file (a quantized export differs from the float
SavedModel by its quantization, not by the SDK), ``runner_savedmodel_same_span``, the exact
match / F1 of both against the cloze answers, and the model size. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import tempfile
import time
from typing import Iterator, Sequence

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_DATA_DIR = os.path.join(ROOT, "..", "shared", "data")
VOCAB = os.path.join(ROOT, "official_configs", "vocab", "imdb_pydocs_8k.model")
SDK_SEQ = 384            # BertQuestionAnswerer's kMaxSeqLen: the one length it feeds
SDK_MAX_QUERY = 64       # its kMaxQueryLen: the question is cut to 64 pieces
TRAIN_SEQ = 128          # training length (contexts are short; positions up to 384 exist)
EVAL_FIRST_DOC = 30_000  # held-out documents of the corpus start here
Item = dict             # {"question", "context", "answer", "answer_start"}


def log(*args) -> None:
    print(*args, file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------- the data
def imdb_documents(data_dir: str, first: int, count: int) -> Iterator[str]:
    """Documents ``first .. first + count - 1`` of the unlabeled IMDB corpus (paragraph
    breaks become spaces)."""
    path = os.path.join(data_dir, "corpus", "imdb-unsup.txt")
    index, lines = 0, []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                lines.append(line.strip())
                continue
            if lines:
                if index >= first:
                    yield " ".join(lines)
                index, lines = index + 1, []
                if index >= first + count:
                    return


NAME_OR_NUMBER = re.compile(r"^\W*([A-Z][a-z]+|\d[\d,.:]*\d|\d)\W*$")


def _cloze(sentences: list[str], rng: random.Random) -> Item | None:
    """A question on 2-3 consecutive ``sentences``: one of them with a name or a number
    (not its first word: 1-2 capitalized words, or digits) replaced by "what"; the answer
    stripped of edge punctuation, as SQuAD answers are."""
    context = " ".join(sentences)
    if not 12 <= len(context.split()) <= 60:
        return None
    candidates = []
    for target, sentence in enumerate(sentences):
        words = [m.span() for m in re.finditer(r"\S+", sentence)]
        if 4 <= len(words) <= 25:
            candidates += [(target, words, k) for k in range(1, len(words))
                           if NAME_OR_NUMBER.match(sentence[slice(*words[k])])]
    if not candidates:
        return None
    target, words, a = rng.choice(candidates)
    sentence = sentences[target]
    b = a + 1 if a + 1 < len(words) and NAME_OR_NUMBER.match(
        sentence[slice(*words[a + 1])]) and sentence[words[a][1] - 1].isalnum() else a
    raw = sentence[words[a][0]:words[b][1]]
    text = raw.strip(".,;:!?\"'()-*")
    start = words[a][0] + raw.index(text)
    question = sentence[:start] + "what" + sentence[start + len(text):]
    question = question.rstrip(" .!?") + "?"
    offset = sum(len(s) + 1 for s in sentences[:target])
    return {"question": question, "context": context, "answer": text,
            "answer_start": offset + start}


def cloze_items(documents: Sequence[str], seed: int, limit: int) -> list[Item]:
    """At most ``limit`` cloze items from ``documents``, one per context window."""
    rng = random.Random(seed)
    items: list[Item] = []
    for doc in documents:
        sentences = [s for s in re.split(r"(?<=[.!?])\s+", doc) if s]
        i = 0
        while i < len(sentences) and len(items) < limit:
            n = rng.choice((2, 3))
            item = _cloze(sentences[i:i + n], rng)
            if item:
                items.append(item)
            i += n
        if len(items) >= limit:
            break
    return items


def squad_json(items: Sequence[Item]) -> dict:
    """SQuAD v1.1 JSON of ``items``."""
    paragraphs = [{"context": it["context"], "qas": [{
        "id": f"q{i}", "question": it["question"],
        "answers": [{"text": it["answer"], "answer_start": it["answer_start"]}]}]}
        for i, it in enumerate(items)]
    return {"version": "1.1", "data": [{"title": "imdb-cloze", "paragraphs": paragraphs}]}


def variants(items: Sequence[Item]) -> list[Item]:
    """The items as an app may send them: every third upper-cased, every third with curly
    quotes, accents and a tab (the SDK splits words on ``' '`` only)."""
    def app_text(text: str, i: int, context: bool = False) -> str:
        if i % 3 == 1:
            return text.upper()
        if i % 3 == 2:
            text = text.replace("'", "\u2019").replace("the ", "thé ").replace('"', "\u201c")
            return text.replace(". ", ".\t", 1) if context else text
        return text

    return [dict(it, question=app_text(it["question"], i),
                 context=app_text(it["context"], i, context=True),
                 answer=app_text(it["answer"], i)) for i, it in enumerate(items)]


def build_squad(data_dir: str, num_train: int, num_eval: int, seed: int = 0
                ) -> tuple[list[Item], list[Item]]:
    """(train items from the first corpus documents, held-out items from documents starting
    at `EVAL_FIRST_DOC`, as `variants`)."""
    train = cloze_items(list(imdb_documents(data_dir, 0, max(200, num_train // 3))),
                        seed, num_train)
    held_out = cloze_items(list(imdb_documents(data_dir, EVAL_FIRST_DOC, 50 + num_eval)),
                           seed + 1, num_eval)
    return train, variants(held_out)


# ----------------------------------------------------------------------------- the model
def train_span_model(model_dir: str, train: Sequence[Item], steps: int, batch_size: int = 16,
                     seed: int = 0) -> str:
    """Finetunes a fresh albert_tiny-sized span model on ``train`` (``TRAIN_SEQ`` ids) and
    writes the model directory (``task.json``: squad, span, max_seq_length 384)."""
    import albert_tf
    from albert_tf.backend import keras, tf
    from albert_tf.checkpoints import TaskInfo
    from albert_tf.data.squad import (convert_examples_to_features, read_squad_examples,
                                      squad_dataset)
    from albert_tf.text.tokenizer import AlbertTokenizer

    keras.utils.set_random_seed(seed)
    tok = AlbertTokenizer(VOCAB)
    examples = read_squad_examples(squad_json(train), is_training=True)
    features = convert_examples_to_features(examples, tok, TRAIN_SEQ, 64, SDK_MAX_QUERY,
                                            is_training=True)
    data = iter(squad_dataset(features, batch_size, True, seed=seed).repeat())
    config = albert_tf.load_config("albert_tiny").replace(vocab_size=8000,
                                                          max_position_embeddings=SDK_SEQ)
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
        "squad", "span", None, SDK_SEQ, text_pair=True), vocab_file=VOCAB)
    return model_dir


def export_saved(model_dir: str, out_dir: str) -> str:
    """The SavedModel export of ``model_dir`` (its path)."""
    from albert_tf.export.saved_model import export_saved_model
    return export_saved_model(model_dir, os.path.join(out_dir, "serving"))


def export_sdk(model_dir: str, out_dir: str, quantization: str = "none",
               calibration_file: str | None = None) -> str:
    """The SDK-shaped ``.tflite`` export of ``model_dir`` (its path): ``[1, 384]`` ids,
    metadata embedded (``--sdk_metadata=on``)."""
    from albert_tf.export.tflite import export_tflite
    edge = export_tflite(model_dir, os.path.join(out_dir, f"edge_{quantization}"),
                         quantization=quantization, seq_lengths=[SDK_SEQ],
                         calibration_file=calibration_file, sdk_metadata="on",
                         overwrite=True)
    return os.path.join(edge, "model.tflite")


def calibration_tsv(path: str, items: Sequence[Item]) -> str:
    """A ``question<TAB>context`` calibration file of training ``items``."""
    with open(path, "w", encoding="utf-8") as f:
        f.write("question\tcontext\n")
        for it in items:
            f.write(f"{it['question']}\t{it['context']}\n".replace("\t\t", "\t"))
    return path


def saved_model_answers(path: str, items: Sequence[Item], batch: int = 32) -> list[dict]:
    """The SavedModel's ``answer`` (str), ``start_index``, ``end_index`` per item."""
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


def runner_answers(tflite: str, items: Sequence[Item]) -> list[dict]:
    """Our edge runner's (`albert_tflite.runner.TFLiteRunner`) answers on ``tflite``."""
    from albert_tflite.runner import TFLiteRunner
    return TFLiteRunner(tflite).predict([it["question"] for it in items],
                                        [it["context"] for it in items])


# ----------------------------------------------------------------------------- comparing
def sdk_words(tok, question: str, context: str, start: int, end: int) -> str:
    """The text ``BertQuestionAnswerer`` gives for the packed token span ``start..end``: the
    context split on ``' '`` (empty words dropped), each word tokenized on its own, the span's
    first and last tokens mapped to their words, those words and the ones between joined
    with ``' '`` (what its ``Preprocess``/``ConvertIndexToString`` do); "" for no span."""
    if start < 0:
        return ""
    words = [w for w in context.split(" ") if w]
    token_word = [i for i, w in enumerate(words) for _ in tok.encode(w)]
    offset = min(len(tok.encode(question)), SDK_MAX_QUERY) + 2     # [CLS] question [SEP]
    first, last = token_word[start - offset], token_word[end - offset]
    return " ".join(words[first:last + 1])


def same_ids(tok, context: str) -> bool:
    """Whether tokenizing the ``' '``-split words one by one (as the SDK does) gives the ids
    of the whole context (as the SavedModel does): the token positions then agree."""
    return [i for w in context.split(" ") if w for i in tok.encode(w)] == tok.encode(context)


def normalized(tok, text: str) -> str:
    """``text`` as our SavedModel spells answers: encoded and decoded by our tokenizer
    (ALBERT preprocessing: lower-cased, accents stripped, quotes normalized)."""
    return tok.decode(tok.encode(text))


def compare(items: Sequence[Item], ours: Sequence[dict], sdk: Sequence[dict]) -> dict:
    """Per-item agreement figures (see the module docstring) and the differing items."""
    from albert_tf.text.tokenizer import AlbertTokenizer
    tok = AlbertTokenizer(VOCAB)
    rows = []
    for it, o, s in zip(items, ours, sdk):
        expected = sdk_words(tok, it["question"], it["context"], o["start_index"],
                             o["end_index"])
        norm = normalized(tok, s["answer"])
        rows.append({"question": it["question"], "context": it["context"],
                     "ours": o["answer"], "sdk": s["answer"], "expected_sdk": expected,
                     "span": s["answer"] == expected, "text": o["answer"] == norm,
                     "within": o["answer"] in norm, "same_ids": same_ids(tok, it["context"])})
    n = len(rows)
    return {"examples": n, "span_agreement": sum(r["span"] for r in rows),
            "text_agreement": sum(r["text"] for r in rows),
            "within": sum(r["within"] for r in rows),
            "same_ids": sum(r["same_ids"] for r in rows),
            "differing": [r for r in rows if not (r["span"] and r["within"])]}


def squad_scores(items: Sequence[Item], predictions: Sequence[str]) -> dict:
    """Exact match and F1 (SQuAD normalization) of ``predictions`` against the answers."""
    from albert_tf.data.squad import gold_answers, read_squad_examples
    from albert_tf.training.metrics import squad_metrics
    examples = read_squad_examples(squad_json(items), is_training=False)
    return squad_metrics({f"q{i}": p for i, p in enumerate(predictions)}, gold_answers(examples))


# ----------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model_dir", help="a span model directory (default: train one)")
    parser.add_argument("--data_dir", default=os.environ.get("ALBERT_TF_DATA_DIR",
                                                             DEFAULT_DATA_DIR))
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--train_examples", type=int, default=8000)
    parser.add_argument("--examples", type=int, default=200, help="held-out questions")
    parser.add_argument("--quantizations",
                        default="none,float16,dynamic,dynamic_per_tensor,int8")
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args(argv)
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from mobile_sdks import answers as sdk_answers

    train, held_out = build_squad(args.data_dir, args.train_examples, args.examples)
    figures: dict = {"train_examples": len(train), "examples": len(held_out)}
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = args.model_dir
        if not model_dir:
            t = time.time()
            model_dir = train_span_model(os.path.join(tmp, "model"), train, args.steps)
            figures["training"] = {"steps": args.steps, "seconds": round(time.time() - t, 1)}
        items = [[it["question"], it["context"]] for it in held_out]
        ours = saved_model_answers(export_saved(model_dir, tmp), held_out)
        figures["squad_savedmodel"] = squad_scores(held_out, [o["answer"] for o in ours])
        calibration = calibration_tsv(os.path.join(tmp, "calibration.tsv"), train[:256])
        for quantization in args.quantizations.split(","):
            tflite = export_sdk(model_dir, tmp, quantization, calibration)
            try:
                sdk = sdk_answers(tflite, "answer", "tflite_support", items)
            except RuntimeError as e:
                figures[quantization] = {"model_bytes": os.path.getsize(tflite),
                                         "sdk_error": str(e)}
                continue
            result = compare(held_out, ours, sdk)
            runner = runner_answers(tflite, held_out)
            result["runner_span_agreement"] = compare(held_out, runner, sdk)["span_agreement"]
            result["runner_savedmodel_same_span"] = sum(
                (r["start_index"], r["end_index"]) == (o["start_index"], o["end_index"])
                for r, o in zip(runner, ours))
            result["model_bytes"] = os.path.getsize(tflite)
            result["squad_sdk"] = squad_scores(held_out, [s["answer"] for s in sdk])
            result["differing"] = result["differing"][:10]
            figures[quantization] = result
            log(f"{quantization}: {result['examples']} questions; the SDK's answer is the "
                f"SavedModel's span (whole words) on {result['span_agreement']}, our runner's "
                f"on {result['runner_span_agreement']}; text equal after normalization on "
                f"{result['text_agreement']}; {result['model_bytes']:,} bytes")
    text = json.dumps(figures, indent=1, ensure_ascii=False)
    print(text)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    return 0
