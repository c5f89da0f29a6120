"""Span answers through TFLite Task Library ``BertQuestionAnswerer`` against our SavedModel.

    .venv/bin/python studies/figures.py mobile-sdk-span [--model_dir=runs/.../final] \\
        [--data_dir=DIR] [--steps=1000] [--examples=200] [--json=figures.json]
    python studies/mobile_sdks/span.py --help      # the same flags, run directly

Without ``--model_dir``, finetunes an albert_tiny-sized span model (position embeddings
widened to 384, the one length the SDK feeds) for ``--steps`` steps on a SQuAD-format set
built from the IMDB unlabeled corpus (`albert_tf.data.examples.cloze_squad`: cloze questions,
no test split exists or is used; ``--data_dir`` or ``$ALBERT_TF_DATA_DIR``) through the
training stack (`albert_tf.benchmark.mobile_sdk_span.train_span_model`: the
``finetune_squad_albert_mini`` experiment with its `OVERRIDES`). Exports the model as a
SavedModel (``answer``, ``start_index``, ``end_index``) and as an SDK-shaped ``.tflite``
(``--seq_lengths=384``, metadata embedded), answers the held-out questions with
``BertQuestionAnswerer`` from the SDK environment (``make sdk``, ``--sdk_python``;
`albert_tflite.sdk_check`) and compares, per example
(`albert_tf.export.sdk_metadata.compare_spans`):

* **span**: the SDK's answer equals the whitespace-separated context words that contain the
  SavedModel's answer span (`sdk_answer_words`: the SDK answers whole words of the original
  context, split on ``' '``, never part of a word);
* **text**: the SavedModel's ``answer`` (the span's pieces, detokenized: lower-cased,
  ALBERT-normalized) equals the SDK's answer put through the same normalization
  (`normalized_answer`); true when the span is whole words;
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
import sys
import tempfile
import time

from albert_tflite.sdk_check import default_python

from albert_tf.benchmark.mobile_sdk_span import (
    calibration_tsv,
    log,
    runner_answers,
    saved_model_answers,
    squad_scores,
    train_span_model,
)
from albert_tf.data.examples import cloze_squad
from albert_tf.export.sdk_metadata import compare_spans
from albert_tf.heads.span import SDK_SPAN_SEQ_LENGTH

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def sdk_answers(python: str, tflite: str, items: list) -> list[dict]:
    """BertQuestionAnswerer's (tflite_support) answers to ``[question, context]`` items,
    run in the SDK environment's ``python``."""
    from albert_tflite import sdk_check
    return sdk_check.call(python, tflite, "answer", "tflite_support", items)


def export_sdk(model_dir: str, out_dir: str, quantization: str, calibration_file: str) -> str:
    """The SDK-shaped ``.tflite`` of ``model_dir``: ``[1, 384]`` ids, metadata embedded."""
    from albert_tf.export.tflite import export_tflite
    edge = export_tflite(model_dir, os.path.join(out_dir, f"edge_{quantization}"),
                         quantization=quantization, seq_lengths=[SDK_SPAN_SEQ_LENGTH],
                         calibration_file=calibration_file, sdk_metadata="on",
                         overwrite=True)
    return os.path.join(edge, "model.tflite")


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model_dir", help="a span model directory (default: train one)")
    parser.add_argument("--data_dir", default=None,
                        help="data root (default $ALBERT_TF_DATA_DIR)")
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--train_examples", type=int, default=8000)
    parser.add_argument("--examples", type=int, default=200, help="held-out questions")
    parser.add_argument("--quantizations",
                        default="none,float16,dynamic,dynamic_per_tensor,int8")
    parser.add_argument("--sdk_python", default=default_python(ROOT),
                        help="the SDK environment's Python (default $ALBERT_TF_SDK_PYTHON, "
                        "else .venv-sdk: make sdk)")
    parser.add_argument("--json", help="also write the figures here")
    return parser.parse_args(argv)


def quantization_figures(model_dir: str, work: str, quantization: str, calibration: str,
                         held_out: list, ours: list, sdk_python: str) -> dict:
    """One quantization's SDK-shaped export against the SavedModel's answers ``ours``."""
    from albert_tf.text.vocabulary import load_tokenizer
    tflite = export_sdk(model_dir, work, quantization, calibration)
    try:
        sdk = sdk_answers(sdk_python, tflite, [[it["question"], it["context"]]
                                               for it in held_out])
    except RuntimeError as e:
        return {"model_bytes": os.path.getsize(tflite), "sdk_error": str(e)}
    tokenizer = load_tokenizer(model_dir)
    result = compare_spans(held_out, ours, sdk, tokenizer)
    runner = runner_answers(tflite, held_out)
    result["runner_span_agreement"] = compare_spans(held_out, runner, sdk,
                                                    tokenizer)["span_agreement"]
    result["runner_savedmodel_same_span"] = sum(
        (r["start_index"], r["end_index"]) == (o["start_index"], o["end_index"])
        for r, o in zip(runner, ours))
    result["model_bytes"] = os.path.getsize(tflite)
    result["squad_sdk"] = squad_scores(held_out, [s["answer"] for s in sdk])
    result["differing"] = result["differing"][:10]
    log(f"{quantization}: {result['examples']} questions; the SDK's answer is the "
        f"SavedModel's span (whole words) on {result['span_agreement']}, our runner's "
        f"on {result['runner_span_agreement']}; text equal after normalization on "
        f"{result['text_agreement']}; {result['model_bytes']:,} bytes")
    return result


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    from albert_tf import resources
    from albert_tf.export.saved_model import export_saved_model
    try:
        data_dir = resources.data_dir(args.data_dir)
    except resources.DataDirError as error:     # one line, before anything runs
        sys.exit(f"studies/mobile_sdks/span.py: error: {error}")
    train, held_out = cloze_squad(data_dir, args.train_examples, args.examples)
    figures: dict = {"train_examples": len(train), "examples": len(held_out)}
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = args.model_dir
        if not model_dir:
            t = time.time()
            model_dir = train_span_model(os.path.join(tmp, "train"), train, args.steps)
            figures["training"] = {"steps": args.steps, "seconds": round(time.time() - t, 1)}
        saved = export_saved_model(model_dir, os.path.join(tmp, "serving"))
        ours = saved_model_answers(saved, held_out)
        figures["squad_savedmodel"] = squad_scores(held_out, [o["answer"] for o in ours])
        calibration = calibration_tsv(os.path.join(tmp, "calibration.tsv"), train[:256])
        for quantization in args.quantizations.split(","):
            figures[quantization] = quantization_figures(
                model_dir, tmp, quantization, calibration, held_out, ours, args.sdk_python)
    text = json.dumps(figures, indent=1, ensure_ascii=False)
    print(text)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
