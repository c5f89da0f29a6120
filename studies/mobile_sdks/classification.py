"""Issue #17's figures: an SST-2 model's TFLite exports scored through the mobile SDKs.

    .venv/bin/python studies/figures.py mobile-sdks --model_dir=runs/quick/finetune/albert_mini/final

Exports the model (``--quantizations``, SDK-shaped with the metadata embedded), then scores
SST-2 dev through MediaPipe ``TextClassifier`` and Task Library ``BertNLClassifier`` (the
SDKs' own Python builds in ``.venv-sdk``: ``make sdk``), through our runner
(`albert_tflite.runner`) and our evaluator (`albert_tflite.evaluate`), and prints per export:
size, accuracy per runtime, label agreement of each SDK with our runner on the dev sentences
as they are, upper-cased, and with accents and curly quotes, and the median SDK call time
(tokenization included). An SDK that cannot open an export is reported with its message.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile

from albert_tflite.sdk_check import default_python

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SDKS = ("mediapipe", "tflite_support")


def variants(sentence: str) -> dict[str, str]:
    """The dev sentence as it is, upper-cased, and with accents and curly quotes."""
    accented = (sentence.replace("e", "\u00e9").replace("a", "\u00e0").replace("'", "\u2019")
                .replace("``", "\u201c").replace("''", "\u201d").replace('"', "\u201d"))
    return {"as is": sentence, "upper": sentence.upper(), "accents+quotes": accented}


def score_export(model: str, sdk_python: str, texts: list[str], gold: list[str],
                 data_dir: str, limit: int = 0) -> dict:
    """Accuracies, agreements and SDK timings of one export."""
    from albert_tflite import sdk_check
    from albert_tflite.evaluate import evaluate
    from albert_tflite.runner import TFLiteRunner

    runner = TFLiteRunner(model)
    row = {"size_mb": os.path.getsize(model) / 1e6,
           "evaluator": evaluate(model, "sst2", data_dir, limit=limit or None)["accuracy"]}
    by_variant = {name: [variants(t)[name] for t in texts] for name in variants("")}
    ours = {name: [p["label"] for p in runner.predict(v)] for name, v in by_variant.items()}
    row["ours"] = accuracy(ours["as is"], gold)
    for sdk in SDKS:
        try:
            result = {name: sdk_check.call(sdk_python, model, "classify", sdk, v)
                      for name, v in by_variant.items()}
        except RuntimeError as e:
            row[sdk] = str(e)
            continue
        labels = {name: [a["label"] for a in answers] for name, answers in result.items()}
        row[sdk] = {"accuracy": accuracy(labels["as is"], gold),
                    "agreement": {name: accuracy(labels[name], ours[name]) for name in labels},
                    "median_ms": statistics.median(a["ms"] for a in result["as is"])}
    return row


def accuracy(predicted: list[str], reference: list[str]) -> float:
    return sum(p == r for p, r in zip(predicted, reference)) / len(reference)


def report(rows: dict[str, dict], n: int) -> None:
    from albert_tf.benchmark.cpu import cpu_info
    print(f"SST-2 dev ({n} sentences); CPU: {cpu_info(measure_clock=False).summary()}")
    print("| export | size MB | our runner | our evaluator | MediaPipe TextClassifier | "
          "Task Library BertNLClassifier |")
    print("|---|---:|---:|---:|---|---|")
    for q, row in rows.items():
        cells = []
        for sdk in SDKS:
            r = row[sdk]
            if isinstance(r, str):
                cells.append(f"cannot run: {r[:90]}")
                continue
            agree = ", ".join(f"{k} {v * 100:.2f}%" for k, v in r["agreement"].items())
            cells.append(f"{r['accuracy'] * 100:.2f}% (agrees with ours: {agree}; "
                         f"{r['median_ms']:.2f} ms/sentence)")
        print(f"| {q} | {row['size_mb']:.2f} | {row['ours'] * 100:.2f}% | "
              f"{row['evaluator'] * 100:.2f}% | {cells[0]} | {cells[1]} |")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model_dir", required=True, help="a finetuned SST-2 model directory")
    parser.add_argument("--data_dir", default=None, help="default: $ALBERT_TF_DATA_DIR")
    parser.add_argument("--quantizations", default="none,dynamic,dynamic_per_tensor,int8")
    parser.add_argument("--sdk_python", default=default_python(ROOT),
                        help="default: $ALBERT_TF_SDK_PYTHON, else .venv-sdk (make sdk)")
    parser.add_argument("--limit", type=int, default=0, help="first N dev sentences (0: all)")
    args = parser.parse_args(argv)
    from albert_tf import resources
    from albert_tf.data.task_data import split_texts
    from albert_tf.export.tflite import export_tflite

    args.data_dir = resources.data_dir(args.data_dir)
    texts, _, gold = split_texts("sst2", "dev", args.data_dir)
    if args.limit:
        texts, gold = texts[:args.limit], gold[:args.limit]
    rows = {}
    with tempfile.TemporaryDirectory() as work:
        for q in args.quantizations.split(","):
            out = export_tflite(args.model_dir, os.path.join(work, q), quantization=q,
                                data_dir=args.data_dir, sdk_metadata="on")
            rows[q] = score_export(os.path.join(out, "model.tflite"), args.sdk_python, texts,
                                   gold, args.data_dir, args.limit)
    report(rows, len(texts))


if __name__ == "__main__":
    from albert_tf.cli import script_main
    script_main(main)
