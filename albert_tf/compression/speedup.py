"""A latency target for the structured stage, from latencies measured on this CPU.

``albert-tf-compress --target_speedup=2`` (or ``--latency_budget_ms=Y``, on
``--target=tflite_int8`` by default) chooses what the structured stage keeps:

1. The shapes it may choose from (`albert_tf.compression.speedup_space.candidates`: heads,
   FFN widths, layers) are ordered by FLOPs, most first.
2. A shape is *timed*, never predicted: a model of that shape (random weights: latency does
   not depend on them) is exported as the target is (`albert_tf.benchmark.artifacts`, the
   same converter and int8 calibration as ``albert-tf-export``) and timed against the
   full-size model's export in interleaved rounds (`albert_tf.benchmark.interleaved`): its
   speedup is the median of the per-round ratios.
3. The smallest-FLOPs shape is timed first: if it misses the target, the target is
   unreachable and nothing is written (one line naming the best reachable speedup).
   Otherwise a bisection over the ordered shapes finds the shape with the most FLOPs (the
   least removed) that reaches it, in about log2(shapes) timings.
4. Every timing is cached (`LatencyCache`) per CPU model, ISA, target, threads, input
   shape and runtime version, so a second run, or another target on the same model, times
   only what it has not seen.

After training, `measure_result` times the compressed model's export against the
``init_model``'s (both with their real weights): the measured speedup beside the
predicted one in ``report.json``.
"""

from __future__ import annotations

import csv
import dataclasses
import fcntl
import hashlib
import json
import os
import shutil
import tempfile
from importlib import metadata as importlib_metadata
from typing import Callable

from albert_tf import outputs
from albert_tf.compression.compression_config import CompressionConfigError, SpeedupConfig
from albert_tf.compression.speedup_space import Shape, candidates, full_shape
from albert_tf.config import AlbertConfig

CACHE_FILE = "latency-v1.json"
CALIBRATION_EXAMPLES = 64


class SpeedupError(CompressionConfigError):
    """The target cannot be reached (or measured); nothing has been written."""


@dataclasses.dataclass
class Timing:
    """One shape timed against the full model: latencies in ms, speedup = full / shape
    (median of the per-round ratios; ``low`` / ``high``: their spread)."""

    shape: Shape
    latency_ms: float
    baseline_ms: float
    speedup: float
    low: float
    high: float
    cached: bool = False

    def as_dict(self) -> dict:
        return {"shape": self.shape.label(), "latency_ms": round(self.latency_ms, 4),
                "baseline_ms": round(self.baseline_ms, 4), "speedup": round(self.speedup, 3),
                "spread": [round(self.low, 3), round(self.high, 3)], "cached": self.cached}

    def describe(self) -> str:
        return (f"{self.shape.label()}: {self.latency_ms:.3f} ms vs {self.baseline_ms:.3f} ms, "
                f"{self.speedup:.2f}x ({self.low:.2f}-{self.high:.2f})"
                + (" [cached]" if self.cached else ""))


# ------------------------------------------------------------------------------- cache
def cache_dir(cfg: SpeedupConfig) -> str:
    return cfg.cache_dir or os.environ.get("ALBERT_TF_CACHE_DIR") or \
        os.path.join(os.path.expanduser("~"), ".cache", "albert-tf")


def machine_key(cfg: SpeedupConfig) -> dict:
    """What a latency depends on besides the model: CPU model and ISA, target, threads,
    input shape, the runtime's version."""
    from albert_tf.benchmark import targets
    from albert_tf.benchmark.cpu import cpu_info
    from albert_tf.runtime.sessions import runtime_package
    info = cpu_info(measure_clock=False)
    worker = targets.get(cfg.target).worker
    package = (runtime_package(worker) or (worker,))[0]
    try:
        version = importlib_metadata.version(package)
    except importlib_metadata.PackageNotFoundError:
        version = "unknown"
    return {"cpu": info.model_name, "isa": info.peaks.isa, "target": cfg.target,
            "threads": cfg.threads, "batch": cfg.batch_size, "seq": cfg.seq_length,
            "runtime": f"{package} {version}"}


