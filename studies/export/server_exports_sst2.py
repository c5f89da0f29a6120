"""SST-2 dev accuracy of the x86-server exports against the Keras float model (issue 19).

    .venv/bin/python studies/figures.py server-exports-sst2 \
        --model_dir=runs/quick/finetune/albert_mini/best --work_dir=/tmp/server_exports

Exports the model as ONNX (float32 and ONNX Runtime dynamic int8) and, with ``--openvino``,
as an OpenVINO IR (float and NNCF int8), runs all 872 SST-2 dev sentences through each
export's Python runner (raw text in: `OnnxClassifier`, `OpenVinoClassifier`; the same
tokenization and buckets) and prints one JSON object: per export its file size, dev accuracy,
the difference to the Keras model's accuracy (the gate: within 0.5 points) and the share of
labels equal to Keras's.
"""

from __future__ import annotations

import argparse
import json
import os

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def keras_labels(model_dir: str, sentences: list[str]) -> list[int]:
    """The Keras classifier's labels (batches of 64, each packed to the model's length)."""
    import numpy as np

    from albert_tf.backend import tf
    from albert_tf.export.common import load_source
    from albert_tf.text.vocabulary import load_tokenizer
    source = load_source(model_dir)
    tok = load_tokenizer(source.vocab_file, do_lower_case=source.task_info.do_lower_case)
    seq = source.task_info.max_seq_length
    labels: list[int] = []
    for start in range(0, len(sentences), 64):
        rows = [tok.pack(s, max_seq_length=seq) for s in sentences[start:start + 64]]
        feats = {k: tf.constant(np.array([r[k] for r in rows], np.int32)) for k in rows[0]}
        labels += np.argmax(source.model(feats)["logits"].numpy(), -1).tolist()
    return labels


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--work_dir", required=True)
    parser.add_argument("--data_dir", default=None)
    parser.add_argument("--openvino", action="store_true", help="also the OpenVINO IR")
    args = parser.parse_args(argv)
    from albert_tf.benchmark.end_to_end import load_sst2_dev, sst2_dev_file
    from albert_tf.export.onnx import export_onnx
    from albert_tf.runtime.onnx import OnnxClassifier
    sentences, gold = load_sst2_dev(sst2_dev_file(args.data_dir))
    gold = [int(g) for g in gold]
    reference = keras_labels(args.model_dir, sentences)
    keras_accuracy = sum(p == g for p, g in zip(reference, gold)) / len(gold)
    exports = {}
    for q in ("none", "int8"):
        out = os.path.join(args.work_dir, f"onnx_{q}")
        export_onnx(args.model_dir, out, q, overwrite=True)
        exports[f"onnx_{q}"] = (out, lambda out=out: OnnxClassifier(out, threads=2),
                                [os.path.join(out, "model.onnx")])
    if args.openvino:
        from albert_tf.export.openvino import export_openvino
        from albert_tf.runtime.openvino import OpenVinoClassifier
        for q in ("none", "int8"):
            out = os.path.join(args.work_dir, f"openvino_{q}")
            export_openvino(args.model_dir, out, q, overwrite=True, data_dir=args.data_dir)
            exports[f"openvino_{q}"] = (out, lambda out=out: OpenVinoClassifier(
                out, threads=2, precision="f32"), [os.path.join(out, f)
                                                   for f in ("model.xml", "model.bin")])
    report = {"model_dir": args.model_dir, "sentences": len(gold),
              "keras_accuracy": keras_accuracy, "exports": {}}
    for name, (out, make, files) in exports.items():
        labels = [p["label_id"] for p in make().predict(sentences)]
        accuracy = sum(p == g for p, g in zip(labels, gold)) / len(gold)
        report["exports"][name] = {
            "mib": sum(os.path.getsize(f) for f in files) / 2**20, "accuracy": accuracy,
            "points_vs_keras": 100 * (accuracy - keras_accuracy),
            "labels_equal_to_keras": sum(a == b for a, b in zip(labels, reference)) / len(gold)}
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    from albert_tf.cli import script_main
    script_main(main)
