"""The export must-show measurements on a model finetuned on SST-2 (issue 7).

    make figures NAME=export-must-show    # the three steps below, in $ALBERT_TF_EXPORT_WORK

    albert-tf-finetune --task=sst2 --config_file=finetune_sst2_albert_mini \\
        --max_seq_length=128 --model_dir=/tmp/sst2_mini
    albert-tf-compress --config_file=compress_sst2_qat --init_model=/tmp/sst2_mini/best \\
        --model_dir=/tmp/sst2_qat --notflite                      # for the QAT row
    .venv/bin/python studies/figures.py export-sst2-must-show \\
        --model_dir=/tmp/sst2_mini/best --qat_model_dir=/tmp/sst2_qat/model \\
        --work_dir=/tmp/export_must_show [--base] [--json=results.json]

1. SavedModel (TF Serving layout) loaded in a fresh process that imports only tensorflow and
   tensorflow_text: probabilities for all 872 SST-2 dev sentences vs the Keras model.
2. Bad input at ``serving_default``: empty string, 100,000 characters, invalid UTF-8, a batch
   mixing lengths; and a model directory without a vocabulary at export time.
3. TFLite variants (float, float16, dynamic, int8 with XNNPACK float ops, pure int8, the
   in-graph tokenizer, and QAT when a QAT model exists): dev accuracy next to the Keras
   float model; in-graph tokenizer ids vs the Python tokenizer on every dev sentence.
4. Latency of each variant at batch 1, seq 128, 2 threads (and, with ``--base``, of an
   ALBERT-base-shaped model, where the int8 question matters).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np  # noqa: E402

FRESH_PROCESS = r"""
import sys, json, numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops)
path, texts_file, out_file = sys.argv[1:4]
texts = json.load(open(texts_file))
fn = tf.saved_model.load(path).signatures["serving_default"]
probs = [fn(text=tf.constant(texts[i:i + 64]))["probabilities"].numpy()
         for i in range(0, len(texts), 64)]
np.save(out_file, np.concatenate(probs))
mods = sorted(m.split(".")[0] for m in sys.modules if m.split(".")[0] in
              ("albert_tf", "tf_keras", "keras", "tensorflow", "tensorflow_text"))
