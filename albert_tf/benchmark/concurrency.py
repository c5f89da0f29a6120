"""Concurrency of the served model: answers under N threads equal single-threaded ones, and
memory stays flat.

    nice -n 10 python -m albert_tf.benchmark.concurrency        # tiny model, 8 x 60 s
    python -m albert_tf.benchmark.concurrency --saved_model=serving/sst2/1 \\
        --tflite=edge/sst2_int8 --threads=8 --seconds=60 [--json=out.json]

(``make figures NAME=concurrency`` and ``python studies/concurrency/run.py`` run the same
`main`.) With neither ``--saved_model`` nor ``--tflite`` it builds a random-weight classifier
of ``--config`` (SST-2 labels, the shipped 8k vocabulary `resources.DEFAULT_VOCAB`) and
exports it with the package's own exporters (`albert_tf.export.saved_model.export_saved_model`,
`albert_tf.export.tflite.export_tflite`) into ``--workdir`` (`build_exports`).

Inputs are SST-2 dev sentences (real data; ``--data_dir`` or ``$ALBERT_TF_DATA_DIR``) cut into
``--num_batches`` fixed batches of 1..``--max_batch`` random sentences. Every batch is first run
single-threaded: that is the reference. Then ``--threads`` threads call the model for
``--seconds`` seconds, each picking random batches, and every answer is compared with the
reference answer of *the same batch*:

* integer and string outputs (``label_id``, ``label``) must be equal;
* float outputs (``probabilities``) must be within ``--atol`` (default 1e-6) of the reference.

Why per batch and not per sentence: TF's CPU kernels may round differently when a sentence
shares a batch with other sentences of other lengths (the padded shape changes the matmul
blocking), so a sentence's probabilities can move by float32 rounding (~1e-7) with batch
composition while nothing is wrong; the same batch must give the same numbers no matter what
other threads do. A thread-safety bug (state shared between calls) shows as answers of the
wrong sentence or garbage, orders of magnitude above 1e-6; the tolerance only absorbs
rounding, and the largest difference seen is printed (it is 0 when runs are bitwise equal).
The script also prints the per-sentence drift between batch sizes (information only).

TFLite: ONE `albert_tf.runtime.tflite.TFLiteRunner` object (what
`albert_tflite.runner` re-exports) is shared by all threads (it keeps one
LiteRT interpreter per thread, see its docstring). The resident set size of the process is
sampled every ``--sample_every`` seconds: reported are RSS before the threads start, after a
warm-up (``--warmup`` seconds, when every thread has its interpreter / TF has its caches),
peak, end, growth, and the least-squares slope after warm-up (MB per minute).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import threading
import time
from typing import Callable, Sequence

import numpy as np

Answer = dict  # output name -> np.ndarray with the batch as first axis


# ------------------------------------------------------------------------------ memory

def rss_bytes() -> int:
    """Resident set size of this process (psutil, else /proc/self/status VmRSS)."""
    try:
        import psutil
        return psutil.Process().memory_info().rss
    except ImportError:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    return 0


class RssMonitor:
    """Samples RSS every ``interval`` seconds in a daemon thread: ``samples`` = [(t, bytes)]."""

    def __init__(self, interval: float = 2.0):
        self.interval = interval
        self.samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="rss-monitor")
        self.t0 = time.monotonic()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def sample(self) -> int:
        value = rss_bytes()
        self.samples.append((time.monotonic() - self.t0, value))
        return value

    def start(self) -> "RssMonitor":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()


# ------------------------------------------------------------------------------ data

def fixed_batches(sentences: Sequence[str], num_batches: int, max_batch: int,
                  seed: int = 0) -> list[list[str]]:
    """``num_batches`` batches of 1..``max_batch`` random sentences (seeded)."""
    rng = random.Random(seed)
    return [rng.sample(list(sentences), rng.randint(1, max_batch)) for _ in range(num_batches)]


# ------------------------------------------------------------------------------ callers

def saved_model_caller(path: str) -> Callable[[list[str]], Answer]:
    """``serving_default`` of a SavedModel on raw text: batch of str -> outputs (numpy)."""
    import tensorflow_text  # noqa: F401  (registers the tokenizer ops)
    from albert_tf.backend import tf
    loaded = tf.saved_model.load(path)
    fn = loaded.signatures["serving_default"]
    names = sorted(fn.structured_input_signature[1])
    if len(names) != 1:
        raise SystemExit(f"{path}: serving_default takes {names}; this benchmark feeds one "
                         "text per example (single-sentence models)")

    def call(batch: list[str]) -> Answer:
        out = fn(**{names[0]: tf.constant(batch)})
        return {k: v.numpy() for k, v in out.items()}

    call.loaded = loaded  # keep the module alive as long as the caller
    return call


def tflite_caller(runner) -> Callable[[list[str]], Answer]:
    """`TFLiteRunner.predict` (classification / regression) as batch -> outputs (numpy)."""

    def call(batch: list[str]) -> Answer:
        results = runner.predict(batch)
        return {k: np.array([r[k] for r in results]) for k in results[0]}

    return call


# ------------------------------------------------------------------------------ checking

def compare(answer: Answer, reference: Answer, atol: float) -> tuple[bool, float]:
    """(equal within tolerance, largest float difference)."""
    if sorted(answer) != sorted(reference):
        return False, float("inf")
    worst = 0.0
    ok = True
    for key, ref in reference.items():
        got = answer[key]
        if got.shape != ref.shape:
            return False, float("inf")
        if np.issubdtype(ref.dtype, np.floating):
            diff = float(np.max(np.abs(got.astype(np.float64) - ref))) if ref.size else 0.0
            worst = max(worst, diff)
            ok = ok and diff <= atol
        else:
            ok = ok and bool(np.array_equal(got, ref))
    return ok, worst


def references(call: Callable[[list[str]], Answer], batches: list[list[str]]) -> list[Answer]:
    """The single-threaded answer of every batch: what the threads' answers must equal."""
    return [call(b) for b in batches]


