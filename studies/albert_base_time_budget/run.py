"""Where ALBERT-base's TFLite dynamic-int8 time goes at batch 1, seq 128: how much of it
is the int8 matrix work that no graph change can remove?

Builds, converts (dynamic-range int8, static [1, 128] shapes) and times three graphs
with the same LiteRT + XNNPACK settings as ``albert-tf-benchmark`` (2 threads, fresh
interpreter, median of ``--runs`` after warm-up), interleaved round by round so that
machine noise hits them alike:

* ``fc_only``: the 74 fully connected layers of ALBERT-base (per layer Q, K, V, output
  768x768, FFN 768x3072 and 3072x768; the embedding projection 128x768; the pooler)
  chained one after another, nothing else: the floor of any graph of this model;
* ``fc_attention``: the same plus the per-head attention (reshape, transpose, two
  batched matmuls, softmax) in its real place;
* ``model``: the real albert_base export (embeddings, LayerNorm, GELU, residual adds,
  attention mask) built by ``albert_tf`` with random weights.

    .venv/bin/python studies/figures.py albert-base-time-budget [--runs=30] [--rounds=3]

Prints one JSON object: per graph the median ms, GOP per call and the fraction of the
int8 peak it reaches (peak from `albert_tf.benchmark.cpu`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import numpy as np  # noqa: E402

SEQ, HIDDEN, HEADS, FFN, LAYERS, EMBED = 128, 768, 12, 3072, 12, 128


def fc_graph(with_attention: bool):
    """A tf_keras model [1, SEQ, EMBED] -> [1, HIDDEN] made of ALBERT-base's dense layers
    (and, with ``with_attention``, its attention core), without LayerNorm, GELU or adds."""
    from albert_tf.backend import keras, tf
    layers = keras.layers
    x_in = keras.Input((SEQ, EMBED), batch_size=1)
    x = layers.Dense(HIDDEN)(x_in)
    head = HIDDEN // HEADS

    def split(t):
        t = layers.Reshape((SEQ, HEADS, head))(t)
        return layers.Permute((2, 1, 3))(t)                     # [1, heads, seq, head]

    for _ in range(LAYERS):
        q = layers.Dense(HIDDEN)(x)
        k = layers.Dense(HIDDEN)(q)
        v = layers.Dense(HIDDEN)(k)
        if with_attention:
            scores = layers.Lambda(lambda a: tf.matmul(a[0], a[1], transpose_b=True))(
                [split(q), split(k)])                           # [1, heads, seq, seq]
            probs = layers.Softmax()(scores)
            context = layers.Lambda(lambda a: tf.matmul(a[0], a[1]))([probs, split(v)])
            v = layers.Reshape((SEQ, HIDDEN))(layers.Permute((2, 1, 3))(context))
        x = layers.Dense(HIDDEN)(v)
        x = layers.Dense(FFN)(x)
        x = layers.Dense(HIDDEN)(x)
    pooled = layers.Dense(HIDDEN)(layers.Lambda(lambda t: t[:, 0])(x))
    return keras.Model(x_in, pooled)


def convert_dynamic(model, input_shape, dtype) -> bytes:
    from albert_tf.backend import tf
    fn = tf.function(lambda x: model(x)).get_concrete_function(
        tf.TensorSpec(input_shape, dtype))
    converter = tf.lite.TFLiteConverter.from_concrete_functions([fn], model)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    return converter.convert()


def real_model(tmp: str) -> str:
    """The albert_base dynamic-int8 export at [1, SEQ] (random weights)."""
    import albert_tf
    from albert_tf import resources
    from albert_tf.checkpoints import TaskInfo
    from albert_tf.export.tflite import export_tflite
    config = albert_tf.load_config("albert_base").replace(vocab_size=8000)
    model_dir = os.path.join(tmp, "albert_base")
    vocab = resources.resolve(resources.DEFAULT_VOCAB)
    albert_tf.save_model_dir(albert_tf.build_classifier(config, 2), model_dir,
                             task_info=TaskInfo("random-head", "classification", ("0", "1"),
                                                SEQ), vocab_file=vocab)
    out = os.path.join(tmp, "export")
    export_tflite(model_dir, out, seq_lengths=[SEQ], batch_size=1, quantization="dynamic")
    return os.path.join(out, "model.tflite")


def time_model(path: str, runs: int, threads: int) -> float:
    """Median ms of ``runs`` invocations after 3 warm-up calls (random inputs)."""
    from ai_edge_litert.interpreter import Interpreter
    interpreter = Interpreter(model_path=path, num_threads=threads)
    interpreter.allocate_tensors()
    rng = np.random.default_rng(0)
    for detail in interpreter.get_input_details():
        if detail["dtype"] == np.int32:
            if "mask" in detail["name"]:
                value = np.ones(detail["shape"], np.int32)
            elif "type" in detail["name"]:
                value = np.zeros(detail["shape"], np.int32)
            else:
                value = rng.integers(5, 1000, detail["shape"]).astype(np.int32)
        else:
            value = rng.standard_normal(detail["shape"]).astype(np.float32)
        interpreter.set_tensor(detail["index"], value)
    from albert_tf.benchmark.timing import median_ms
    return median_ms(interpreter.invoke, runs)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    from albert_tf.backend import tf
    from albert_tf.benchmark import cpu
    tmp = tempfile.mkdtemp(prefix="albert_time_budget_")
    files = {}
    for name, attention in (("fc_only", False), ("fc_attention", True)):
        files[name] = os.path.join(tmp, f"{name}.tflite")
        with open(files[name], "wb") as f:
            f.write(convert_dynamic(fc_graph(attention), (1, SEQ, EMBED), tf.float32))
    files["model"] = real_model(tmp)
    gop = {"fc_only": 2 * SEQ * (EMBED * HIDDEN + LAYERS * (4 * HIDDEN ** 2 + 2 * HIDDEN * FFN))
           / 1e9 + 2 * HIDDEN ** 2 / 1e9}
    gop["fc_attention"] = gop["fc_only"] + LAYERS * 2 * 2 * SEQ * SEQ * HIDDEN / 1e9
    gop["model"] = gop["fc_attention"]
    times = {name: [] for name in files}
    for _ in range(args.rounds):
        for name, path in files.items():
            times[name].append(time_model(path, args.runs, args.threads))
    machine = cpu.cpu_info()
    peak = machine.peak_int8_gops(args.threads)
    out = {"cpu": machine.describe(), "peak_int8_gops": round(peak, 1),
           "threads": args.threads, "runs": args.runs,
           "rounds": args.rounds}
    for name in files:
        ms = statistics.median(times[name])
        out[name] = {"median_ms": round(ms, 2), "rounds_ms": [round(t, 2) for t in times[name]],
                     "gop": round(gop[name], 2),
                     "fraction_of_int8_peak": round(gop[name] / (ms / 1e3) / peak, 3)}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    from albert_tf.cli import script_main
    script_main(main)