class LatencyCache:
    """Timings kept in ``<cache_dir>/latency-v1.json``, keyed by `machine_key`, the full
    model's shape and the candidate's. Unreadable or unwritable: timings are not kept
    (said once), never an error."""

    def __init__(self, directory: str, machine: dict, base: AlbertConfig, log=print):
        self.path = os.path.join(directory, CACHE_FILE)
        self.log = log
        self.prefix = json.dumps({"machine": machine, "model": base.to_dict()}, sort_keys=True)
        self.warned = False

    def key(self, shape: Shape) -> str:
        return hashlib.sha256(f"{self.prefix}|{shape.label()}".encode()).hexdigest()[:32]

    def _read(self) -> dict:
        try:
            with open(self.path, encoding="utf-8") as f:
                values = json.load(f)
            return values if isinstance(values, dict) else {}
        except (OSError, ValueError):
            return {}

    def get(self, shape: Shape) -> Timing | None:
        row = self._read().get(self.key(shape))
        try:
            return Timing(shape, row["latency_ms"], row["baseline_ms"], row["speedup"],
                          row["low"], row["high"], cached=True) if row else None
        except (KeyError, TypeError):
            return None

    def put(self, timing: Timing) -> None:
        """Adds ``timing`` to the file (read, added, renamed into place under a lock, so two
        searches at once both keep theirs)."""
        row = {"shape": timing.shape.label(), "latency_ms": timing.latency_ms,
               "baseline_ms": timing.baseline_ms, "speedup": timing.speedup,
               "low": timing.low, "high": timing.high}
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            with open(self.path + ".lock", "a", encoding="utf-8") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                values = self._read()
                values[self.key(timing.shape)] = row
                outputs.write_text(self.path, json.dumps(values, indent=1, sort_keys=True))
        except OSError as e:
            if not self.warned:
                self.log(f"speedup: latencies not cached ({self.path}: {e.strerror or e})")
                self.warned = True


# ------------------------------------------------------------------------ artifacts
def write_calibration_tsv(texts, path: str) -> str:
    """(text_a, text_b) pairs as the TSV ``albert-tf-export --calibration_file`` reads."""
    pairs = any(b is not None for _, b in texts)
    clean = lambda t: " ".join(str(t or "").split())   # noqa: E731  (no tabs, no newlines)
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f, delimiter="\t", quoting=csv.QUOTE_NONE, escapechar="\\")
        writer.writerow(["sentence1", "sentence2"] if pairs else ["sentence"])
        for a, b in texts:
            writer.writerow([clean(a), clean(b)] if pairs else [clean(a)])
    return path