def batch_drift(call: Callable[[list[str]], Answer], batches: list[list[str]],
                refs: list[Answer], limit: int = 64) -> float:
    """Largest float difference of a sentence alone (batch of 1) vs inside its batch."""
    worst = 0.0
    for batch, ref in list(zip(batches, refs))[:limit]:
        for i, text in enumerate(batch):
            alone = call([text])
            for key, value in ref.items():
                if np.issubdtype(value.dtype, np.floating):
                    worst = max(worst, float(np.max(np.abs(alone[key][0] - value[i]))))
    return worst


def stress(call: Callable[[list[str]], Answer], batches: list[list[str]], refs: list[Answer],
           threads: int, seconds: float, atol: float = 1e-6, warmup: float | None = None,
           sample_every: float = 2.0, seed: int = 0) -> dict:
    """``threads`` threads call ``call`` on random fixed batches for ``seconds``; every
    answer is compared with ``refs``. Returns calls, mismatches, errors, RSS figures."""
    warmup = min(10.0, max(1.0, 0.15 * seconds)) if warmup is None else warmup
    barrier = threading.Barrier(threads + 1)
    lock = threading.Lock()
    totals = {"calls": 0, "sentences": 0, "mismatches": 0, "errors": 0, "max_abs_diff": 0.0}
    examples: list[str] = []
    per_thread = [0] * threads
    deadline = [0.0]

    def worker(index: int) -> None:
        rng = random.Random(seed * 1000 + index)
        calls = sentences = mismatches = errors = 0
        worst = 0.0
        barrier.wait()
        while time.monotonic() < deadline[0]:
            b = rng.randrange(len(batches))
            try:
                ok, diff = compare(call(batches[b]), refs[b], atol)
            except Exception as e:  # noqa: BLE001  (an error under load is a finding)
                errors += 1
                ok, diff = False, 0.0
                if len(examples) < 5:
                    examples.append(f"thread {index} batch {b}: {type(e).__name__}: {e}")
            calls += 1
            sentences += len(batches[b])
            worst = max(worst, diff)
            if not ok:
                mismatches += 1
                if len(examples) < 5:
                    examples.append(f"thread {index} batch {b}: differs (max diff {diff:.3g})")
        per_thread[index] = calls
        with lock:
            totals["calls"] += calls
            totals["sentences"] += sentences
            totals["mismatches"] += mismatches
            totals["errors"] += errors
            totals["max_abs_diff"] = max(totals["max_abs_diff"], worst)

    workers = [threading.Thread(target=worker, args=(i,), name=f"caller-{i}")
               for i in range(threads)]
    for w in workers:
        w.start()
    monitor = RssMonitor(sample_every)
    rss_start = monitor.sample()
    monitor.start()
    start = time.monotonic()
    deadline[0] = start + seconds
    barrier.wait()
    for w in workers:
        w.join()
    wall = time.monotonic() - start
    monitor.stop()
    t0 = start - monitor.t0
    after_warmup = [(t - t0, r) for t, r in monitor.samples if t - t0 >= warmup]
    rss_warm = after_warmup[0][1] if after_warmup else monitor.samples[-1][1]
    rss_end = monitor.samples[-1][1]
    slope = 0.0
    if len(after_warmup) >= 3:
        ts = np.array([t for t, _ in after_warmup])
        rs = np.array([r for _, r in after_warmup], dtype=np.float64)
        if np.ptp(ts) > 0:
            slope = float(np.polyfit(ts, rs, 1)[0]) * 60 / 2**20
    mb = 2**20
    return {
        "threads": threads, "seconds": round(wall, 1), "calls": totals["calls"],
        "sentences": totals["sentences"], "mismatches": totals["mismatches"],
        "errors": totals["errors"], "max_abs_diff": totals["max_abs_diff"], "atol": atol,
        "calls_per_s": round(totals["calls"] / wall, 1),
        "sentences_per_s": round(totals["sentences"] / wall, 1),
        "calls_per_thread": per_thread, "examples": examples,
        "rss_start_mb": round(rss_start / mb, 1), "rss_after_warmup_mb": round(rss_warm / mb, 1),
        "rss_peak_mb": round(max(r for _, r in monitor.samples) / mb, 1),
        "rss_end_mb": round(rss_end / mb, 1),
        "rss_growth_mb": round((rss_end - rss_start) / mb, 1),
        "rss_growth_after_warmup_mb": round((rss_end - rss_warm) / mb, 1),
        "rss_slope_mb_per_min": round(slope, 2), "warmup_s": warmup,
        "rss_samples_mb": [(round(t - t0, 1), round(r / mb, 1)) for t, r in monitor.samples],
    }


