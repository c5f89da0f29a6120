"""Sentence similarity through MediaPipe ``TextEmbedder`` on the ``--head=embedding`` export.

    .venv/bin/python studies/figures.py mobile-sdk-embedding --model_dir=runs/.../final \\
        [--data_dir=DIR] [--quantizations=none,dynamic] [--json=figures.json]

Exports the model directory's encoder with the embedding head (``albert-tf-export
--format=tflite --head=embedding``: mean of the last hidden states over the mask,
L2-normalized, TFLite metadata embedded) and embeds text with MediaPipe ``TextEmbedder``
from the SDK environment (``make sdk``; `albert_tflite.sdk_check`), which tokenizes with the
SentencePiece model embedded in the file, as an app does.

The pair set (no paraphrase corpus is in the shared data; built from RTE train + dev, never
test; ``--splits``):

* **related**: every ``entailment`` pair (``sentence1``, ``sentence2``): the hypothesis
  restates part of the premise;
* **unrelated**: for each related pair, its premise with the hypothesis of another related
  pair (a seeded derangement), so both sides of the comparison have the same premise;
* **hard**: the ``not_entailment`` pairs (same topic and many shared words, meaning not
  entailed), reported as a mean only.

Figures per export: mean cosine of related, unrelated and hard pairs; the fraction of related
pairs scoring above their unrelated counterpart (``above_unrelated``); the same fraction for a
lexical baseline (Jaccard overlap of the SentencePiece ids) for scale. Also, per export, the
agreement of TextEmbedder with our runner (`albert_tflite.runner.TFLiteRunner`): the lowest
cosine over every text of the set and its upper-cased, accented and curly-quoted variants,
and the norms of the SDK's vectors. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
from typing import Sequence

import numpy as np
from albert_tflite.sdk_check import default_python

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
Pair = tuple[str, str]


def log(*args) -> None:
    print(*args, flush=True)


# ----------------------------------------------------------------------------- the set
def rte_pairs(data_dir: str, splits: Sequence[str]) -> dict[str, list[Pair]]:
    """RTE (``sentence1``, ``sentence2``) pairs of ``splits`` by label."""
    if "test" in splits:
        raise SystemExit("--splits: the test split is for final evaluation only.")
    from albert_tf.data.task_data import split_texts
    pairs: dict[str, list[Pair]] = {"entailment": [], "not_entailment": []}
    for split in splits:
        for first, second, label in zip(*split_texts("rte", split, data_dir)):
            if label in pairs:
                pairs[label].append((first.strip(), second.strip()))
    return pairs


def derangement(n: int, seed: int) -> list[int]:
    """A seeded permutation of ``range(n)`` with no fixed point (n >= 2)."""
    rng = random.Random(seed)
    while True:
        perm = list(range(n))
        rng.shuffle(perm)
        if all(i != j for i, j in enumerate(perm)):
            return perm


def pair_set(data_dir: str, splits: Sequence[str], seed: int) -> dict[str, list[Pair]]:
    """``related``, ``unrelated`` (aligned with ``related``: same premise) and ``hard``."""
    pairs = rte_pairs(data_dir, splits)
    related = pairs["entailment"]
    perm = derangement(len(related), seed)
    unrelated = [(related[i][0], related[j][1]) for i, j in enumerate(perm)]
    return {"related": related, "unrelated": unrelated, "hard": pairs["not_entailment"]}


ACCENTS = str.maketrans({"a": "á", "e": "é", "i": "ï", "o": "ô", "u": "ù", "n": "ñ",
                         "c": "ç", "A": "À", "E": "É"})


def curly(text: str) -> str:
    """``text`` with typographic quotes (’ “ ”) for the ASCII ones."""
    out, opened = [], False
    for ch in text.replace("''", '"').replace("``", '"'):
        if ch == '"':
            ch, opened = ("\u201d" if opened else "\u201c"), not opened
        out.append("\u2019" if ch == "'" else ch)
    return "".join(out)


def variants(texts: Sequence[str]) -> list[str]:
    """Upper-cased, accented and curly-quoted forms of ``texts``."""
    return ([t.upper() for t in texts] + [t.translate(ACCENTS) for t in texts]
            + [curly(t) for t in texts])


# ---------------------------------------------------------------------- the embeddings
def export(model_dir: str, out: str, quantization: str, seq_length: int | None) -> str:
    """The ``.tflite`` path of the embedding export of ``model_dir``."""
    from albert_tf.export.tflite import export_tflite
    export_tflite(model_dir, out, quantization=quantization, head="embedding",
                  seq_lengths=[seq_length] if seq_length else None, overwrite=True)
    return os.path.join(out, "model.tflite")


def sdk_embeddings(python: str, model: str, texts: Sequence[str]) -> dict[str, np.ndarray]:
    """Text -> TextEmbedder's vector ``[H]`` (float64)."""
    from albert_tflite import sdk_check
    answers = sdk_check.call(python, model, "embed", "mediapipe", list(texts))
    return {t: np.asarray(a["embedding"], float) for t, a in zip(texts, answers)}


