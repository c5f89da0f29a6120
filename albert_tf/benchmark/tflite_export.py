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

The interpreter is `albert_tf.runtime.tflite.make_interpreter`'s, the same the
runner uses. ONNX Runtime and OpenVINO, and the peers, are timed by ``albert-tf-benchmark``
(`albert_tf.benchmark.suite`). The ``albert-tflite-benchmark`` CLI
(``albert_tflite.benchmark``) is this module's `main`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from albert_tf import cli, outputs
from albert_tf.benchmark.timing import time_call
from albert_tf.export.metadata import read_metadata
from albert_tf.runtime.tflite import (invoke_errors, make_interpreter, model_file,
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


@dataclasses.dataclass
class Timed:
    """One signature of one model, ready to time: ``call()`` runs it once on ``feed``."""

    row: dict[str, Any]     # model, quantization, signature, batch_size, seq_length, ...
    call: Callable[[], Any]
    errors: Callable[[], Any]   # a context manager: LiteRT's kernel errors as one line


def prepare(model: str, num_threads: int = 2, xnnpack: bool | None = None,
            signatures: Iterable[str] | None = None) -> list[Timed]:
    """Every signature of ``model`` (or those named) loaded and fed, ready to time.
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
    timed = []
    for key, sig in meta["signatures"].items():
        if (signatures and key not in signatures) or key == "tokenize":
            continue
        sig = dict(sig, seq_length_hint=meta.get("max_seq_length", 128) - 10)
        runner = interpreter.get_signature_runner(key)
        feed = _inputs(sig, vocab_size, rng)
        row = {"model": model, "quantization": meta.get("quantization"), "signature": key,
               "batch_size": int(sig.get("batch_size", 1)),
               "seq_length": sig.get("seq_length", meta.get("max_seq_length")),
               "threads": num_threads, "xnnpack": xnnpack}
        timed.append(Timed(row, lambda runner=runner, feed=feed: runner(**feed),
                           lambda: invoke_errors(path, meta)))
    return timed


def _result(row: dict, times: list[float]) -> dict:
    median = float(np.median(times))
    return dict(row, runs=len(times), median_ms=median, p90_ms=float(np.percentile(times, 90)),
                min_ms=float(np.min(times)), total_ms=float(np.sum(times)),
                sequences_per_s=row["batch_size"] * 1e3 / median)


def benchmark(model: str, num_threads: int = 2, runs: int = 50, warmup: int = 5,
              xnnpack: bool | None = None, signatures: Iterable[str] | None = None,
              min_seconds: float = 0.0) -> list[dict]:
    """One result dict per signature: ``signature, batch_size, seq_length, median_ms, ...``,
    each signature timed in one go (`benchmark_rounds` interleaves several models)."""
    results = []
    for entry in prepare(model, num_threads, xnnpack, signatures):
        with entry.errors():     # a kernel LiteRT lacks: one line, not a traceback
            for _ in range(warmup):
                entry.call()
            results.append(_result(entry.row, time_call(entry.call, runs, min_seconds, 0)))
    return results


def benchmark_rounds(models: Sequence[str], num_threads: int = 2, runs: int = 50,
                     warmup: int = 5, xnnpack: bool | None = None,
                     signatures: Iterable[str] | None = None, min_seconds: float = 0.0,
                     rounds: int = 5) -> list[dict]:
    """Every signature of every model timed in ``rounds`` interleaved rounds (each round
    runs each of them in turn, the order rotating, for ``runs / rounds`` runs and
    ``min_seconds / rounds`` seconds), so that the drift of a shared machine falls on all
    alike. Each row: the median over rounds of the round medians (``median_ms``), their
    spread (``low_ms``, ``high_ms``), and, per signature, ``speedup`` over the first
    model's (the median of the per-round ratios, with ``speedup_low`` / ``speedup_high``)."""
    entries = [e for model in models for e in prepare(model, num_threads, xnnpack, signatures)]
    per_round: list[list[float]] = [[] for _ in entries]
    times: list[list[float]] = [[] for _ in entries]
    for r in range(rounds):
        order = list(range(len(entries)))
        order = order[r % len(order):] + order[:r % len(order)]
        for i in order:
            with entries[i].errors():
                for _ in range(warmup if r == 0 else 1):
                    entries[i].call()
                t = time_call(entries[i].call, max(1, -(-runs // rounds)), min_seconds / rounds, 0)
            times[i] += t
            per_round[i].append(float(np.median(t)))
    results = []
    for i, entry in enumerate(entries):
        row = _result(entry.row, times[i])
        row.update(median_ms=float(np.median(per_round[i])), low_ms=min(per_round[i]),
                   high_ms=max(per_round[i]), rounds=rounds,
                   sequences_per_s=row["batch_size"] * 1e3 / float(np.median(per_round[i])))
        first = next(k for k, e in enumerate(entries)
                     if e.row["signature"] == entry.row["signature"])
        ratios = [a / b for a, b in zip(per_round[first], per_round[i])]
        row.update(speedup=float(np.median(ratios)), speedup_low=min(ratios),
                   speedup_high=max(ratios))
        results.append(row)
    return results


def print_rows(rows: list[dict], rounds: bool) -> None:
    """The table (with ``rounds``: the spread of the round medians and the speedup over the
    first model)."""
    extra = f" {'low ms':>8s} {'high ms':>8s} {'speedup':>16s}" if rounds else \
        f" {'p90 ms':>8s} {'min ms':>8s}"
    print(f"{'model':40s} {'quant':8s} {'signature':16s} {'batch':>5s} {'seq':>5s} "
          f"{'median ms':>10s}{extra} {'seq/s':>8s}")
    for r in rows:
        extra = (f" {r['low_ms']:8.3f} {r['high_ms']:8.3f} "
                 f"{r['speedup']:5.2f}x ({r['speedup_low']:.2f}-{r['speedup_high']:.2f})"
                 if rounds else f" {r['p90_ms']:8.2f} {r['min_ms']:8.2f}")
        print(f"{r['model'][-40:]:40s} {str(r['quantization']):8s} {r['signature']:16s} "
              f"{r['batch_size']:5d} {r['seq_length']:5d} {r['median_ms']:10.3f}{extra} "
              f"{r['sequences_per_s']:8.1f}", flush=True)


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
    parser.add_argument("--rounds", type=int, default=1,
                        help="time every model and signature in this many interleaved rounds "
                        "(the order rotating; --runs and --min_seconds spread over them): "
                        "median and spread of the round medians, and the speedup over the "
                        "first --model; 1 times each in one go")
    parser.add_argument("--signature", action="append", help="only these signatures")
    parser.add_argument("--no_xnnpack", action="store_true", help="builtin kernels only")
    parser.add_argument("--json", default=None, help="write the results here (a new file, or "
                        "--overwrite)")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --json")
    cli.add_verbose_argument(parser)
    args = parser.parse_args(argv)
    cli.quiet_logs([] if not args.verbose else ["--verbose"])
    try:
        for flag, minimum in (("threads", 1), ("runs", 1), ("warmup", 0), ("min_seconds", 0),
                              ("rounds", 1)):
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
    xnnpack = False if args.no_xnnpack else None
    try:
        if args.rounds > 1:
            rows = benchmark_rounds(args.model, args.threads, args.runs, args.warmup, xnnpack,
                                    args.signature, args.min_seconds, args.rounds)
        else:
            rows = [r for model in args.model for r in benchmark(
                model, args.threads, args.runs, args.warmup, xnnpack, args.signature,
                args.min_seconds)]
    except (ValueError, OSError) as e:   # an unknown --signature, a broken file
        parser.exit(2, f"{parser.prog}: error: {user_inputs.one_line(e)}\n")
    print_rows(rows, args.rounds > 1)
    if args.json:
        outputs.write_text(args.json, json.dumps(rows, indent=2))
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