def single_thread_rate(call: Callable[[list[str]], Answer], batches: list[list[str]],
                       seconds: float) -> float:
    """Calls per second of one thread on the same random batches (for comparison)."""
    from albert_tf.benchmark.timing import time_call
    rng = random.Random(1)
    latencies = time_call(lambda: call(batches[rng.randrange(len(batches))]), 1, seconds, 0)
    return len(latencies) / (sum(latencies) / 1e3)


# ------------------------------------------------------------------------------ building

def build_exports(workdir: str, config: str = "albert_tiny", seq_length: int = 128,
                  tflite_batch: int = 1, quantization: str = "none",
                  saved_model: bool = True, tflite: bool = True,
                  seq_lengths: Sequence[int] | None = None) -> dict[str, str]:
    """A random-weight SST-2 classifier of ``config``, exported; returns the paths."""
    import albert_tf
    from albert_tf import resources
    from albert_tf.checkpoints import TaskInfo
    from albert_tf.export.common import load_source
    model_dir = os.path.join(workdir, "sst2_model")
    cfg = albert_tf.load_config(config).replace(vocab_size=8000)
    model = albert_tf.build_classifier(cfg, 2)
    task_info = TaskInfo("sst2", "classification", ("negative", "positive"), seq_length)
    albert_tf.save_model_dir(model, model_dir, task_info=task_info,
                             vocab_file=resources.resolve(resources.DEFAULT_VOCAB))
    source = load_source(model_dir)
    paths = {"model_dir": model_dir}
    if saved_model:
        from albert_tf.export.saved_model import export_saved_model
        paths["saved_model"] = export_saved_model(model_dir, os.path.join(workdir, "serving"),
                                                  source=source)
    if tflite:
        from albert_tf.export.tflite import export_tflite
        lengths = sorted(seq_lengths or {min(s, seq_length) for s in (32, 64, seq_length)})
        paths["tflite"] = export_tflite(model_dir, os.path.join(workdir, "edge"),
                                        quantization=quantization, seq_lengths=lengths,
                                        batch_size=tflite_batch, source=source)
    return paths


# ------------------------------------------------------------------------------ main

def report(name: str, result: dict) -> None:
    """Prints one `stress` result (with `measure`'s additions) as the figure's lines."""
    print(f"\n{name}: {result['threads']} threads x {result['seconds']} s", flush=True)
    print(f"  calls made        {result['calls']} ({result['sentences']} sentences); "
          f"{result['calls_per_s']} calls/s, {result['sentences_per_s']} sentences/s "
          f"(per thread: {result['calls_per_thread']})")
    print(f"  mismatches        {result['mismatches']} (errors {result['errors']}); "
          f"largest float difference {result['max_abs_diff']:.3g} (tolerance {result['atol']})")
    print(f"  RSS start         {result['rss_start_mb']} MB, after {result['warmup_s']:.0f} s "
          f"warm-up {result['rss_after_warmup_mb']} MB, peak {result['rss_peak_mb']} MB, end "
          f"{result['rss_end_mb']} MB")
    print(f"  RSS growth        {result['rss_growth_mb']:+} MB from start, "
          f"{result['rss_growth_after_warmup_mb']:+} MB after warm-up, slope "
          f"{result['rss_slope_mb_per_min']:+} MB/min after warm-up")
    for line in result["examples"]:
        print("  !", line)
    print("  RSS samples (s, MB): " + " ".join(f"{t}:{r}" for t, r in
                                                result["rss_samples_mb"]), flush=True)


