"""Latency and throughput of a TFLite export per signature (sequence-length bucket).

    from albert_tf.benchmark.tflite_export import benchmark
    benchmark("edge/sst2_int8", num_threads=2)   # [{'signature': 'seq_128', 'median_ms': ...}]

    python -m albert_tf.benchmark.tflite_export --model=edge/sst2_int8 --threads=2 \
        [--runs=50] [--min_seconds=2] [--json=out.json]

Each signature gets full-length inputs (every position a real token: the worst case of
its bucket; attention cost does not depend on the mask), ``--warmup`` untimed runs, then
timed invocations until there are at least ``--runs`` of them and they took at least
``--min_seconds`` (sub-millisecond models need thousands of runs for a stable median).
Reports median / p90 / min latency in ms and throughput in sequences per second (batch
size / median latency). Models with the tokenizer inside are
fed a sentence of about the bucket's length. ``--json`` writes a list with one row per
model and signature, which the pipeline (`albert_tf.pipeline.driver`) reads.

The interpreter is `albert_tf.export.tflite_runner.make_interpreter`'s, the same the
runner uses. ONNX Runtime and OpenVINO, and the peers, are timed by ``albert-tf-benchmark``
(`albert_tf.benchmark.suite`). The ``albert-tflite-benchmark`` CLI
(``albert_tflite.benchmark``) is this module's `main`.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any, Iterable

import numpy as np

from albert_tf import cli, outputs
from albert_tf.export.metadata import read_metadata
from albert_tf.export.tflite_runner import (invoke_errors, make_interpreter, model_file,
                                            uses_xnnpack)

SAMPLE_WORDS = ("the film is a quietly moving portrait of a family , and its actors make "
                "every scene feel honest and alive").split()


def _inputs(sig: dict[str, Any], vocab_size: int, rng: np.random.RandomState) -> dict:
    feed = {}
    for name, spec in sig["inputs"].items():
        shape = spec["shape"]
        if spec["dtype"] == "string":
            words = (SAMPLE_WORDS * 64)[: max(1, int(sig.get("seq_length_hint", 100)))]
            feed[name] = np.array([" ".join(words).encode()] * shape[0], dtype=object)
        elif name == "input_word_ids":
            feed[name] = rng.randint(5, vocab_size, size=shape).astype(np.int32)
        elif name == "input_mask":
            feed[name] = np.ones(shape, np.int32)
        else:
            feed[name] = np.zeros(shape, np.int32)
    return feed


def benchmark(model: str, num_threads: int = 2, runs: int = 50, warmup: int = 5,
              xnnpack: bool | None = None, signatures: Iterable[str] | None = None,
              min_seconds: float = 0.0) -> list[dict]:
    """One result dict per signature: ``signature, batch_size, seq_length, median_ms, ...``.
    ``xnnpack`` None: XNNPACK unless the export's weights are stored sparse (`uses_xnnpack`)."""
    meta = read_metadata(model)
    xnnpack = uses_xnnpack(meta) if xnnpack is None else xnnpack
    unknown = sorted(set(signatures or ()) - set(meta["signatures"]))
    if unknown:
        raise ValueError(f"--signature: {model} has no signature {', '.join(unknown)}; it has "
                         f"{', '.join(meta['signatures'])}.")
    path = model_file(model)
    interpreter = make_interpreter(path, num_threads, xnnpack,
                                   meta.get("custom_op_registerers", ()))
    from albert_tf.text.vocabulary import load_tokenizer
    vocab = os.path.join(os.path.dirname(os.path.abspath(path)), meta["tokenizer"]["vocab_file"])
    vocab_size = load_tokenizer(vocab).vocab_size         # SentencePiece or WordPiece
    rng = np.random.RandomState(0)
    results = []
    for key, sig in meta["signatures"].items():
        if signatures and key not in signatures:
            continue
        if key == "tokenize":
            continue
        sig = dict(sig, seq_length_hint=meta.get("max_seq_length", 128) - 10)
        runner = interpreter.get_signature_runner(key)
        feed = _inputs(sig, vocab_size, rng)
        with invoke_errors(path, meta):     # a kernel LiteRT lacks: one line, not a traceback
            for _ in range(warmup):
                runner(**feed)
            times = []
            while len(times) < runs or sum(times) < 1e3 * min_seconds:
                start = time.perf_counter()
                runner(**feed)
                times.append((time.perf_counter() - start) * 1e3)
        batch = int(sig.get("batch_size", 1))
        median = float(np.median(times))
        results.append({
            "model": model, "quantization": meta.get("quantization"), "signature": key,
            "batch_size": batch, "seq_length": sig.get("seq_length", meta.get("max_seq_length")),
            "threads": num_threads, "xnnpack": xnnpack, "runs": len(times),
            "median_ms": median, "p90_ms": float(np.percentile(times, 90)),
            "min_ms": float(np.min(times)), "total_ms": float(np.sum(times)),
            "sequences_per_s": batch * 1e3 / median})
    return results