class ShapeTimer:
    """Builds and times candidate shapes of ``base`` on ``cfg.target``, against the full
    model, in ``work_dir``; timings go through ``cache``."""

    def __init__(self, base: AlbertConfig, task_info, vocab_file: str, data_dir: str,
                 calibration_file: str, cfg: SpeedupConfig, work_dir: str, cache: LatencyCache,
                 log: Callable[[str], None] = print):
        self.base, self.task_info, self.vocab_file = base, task_info, vocab_file
        self.data_dir, self.calibration_file = data_dir, calibration_file
        self.cfg, self.work_dir, self.cache, self.log = cfg, work_dir, cache, log
        self.timed: list[Timing] = []

    def artifact(self, shape: Shape, model_dir: str | None = None,
                 name: str = "") -> tuple[str, str]:
        """``(worker runtime, path)`` of ``shape``'s export (``model_dir``: export that model
        directory, in ``work_dir/name``, instead of a random model of the shape)."""
        from albert_tf.benchmark.artifacts import ArtifactBuilder
        name = name or shape.label().replace("/", "_")
        if model_dir is None:
            model_dir = self._random_model_dir(shape, os.path.join(self.work_dir, name, "model"))
        builder = ArtifactBuilder(model_dir, os.path.join(self.work_dir, name, "artifact"),
                                  self.data_dir, echo=lambda _: None,
                                  calibration_file=self.calibration_file)
        try:
            runtime, path = builder.artifact(self.cfg.target,
                                             [(self.cfg.batch_size, self.cfg.seq_length)])
        except ModuleNotFoundError as e:   # an exporter of the target's extra
            from albert_tf.benchmark import targets
            extra = targets.get(self.cfg.target).extra
            raise SpeedupError(f"--target={self.cfg.target}: {e.name or e} is not installed; "
                               + (f"pip install 'albert-tf[{extra}]'" if extra else
                                  f"pip install {e.name}") + "; nothing was written.") from None
        return runtime, path.format(batch=self.cfg.batch_size, seq=self.cfg.seq_length)

    def _random_model_dir(self, shape: Shape, path: str) -> str:
        from albert_tf.backend import keras
        from albert_tf.checkpoints import build_task_model, save_model_dir
        if not os.path.exists(path):
            keras.utils.set_random_seed(0)
            config = shape.config(self.base)
            save_model_dir(build_task_model(config, self.task_info), path, config,
                           self.task_info, self.vocab_file)
        return path

    def compare(self, artifacts: dict[str, tuple[str, str]]) -> dict:
        """`albert_tf.benchmark.interleaved.time_interleaved` of ``artifacts`` plus the
        ratios against ``"full"``."""
        from albert_tf.benchmark.interleaved import InterleavedError, ratios, time_interleaved
        cfg = self.cfg
        try:
            result = time_interleaved(artifacts, cfg.batch_size, cfg.seq_length,
                                      self.base.vocab_size, cfg.threads, cfg.rounds,
                                      cfg.round_seconds)
        except InterleavedError as e:
            raise SpeedupError(f"--target={cfg.target}: {e}") from None
        return {"latency": result, "ratio": ratios(result, "full")}

    def time(self, shape: Shape) -> Timing:
        cached = self.cache.get(shape)
        if cached is not None:
            self.timed.append(cached)
            self.log(f"speedup: {cached.describe()}")
            return cached
        measured = self.compare({"full": self.artifact(full_shape(self.base)),
                                 "shape": self.artifact(shape)})
        latency, ratio = measured["latency"], measured["ratio"]["shape"]
        timing = Timing(shape, latency["shape"]["median_ms"], latency["full"]["median_ms"],
                        ratio["median"], ratio["low"], ratio["high"])
        self.cache.put(timing)
        self.timed.append(timing)
        self.log(f"speedup: {timing.describe()}")
        return timing


# --------------------------------------------------------------------------- search
def reaches(timing: Timing, cfg: SpeedupConfig) -> bool:
    if cfg.target_speedup:
        return timing.speedup >= cfg.target_speedup
    return timing.latency_ms <= cfg.latency_budget_ms


def goal(cfg: SpeedupConfig) -> str:
    return (f"--target_speedup={cfg.target_speedup:g}" if cfg.target_speedup
            else f"--latency_budget_ms={cfg.latency_budget_ms:g}")


def search(base: AlbertConfig, cfg: SpeedupConfig, time_shape: Callable[[Shape], Timing]
           ) -> Timing:
    """The timing of the shape with the most FLOPs that reaches ``cfg``'s goal (bisection
    over `candidates`); a `SpeedupError` naming the best reachable one otherwise."""
    shapes = candidates(base, cfg)
    fastest = time_shape(shapes[-1])
    if not reaches(fastest, cfg):
        best = (f"{fastest.speedup:.2f}x" if cfg.target_speedup
                else f"{fastest.latency_ms:.3f} ms")
        raise SpeedupError(
            f"{goal(cfg)}: not reachable on {cfg.target} at {cfg.batch_size}x{cfg.seq_length} "
            f"on this CPU; the smallest shape allowed ({fastest.shape.label()}, "
            f"speedup.parts={list(cfg.parts)}) reaches {best} (full model "
            f"{fastest.baseline_ms:.3f} ms); nothing was written.")
    if cfg.latency_budget_ms and fastest.baseline_ms <= cfg.latency_budget_ms:
        raise SpeedupError(
            f"{goal(cfg)}: the init model already runs in {fastest.baseline_ms:.3f} ms on "
            f"{cfg.target} at {cfg.batch_size}x{cfg.seq_length}; nothing to remove.")
    low, high, chosen = -1, len(shapes) - 1, fastest     # shapes[high] reaches the goal
    while high - low > 1:
        middle = (low + high) // 2
        timing = time_shape(shapes[middle])
        if reaches(timing, cfg):
            high, chosen = middle, timing
        else:
            low = middle
    return chosen