def measure(title: str, call, batches, args, describe) -> dict:
    """Single-threaded references, batch drift and one-thread rate of ``call``, then the
    threaded stress run; prints ``describe(rate1, drift)`` and the report; the result."""
    refs = references(call, batches)
    drift = batch_drift(call, batches, refs)
    rate1 = single_thread_rate(call, batches, min(10.0, args.seconds / 6))
    print("\n" + describe(rate1, drift), flush=True)
    result = stress(call, batches, refs, args.threads, args.seconds, args.atol,
                    args.warmup, args.sample_every, args.seed)
    result.update(single_thread_calls_per_s=round(rate1, 1), batch_drift=drift)
    report(title, result)
    return result


def main(argv: Sequence[str] | None = None) -> int:
    """The figure: parses ``argv``, builds or loads the exports, stresses each; exit status
    1 when any answer under threads differed from its reference."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--saved_model", help="SavedModel version directory (serving/x/1)")
    parser.add_argument("--tflite", help="TFLite export directory (or .tflite inside one)")
    parser.add_argument("--threads", type=int, default=8, help="concurrent caller threads")
    parser.add_argument("--seconds", type=float, default=60.0, help="duration per runtime")
    parser.add_argument("--data_dir", help="data root (default $ALBERT_TF_DATA_DIR)")
    parser.add_argument("--num_batches", type=int, default=64)
    parser.add_argument("--max_batch", type=int, default=8)
    parser.add_argument("--atol", type=float, default=1e-6,
                        help="tolerance on float outputs (labels must be equal)")
    parser.add_argument("--warmup", type=float, default=None,
                        help="seconds before the 'after warm-up' RSS (default 15%%, <= 10 s)")
    parser.add_argument("--sample_every", type=float, default=2.0, help="RSS sampling, s")
    parser.add_argument("--interpreter_threads", type=int, default=1,
                        help="CPU threads of each LiteRT interpreter")
    parser.add_argument("--config", default="albert_tiny",
                        help="model config when building a model (no --saved_model/--tflite)")
    parser.add_argument("--seq_length", type=int, default=128)
    parser.add_argument("--tflite_batch", type=int, default=1,
                        help="static batch of the built TFLite export")
    parser.add_argument("--quantization", default="none", help="of the built TFLite export")
    parser.add_argument("--workdir", help="where a built model goes (default: a temp dir)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args(list(argv) if argv is not None else None)
    from albert_tf import resources
    try:
        args.data_dir = resources.data_dir(args.data_dir)
    except resources.DataDirError as error:     # one line, before anything runs
        parser.error(str(error))
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    from albert_tf.benchmark.cpu import cpu_info
    cpu = cpu_info(measure_clock=False).summary()

    print("CPU:", cpu, flush=True)
    from albert_tf.data.task_data import split_texts
    sentences = split_texts("sst2", "dev", args.data_dir)[0]
    batches = fixed_batches(sentences, args.num_batches, args.max_batch, args.seed)
    print(f"data: {len(sentences)} SST-2 dev sentences -> {len(batches)} fixed batches of "
          f"1..{args.max_batch}", flush=True)
    tmp = None
    paths = {"saved_model": args.saved_model, "tflite": args.tflite}
    if not args.saved_model and not args.tflite:
        workdir = args.workdir or (tmp := tempfile.TemporaryDirectory()).name
        start = time.time()
        paths = build_exports(workdir, args.config, args.seq_length, args.tflite_batch,
                              args.quantization)
        print(f"built random-weight {args.config} SST-2 classifier and exported it "
              f"({time.time() - start:.0f} s): {paths['saved_model']}, {paths['tflite']}",
              flush=True)
    results = {"cpu": cpu, "threads": args.threads, "seconds": args.seconds,
               "paths": paths, "config": args.config if tmp or args.workdir else None}
    try:
        if paths.get("saved_model"):
            call = saved_model_caller(paths["saved_model"])
            results["saved_model"] = measure(
                "Concurrency SavedModel serving_default", call, batches, args,
                lambda rate1, drift: (
                    f"SavedModel {paths['saved_model']}: single-threaded reference of "
                    f"{len(batches)} batches; 1 thread {rate1:.1f} calls/s; a sentence alone "
                    f"vs in its batch differs by up to {drift:.3g} (information)"))
            del call
        if paths.get("tflite"):
            from albert_tf.runtime.tflite import TFLiteRunner
            runner = TFLiteRunner(paths["tflite"], num_threads=args.interpreter_threads)
            results["tflite"] = measure(
                "Concurrency TFLite runner", tflite_caller(runner), batches, args,
                lambda rate1, drift: (
                    f"TFLite {paths['tflite']}: ONE TFLiteRunner shared by all threads (an "
                    f"interpreter per thread, {args.interpreter_threads} CPU thread(s) each); "
                    f"1 thread {rate1:.1f} calls/s; sentence alone vs in batch: up to "
                    f"{drift:.3g}"))
    finally:
        if tmp is not None:
            tmp.cleanup()
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=2)
    failed = any(results.get(k, {}).get("mismatches", 0) for k in ("saved_model", "tflite"))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