print(json.dumps(sorted(set(mods))))
"""


def log(*args) -> None:
    print(*args, flush=True)


def keras_probabilities(model, tok, texts, seq: int) -> np.ndarray:
    from albert_tf.backend import tf
    out = []
    for i in range(0, len(texts), 64):
        rows = [tok.pack(t, max_seq_length=seq) for t in texts[i:i + 64]]
        feats = {k: tf.constant([r[k] for r in rows], tf.int32) for k in rows[0]}
        out.append(tf.nn.softmax(model(feats, training=False)["logits"]).numpy())
    return np.concatenate(out)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--qat_model_dir", default=None,
                        help="the model/ of an albert-tf-compress QAT run from --model_dir "
                             "(the QAT row; without it, a QAT model in --model_dir if any)")
    parser.add_argument("--work_dir", default="/tmp/export_must_show")
    parser.add_argument("--data_dir", default=None, help="default: $ALBERT_TF_DATA_DIR")
    parser.add_argument("--base", action="store_true", help="also time ALBERT-base shapes")
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)

    import albert_tf
    from albert_tf import resources
    from albert_tf.data.task_data import expected_glue_file, load_task
    from albert_tf.export.common import ExportError, load_source
    from albert_tf.export.saved_model import export_saved_model
    from albert_tf.export.tflite import export_tflite
    from albert_tf.text.tokenizer import AlbertTokenizer
    from albert_tflite.benchmark import benchmark
    from albert_tflite.runner import TFLiteRunner

    results: dict = {}
    work = args.work_dir
    os.makedirs(work, exist_ok=True)
    data_dir = resources.data_dir(args.data_dir)
    task = load_task("sst2", data_dir)
    texts = [ex.text_a for ex in task.dev]
    labels = np.array([int(ex.label) for ex in task.dev])
    source = load_source(args.model_dir)
    seq = source.task_info.max_seq_length
    tok = AlbertTokenizer(source.vocab_file, source.task_info.do_lower_case)
    keras_probs = keras_probabilities(source.model, tok, texts, seq)
    results["keras_accuracy"] = float(np.mean(keras_probs.argmax(-1) == labels))
    log(f"Keras float model: dev accuracy {results['keras_accuracy']:.4f}")

    # 1. SavedModel parity in a fresh process.
    t = time.time()
    saved = export_saved_model(args.model_dir, os.path.join(work, "serving"), overwrite=True,
                               version=1, source=source)
    results["saved_model_export_s"] = time.time() - t
    texts_file = os.path.join(work, "dev_texts.json")
    with open(texts_file, "w") as f:
        json.dump(texts, f)
    out_file = os.path.join(work, "saved_model_probs.npy")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TF_USE_LEGACY_KERAS")}
    proc = subprocess.run([sys.executable, "-c", FRESH_PROCESS, saved, texts_file, out_file],
                          capture_output=True, text=True, env=env, cwd="/")
    if proc.returncode:
        raise SystemExit(proc.stderr[-3000:])
    sm_probs = np.load(out_file)
    results["saved_model_fresh_process_modules"] = json.loads(proc.stdout.strip().splitlines()[-1])
    results["saved_model_max_abs_diff"] = float(np.max(np.abs(sm_probs - keras_probs)))
    results["saved_model_accuracy"] = float(np.mean(sm_probs.argmax(-1) == labels))
    log(f"SavedModel {saved}: max |p_savedmodel - p_keras| over {len(texts)} dev sentences = "
        f"{results['saved_model_max_abs_diff']:.2e} (modules: "
        f"{results['saved_model_fresh_process_modules']})")

    # 2. Bad input.
    import tensorflow_text  # noqa: F401
    from albert_tf.backend import tf
    fn = tf.saved_model.load(saved).signatures["serving_default"]
    bad = {"empty": [b""], "100k_chars": [("spam " * 20000).encode()],
           "invalid_utf8": [b"\xff\xfe\xc3(bad \x80 bytes"],
           "mixed_batch": [b"", b"good", ("long " * 5000).encode(), b"\xc3\x28"]}
    results["bad_input"] = {}
    for name, batch in bad.items():
        try:
            out = fn(text=tf.constant(batch))
        except tf.errors.InvalidArgumentError as e:   # a blank text (issue #44): HTTP 400
            results["bad_input"][name] = {"answered": False, "refused": e.message.split(
                "assertion failed: [", 1)[-1].split("]\n", 1)[0]}
            log(f"bad input {name}: refused ({results['bad_input'][name]['refused']})")
            continue
        ok = out["probabilities"].shape == (len(batch), 2) and bool(
            np.all(np.isfinite(out["probabilities"].numpy())))
        results["bad_input"][name] = {"answered": ok,
                                      "labels": [x.decode() for x in out["label"].numpy()]}
        log(f"bad input {name}: answered={ok} labels={results['bad_input'][name]['labels']}")
    novocab = os.path.join(work, "no_vocab_model")
    shutil.rmtree(novocab, ignore_errors=True)
    shutil.copytree(args.model_dir, novocab)
    os.remove(os.path.join(novocab, "vocab.model"))
    try:
        export_saved_model(novocab, os.path.join(work, "serving_bad"))
        results["no_vocab_error"] = None
    except ExportError as e:
        results["no_vocab_error"] = str(e)
    log(f"model dir without vocabulary: {results['no_vocab_error']}")

    # 3. TFLite variants.
    calibration = expected_glue_file(data_dir, "sst2", "train")
    variants = {
        "float32": dict(quantization="none"),
        "float16": dict(quantization="float16"),
        "dynamic": dict(quantization="dynamic"),
        "int8": dict(quantization="int8", int8_float_ops="xnnpack"),
        "int8_pure": dict(quantization="int8", int8_float_ops="none"),
        "float32_tokenizer": dict(quantization="none", with_tokenizer=True),
        "qat": dict(quantization="qat"),
    }
    results["tflite"] = {}
    for name, kwargs in variants.items():
        out_dir = os.path.join(work, "edge", name)
        t = time.time()
        qat_dir = args.qat_model_dir if name == "qat" else None
        try:
            export_tflite(qat_dir or args.model_dir, out_dir, seq_lengths=[seq],
                          overwrite=True, calibration_file=calibration,
                          source=None if qat_dir else source, **kwargs)
        except ExportError as e:
            results["tflite"][name] = {"error": str(e)}
            log(f"{name}: not exported: {e}")
            continue
        runner = TFLiteRunner(out_dir, num_threads=2)
        preds = runner.predict(texts)
        probs = np.array([p["probabilities"] for p in preds])
        meta = runner.meta
        entry = {"export_s": time.time() - t,
                 "size_mb": os.path.getsize(os.path.join(out_dir, "model.tflite")) / 1e6,
                 "accuracy": float(np.mean(probs.argmax(-1) == labels)),
                 "max_abs_diff_vs_keras": float(np.max(np.abs(probs - keras_probs))),
                 "float_ops": meta["ops"]["float_ops"],
                 "integer_only": meta.get("integer_only")}
        entry["accuracy_delta_points"] = 100 * (entry["accuracy"] - results["keras_accuracy"])
        if kwargs.get("with_tokenizer"):
            ids = runner.tokenize_in_graph(texts)
            same = sum(all(list(ids[i][k]) == tok.pack(texts[i], max_seq_length=seq)[k]
                           for k in ("input_word_ids", "input_mask", "input_type_ids"))
                       for i in range(len(texts)))
            entry["ids_identical"] = f"{same}/{len(texts)}"
        bench = benchmark(out_dir, num_threads=2, runs=args.runs)
        entry["latency_ms"] = bench[0]["median_ms"]
        entry["latency_min_ms"] = bench[0]["min_ms"]
        results["tflite"][name] = entry
        log(f"{name}: accuracy {entry['accuracy']:.4f} ({entry['accuracy_delta_points']:+.2f} "
            f"points), max|dp| {entry['max_abs_diff_vs_keras']:.2e}, {entry['size_mb']:.2f} MB, "
            f"latency {entry['latency_ms']:.2f} ms (min {entry['latency_min_ms']:.2f})"
            + (f", ids identical {entry['ids_identical']}" if "ids_identical" in entry else ""))

    # 4. ALBERT-base shapes (random weights): where full int8 vs float matters.
    if args.base:
        from albert_tf.checkpoints import TaskInfo
        base_dir = os.path.join(work, "albert_base_random")
        config = albert_tf.load_config("albert_base").replace(vocab_size=tok.vocab_size)
        albert_tf.save_model_dir(albert_tf.build_classifier(config, 2), base_dir,
                                 task_info=TaskInfo("sst2", "classification", ("0", "1"), 128),
                                 vocab_file=source.vocab_file)
        base_source = load_source(base_dir)
        results["albert_base_latency_ms"] = {}
        for name in ("float32", "float16", "dynamic", "int8", "int8_pure"):
            out_dir = os.path.join(work, "edge_base", name)
            export_tflite(base_dir, out_dir, seq_lengths=[128], overwrite=True,
                          calibration_file=calibration, num_calibration=64,
                          source=base_source, **variants[name])
            bench = benchmark(out_dir, num_threads=2, runs=max(10, args.runs // 3))
            results["albert_base_latency_ms"][name] = {"median": bench[0]["median_ms"],
                                                       "min": bench[0]["min_ms"]}
            log(f"albert_base {name}: {bench[0]['median_ms']:.1f} ms "
                f"(min {bench[0]['min_ms']:.1f})")

    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    log(json.dumps(results, indent=2))


if __name__ == "__main__":
    from albert_tf.cli import script_main
    script_main(main)