def runner_embeddings(model: str, texts: Sequence[str]) -> dict[str, np.ndarray]:
    """Text -> our runner's vector ``[H]`` (float64)."""
    from albert_tflite.runner import TFLiteRunner
    runner = TFLiteRunner(os.path.dirname(model), num_threads=1)
    return {t: np.asarray(p["embedding"], float) for t, p in zip(texts, runner.predict(texts))}


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / max(np.linalg.norm(a) * np.linalg.norm(b), 1e-12))


# -------------------------------------------------------------------------- the figures
def similarity_figures(vectors: dict[str, np.ndarray], pairs: dict[str, list[Pair]],
                       score=None) -> dict:
    """Mean score per pair kind and the fraction of related pairs above their unrelated
    counterpart; ``score(a, b)`` defaults to the cosine of the vectors."""
    score = score or (lambda a, b: cosine(vectors[a], vectors[b]))
    scores = {kind: np.array([score(a, b) for a, b in items]) for kind, items in pairs.items()}
    above = scores["related"] > scores["unrelated"]
    return {**{f"mean_{kind}": round(float(s.mean()), 4) for kind, s in scores.items()},
            "above_unrelated": round(float(above.mean()), 4)}


def model_tokenizer(model_dir: str):
    """The model directory's Python tokenizer (``vocab.model``, ``task.json``'s casing)."""
    from albert_tf.text.tokenizer import AlbertTokenizer
    with open(os.path.join(model_dir, "task.json"), encoding="utf-8") as f:
        lower = json.load(f).get("do_lower_case", True)
    return AlbertTokenizer(os.path.join(model_dir, "vocab.model"), do_lower_case=lower)


def jaccard_score(tokenizer):
    """Jaccard overlap of the SentencePiece id sets of two texts (the lexical baseline)."""
    def score(a: str, b: str) -> float:
        ids_a, ids_b = set(tokenizer.encode(a)), set(tokenizer.encode(b))
        return len(ids_a & ids_b) / max(len(ids_a | ids_b), 1)
    return score


def agreement(sdk: dict[str, np.ndarray], ours: dict[str, np.ndarray]) -> dict:
    """Lowest TextEmbedder-vs-runner cosine and the range of the SDK's vector norms."""
    cos = [cosine(sdk[t], ours[t]) for t in sdk]
    norms = [float(np.linalg.norm(v)) for v in sdk.values()]
    return {"texts": len(cos), "min_cosine_sdk_vs_runner": round(min(cos), 6),
            "below_0.999": int(sum(c < 0.999 for c in cos)),
            "sdk_norm_range": [round(min(norms), 6), round(max(norms), 6)]}


def measure(model: str, python: str, pairs: dict[str, list[Pair]]) -> dict:
    """The figures of one export."""
    texts = sorted({t for items in pairs.values() for pair in items for t in pair})
    checked = texts + variants(texts)
    start = time.time()
    sdk = sdk_embeddings(python, model, checked)
    sdk_seconds = time.time() - start
    ours = runner_embeddings(model, checked)
    return {"textembedder": similarity_figures(sdk, pairs), "agreement": agreement(sdk, ours),
            "textembedder_seconds": round(sdk_seconds, 1),
            "tflite_bytes": os.path.getsize(model)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model_dir", required=True, help="finetuned or pretrained model dir")
    parser.add_argument("--data_dir", default=None,
                        help="data root (default $ALBERT_TF_DATA_DIR)")
    parser.add_argument("--splits", default="train,dev", help="RTE splits for the pair set")
    parser.add_argument("--quantizations", default="none,dynamic")
    parser.add_argument("--seq_length", type=int, help="of the export (default: the model's)")
    parser.add_argument("--sdk_python", default=default_python(ROOT),
                        help="default: $ALBERT_TF_SDK_PYTHON, else .venv-sdk (make sdk)")
    parser.add_argument("--workdir", help="where the exports go (default: a temp dir)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args(list(argv) if argv is not None else None)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    python = args.sdk_python
    from albert_tf import resources
    pairs = pair_set(resources.data_dir(args.data_dir), args.splits.split(","), args.seed)
    log(f"pairs: {', '.join(f'{len(v)} {k}' for k, v in pairs.items())} "
        f"(RTE {args.splits})")
    tokenizer = model_tokenizer(args.model_dir)
    result = {"model_dir": args.model_dir, "set": {k: len(v) for k, v in pairs.items()},
              "lexical_jaccard": similarity_figures({}, pairs, jaccard_score(tokenizer))}
    with tempfile.TemporaryDirectory() as tmp:
        for quantization in args.quantizations.split(","):
            out = os.path.join(args.workdir or tmp, f"embedding_{quantization}")
            model = export(args.model_dir, out, quantization, args.seq_length)
            result[quantization] = measure(model, python, pairs)
            log(quantization, json.dumps(result[quantization]))
    print(json.dumps(result, indent=1))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    from albert_tf.cli import script_main
    script_main(main)