@cli.guarded
def main(argv: Iterable[str] | None = None, doc: str | None = None) -> int:
    """The CLI (``doc``: the ``--help`` text, `albert_tflite.benchmark`'s docstring)."""
    from albert_tf import user_inputs
    argv = list(argv) if argv is not None else None
    cli.quiet_startup(argv)   # TensorFlow's start-up logs only with --verbose
    parser = user_inputs.ArgumentParser(description="Latency/throughput of TFLite models.",
                                        doc=doc)
    parser.add_argument("--model", required=True, action="append",
                        help="export directory or .tflite (repeatable)")
    parser.add_argument("--threads", type=int, default=2, help="interpreter threads")
    parser.add_argument("--runs", type=int, default=50, help="minimum timed runs per signature")
    parser.add_argument("--warmup", type=int, default=5, help="untimed runs first")
    parser.add_argument("--min_seconds", type=float, default=0.0,
                        help="keep timing until the timed runs took this long")
    parser.add_argument("--signature", action="append", help="only these signatures")
    parser.add_argument("--no_xnnpack", action="store_true", help="builtin kernels only")
    parser.add_argument("--json", default=None, help="write the results here (a new file, or "
                        "--overwrite)")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --json")
    cli.add_verbose_argument(parser)
    args = parser.parse_args(argv)
    cli.quiet_logs([] if not args.verbose else ["--verbose"])
    try:
        for flag, minimum in (("threads", 1), ("runs", 1), ("warmup", 0), ("min_seconds", 0)):
            user_inputs.at_least(getattr(args, flag), f"--{flag}", minimum)
        for model in args.model:
            user_inputs.edge_export(model, formats=("tflite",), other_formats=(
                "time ONNX Runtime and OpenVINO on the same model with albert-tf-benchmark "
                "--model_dirs=<its model directory> --runtimes=ort_none,ort_int8,ir_none,ir_int8"))
        if args.json:
            outputs.check_output_file(args.json, overwrite=args.overwrite, flag="--json",
                                      inputs=[("--model", m) for m in args.model])
    except ValueError as e:
        parser.error(str(e))
    rows = []
    print(f"{'model':40s} {'quant':8s} {'signature':16s} {'batch':>5s} {'seq':>5s} "
          f"{'median ms':>10s} {'p90 ms':>8s} {'min ms':>8s} {'seq/s':>8s}")
    for model in args.model:
        try:
            results = benchmark(model, args.threads, args.runs, args.warmup,
                                False if args.no_xnnpack else None, args.signature,
                                args.min_seconds)
        except (ValueError, OSError) as e:   # an unknown --signature, a broken file
            parser.exit(2, f"{parser.prog}: error: {user_inputs.one_line(e)}\n")
        for r in results:
            rows.append(r)
            print(f"{model[-40:]:40s} {str(r['quantization']):8s} {r['signature']:16s} "
                  f"{r['batch_size']:5d} {r['seq_length']:5d} {r['median_ms']:10.2f} "
                  f"{r['p90_ms']:8.2f} {r['min_ms']:8.2f} {r['sequences_per_s']:8.1f}",
                  flush=True)
    if args.json:
        outputs.write_text(args.json, json.dumps(rows, indent=2))
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