@dataclasses.dataclass
class Choice:
    """What the search chose (``timing``: its measured speedup, the prediction for the
    trained model) and every shape it timed."""

    timing: Timing
    timed: list[Timing]
    machine: dict

    def as_dict(self) -> dict:
        return {"goal": self.machine.get("goal"), "machine": self.machine,
                "chosen": self.timing.as_dict(), "timed": [t.as_dict() for t in self.timed]}


def choose_structure(config, base: AlbertConfig, task_info, vocab_file: str, texts,
                     log: Callable[[str], None] = print) -> Choice:
    """Runs the search for ``config.speedup`` (a `CompressionConfig`) on a model of config
    ``base``; ``texts``: (text_a, text_b) training pairs for the int8 calibration. Sets
    ``config.structured`` to the chosen shape and returns the `Choice`."""
    cfg = config.speedup
    machine = machine_key(cfg)
    log(f"speedup: {goal(cfg)} on {cfg.target} at {cfg.batch_size}x{cfg.seq_length}, "
        f"{machine['cpu']} ({machine['isa']}), {machine['runtime']}")
    cache = LatencyCache(cache_dir(cfg), machine, base, log)
    work = tempfile.mkdtemp(prefix="albert-tf-speedup-")
    try:
        calibration = write_calibration_tsv(texts[:CALIBRATION_EXAMPLES],
                                            os.path.join(work, "calibration.tsv"))
        timer = ShapeTimer(base, task_info, vocab_file, config.data.data_dir, calibration, cfg,
                           work, cache, log)
        chosen = search(base, cfg, timer.time)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    config.structured = chosen.shape.structured(base, config.structured)
    log(f"speedup: chose {chosen.describe()}")
    return Choice(chosen, timer.timed, dict(machine, goal=goal(cfg)))


def measure_result(config, model_dir: str, base: AlbertConfig, task_info, vocab_file: str,
                   texts, log: Callable[[str], None] = print) -> dict:
    """The compressed ``model_dir``'s export against the ``init_model``'s, both with their
    trained weights, timed in interleaved rounds: ``{"speedup", "spread", ...}``."""
    cfg = config.speedup
    work = tempfile.mkdtemp(prefix="albert-tf-speedup-")
    try:
        calibration = write_calibration_tsv(texts[:CALIBRATION_EXAMPLES],
                                            os.path.join(work, "calibration.tsv"))
        timer = ShapeTimer(base, task_info, vocab_file, config.data.data_dir, calibration, cfg,
                           work, LatencyCache(work, {}, base, log), log)
        full = full_shape(base)
        measured = timer.compare({"full": timer.artifact(full, config.init_model, "teacher"),
                                  "shape": timer.artifact(full, model_dir, "compressed")})
    finally:
        shutil.rmtree(work, ignore_errors=True)
    ratio, latency = measured["ratio"]["shape"], measured["latency"]
    result = {"speedup": round(ratio["median"], 3),
              "spread": [round(ratio["low"], 3), round(ratio["high"], 3)],
              "latency_ms": round(latency["shape"]["median_ms"], 4),
              "baseline_ms": round(latency["full"]["median_ms"], 4)}
    log(f"speedup: measured on the trained models: {result['latency_ms']:.3f} ms vs "
        f"{result['baseline_ms']:.3f} ms, {ratio['median']:.2f}x "
        f"({ratio['low']:.2f}-{ratio['high']:.2f})")
    return result
