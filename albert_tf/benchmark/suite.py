"""The benchmark driver: build every artifact once, time each in its own process, report.

Per model (official configs with random weights, or given model directories), each
deployment target asked for (``--runtimes``: `albert_tf.benchmark.targets`, which says what
each one is: our SavedModel, TFLite, OpenVINO and ONNX exports; PyTorch, ONNX Runtime and
OpenVINO peers on the Hugging Face model) is built once (`ArtifactBuilder`) and timed.

A runtime whose Python package is not installed (while building its artifact, or loading
it in the worker) is skipped with one line naming the package and the pip command;
`benchmark_model` records it in ``skipped`` for the report.

Every runtime is timed in a child process (`time_in_worker`), and every peer's artifact is
built in one (`build_peer`, `albert_tf.benchmark.peer_worker`): only our model directory's
Hugging Face layout is exported here. So PyTorch, ONNX Runtime and OpenVINO never load into
the driver, which has TensorFlow (PyTorch's CUDA wheels bring Triton, whose LLVM segfaults
when loaded after TensorFlow's: docs/setup.md), and a peer whose export, or any runtime whose
timing, crashes (a segmentation fault, an abort, the out-of-memory killer) loses its own
rows, with one line naming the runtime and the signal or exit status (`RuntimeFailed`), not
the whole run: `benchmark_model` records it in ``failed`` for the report. (Our own exports
are built here: TensorFlow, our code.)
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
from typing import Callable

from albert_tf.benchmark import targets
from albert_tf.benchmark.artifacts import FUSIONS_LINE, ArtifactBuilder
from albert_tf.benchmark.tables import Measurement
from albert_tf.benchmark.worker import MISSING_PACKAGE_EXIT, missing_package

# A missing package's pip name, where it is not the import name with '-' for '_'.
_PIP_NAMES = {"ai_edge_litert": "ai-edge-litert", "tensorflow_text": "tensorflow-text",
              "openvino_tokenizers": "openvino-tokenizers"}
NOT_INSTALLED = "the Python package '{}' is not installed"


def pip_fix(package: str, runtime: str) -> str:
    """``pip install 'albert-tf[openvino]' or pip install nncf``: what installs ``package``
    for ``runtime`` (its target's extra: a peer's is ``peers``, which holds every peer's
    packages)."""
    pip_name = _PIP_NAMES.get(package, package.replace("_", "-"))
    extra = targets.get(runtime).extra
    return (f"pip install 'albert-tf[{extra}]' or pip install {pip_name}" if extra
            else f"pip install {pip_name}")


def peers_note(runtimes, rows: list[Measurement], skipped: dict[str, str]) -> str:
    """One line when peers were asked for and none ran (their packages missing, say): the
    report then has no "ours vs the fastest peer" table, and the line says why and what
    installs them; empty otherwise."""
    asked = [r for r in runtimes if targets.get(r).peer]
    if not asked or any(targets.get(m.runtime).peer for m in rows):
        return ""
    why = "; ".join(f"{r}: {skipped[r]}" for r in asked if r in skipped) or "none timed"
    return (f"no peer ran ({why}), so nothing compares our artifacts with PyTorch, ONNX "
            f"Runtime or OpenVINO on the Hugging Face graph: pip install "
            f"'albert-tf[{targets.PEERS_EXTRA}]' adds every peer")


class RuntimeFailed(RuntimeError):
    """A runtime's child process failed (a peer's export: `build_peer`; any runtime's timing
    worker: `time_in_worker`). ``reason``: one line, what failed and how (the signal that
    killed it, or its exit status and the last line of its stderr); ``stderr``: all of it
    (with a Python stack from faulthandler after a crash)."""

    def __init__(self, stage: str, returncode: int, stderr: str):
        last = next((line.strip() for line in reversed(stderr.splitlines()) if line.strip()),
                    "")
        self.stage, self.returncode, self.stderr = stage, returncode, stderr
        self.reason = f"{stage} {describe_exit(returncode)}" + (
            f": {last}" if returncode > 0 and last else "")
        super().__init__(f"{self.reason}\n{stderr[-2000:]}")


def describe_exit(returncode: int) -> str:
    """``killed by SIGSEGV (signal 11)``, ``exited with status 1``."""
    if returncode >= 0:
        return f"exited with status {returncode}"
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = "an unknown signal"
    oom = ", as the out-of-memory killer does" if -returncode == signal.SIGKILL else ""
    return f"killed by {name} (signal {-returncode}{oom})"


def _child(module: str, *args: str) -> list[str]:
    """The command that runs ``module`` in a fresh Python, with faulthandler on (a crash
    leaves its Python stack on stderr)."""
    return [sys.executable, "-X", "faulthandler", "-m", module, *args]


def _shapes_flag(shapes: list[tuple[int, int]]) -> str:
    return "--shapes=" + ",".join(f"{b}x{s}" for b, s in shapes)


def _missing(stdout: str) -> ModuleNotFoundError:
    """The worker's missing-package JSON (its last line) as a ModuleNotFoundError."""
    report = json.loads(stdout.strip().splitlines()[-1])
    return ModuleNotFoundError(report["message"], name=report["package"])


def check_installed(*packages: str) -> None:
    """Raises ModuleNotFoundError (``name``: the package) for the first of ``packages`` that
    is not installed, without importing it (`importlib.util.find_spec`): the driver checks a
    peer's packages before exporting anything for it, but never loads them."""
    import importlib.util
    for package in packages:
        if importlib.util.find_spec(package) is None:
            raise ModuleNotFoundError(f"No module named {package!r}", name=package)


def build_peer(builder: ArtifactBuilder, runtime: str,
               shapes: list[tuple[int, int]]) -> tuple[str, str]:
    """``(worker runtime, artifact)`` of a peer (`albert_tf.benchmark.targets`: ``peer``): the model directory's
    Hugging Face layout is exported here (our code, TensorFlow), the rest
    (`ArtifactBuilder.artifact`: the PyTorch ONNX export, ONNX Runtime's optimizer and
    quantizer, OpenVINO, NNCF) in a child process that never imports TensorFlow
    (`albert_tf.benchmark.peer_worker`), whose progress lines are echoed as they come.

    Raises ModuleNotFoundError when PyTorch, transformers or the peer's own package is not
    installed, `RuntimeFailed` when the child fails (a crash included)."""
    check_installed("torch", "transformers")   # every peer starts from the PyTorch model
    builder.hf_dir()
    do_lower_case = builder.do_lower_case
    if do_lower_case is None:
        from albert_tf.checkpoints import recorded_casing
        casing = recorded_casing(builder.model_dir)
        do_lower_case = True if casing is None else casing
    command = _child("albert_tf.benchmark.peer_worker", f"--runtime={runtime}",
                     f"--model_dir={builder.model_dir}", f"--work_dir={builder.work_dir}",
                     _shapes_flag(shapes),
                     "--do_lower_case" if do_lower_case else "--no-do_lower_case",
                     *([f"--data_dir={builder.data_dir}"] if builder.data_dir else []),
                     *(["--fusions_shown"] if builder.fusions_shown else []))
    report = None
    with tempfile.TemporaryFile("w+", encoding="utf-8") as stderr:
        with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr, text=True) as child:
            for line in child.stdout:
                line = line.rstrip("\n")
                if line.startswith("{"):   # its result (or missing-package) JSON
                    report = line
                    continue
                builder.echo(line)
                if FUSIONS_LINE in line:
                    builder.fusions_shown = True
        stderr.seek(0)
        errors = stderr.read()
    if child.returncode == MISSING_PACKAGE_EXIT and report:
        raise _missing(report)
    if child.returncode or report is None:
        raise RuntimeFailed("export", child.returncode, errors)
    result = json.loads(report)
    return result["worker_runtime"], result["artifact"]


def time_in_worker(runtime: str, artifact: str, shapes: list[tuple[int, int]], vocab_size: int,
                   threads: int, min_seconds: float) -> dict:
    """Runs `albert_tf.benchmark.worker` in a fresh process; returns its JSON. Raises
    ModuleNotFoundError (``name``: the package) when the worker reports that the runtime's
    package is not installed, `RuntimeFailed` when the worker fails (a crash included)."""
    command = _child("albert_tf.benchmark.worker", f"--runtime={runtime}",
                     f"--artifact={artifact}", _shapes_flag(shapes),
                     f"--vocab_size={vocab_size}", f"--threads={threads}",
                     f"--min_seconds={min_seconds}")
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode == MISSING_PACKAGE_EXIT:
        raise _missing(result.stdout)
    if result.returncode != 0:
        raise RuntimeFailed("timing", result.returncode, result.stderr)
    return json.loads(result.stdout.strip().splitlines()[-1])


def file_size(runtime: str, artifact: str, batch: int, seq: int) -> float:
    """The artifact's size in MiB by its target's rule (`albert_tf.benchmark.targets`)."""
    return targets.get(runtime).size(artifact, batch, seq)


def _profile(name: str, runtime: str, worker_runtime: str, artifact: str, shapes,
             vocab_size: int, threads: int, profiles: list, echo) -> None:
    """Appends a kernel profile per shape (`albert_tf.benchmark.profile`); a machine
    where perf cannot sample gets one line, and the timings stand."""
    from albert_tf.benchmark import profile
    for batch, seq in shapes:
        try:
            kernels, timed = profile.profile_worker(worker_runtime, artifact, (batch, seq),
                                                    vocab_size, threads)
        except profile.PerfUnavailable as e:
            echo(f"  profile skipped: {e}")
            return
        title = (f"{name} {runtime} {batch} x {seq} "
                 f"({timed['results'][0]['median_ms']:.1f} ms under the profiler)")
        profiles.append((title, kernels))
        top = sorted(kernels.by_category.items(), key=lambda kv: -kv[1])[:3]
        echo("    profile: " + ", ".join(f"{c} {100 * v:.0f}%" for c, v in top))


def merge_rounds(timings: list[dict]) -> dict:
    """One worker result from the results of ``rounds`` workers of the same runtime and
    shapes: per shape the median of their medians and of their p90s, and the largest peak
    RSS (each worker is a fresh process)."""
    import statistics
    merged = dict(timings[0], peak_rss_mib=max(t["peak_rss_mib"] for t in timings),
                  results=[])
    for shape_results in zip(*(t["results"] for t in timings)):
        median = statistics.median(r["median_ms"] for r in shape_results)
        merged["results"].append(dict(
            shape_results[0], median_ms=median,
            p90_ms=statistics.median(r["p90_ms"] for r in shape_results),
            sequences_per_s=shape_results[0]["batch"] / median * 1e3,
            round_medians_ms=[r["median_ms"] for r in shape_results]))
    return merged


def benchmark_model(name: str, model_dir: str, runtimes, shapes, work_dir: str, data_dir: str,
                    threads: int, min_seconds: float, cpu, echo=print,
                    skipped: dict[str, str] | None = None,
                    profiles: list | None = None, rounds: int = 1,
                    failed: dict[str, str] | None = None) -> list[Measurement]:
    """Builds and times each runtime of one model; returns its measurements.

    ``rounds`` > 1: every runtime is timed that many times, round-robin (a fresh worker each
    time, the runtimes in turn), and each figure is the median over the rounds, so that a
    slow minute of a shared machine hits every runtime alike instead of the one it falls on.

    ``profiles``: when a list, each runtime is then also profiled by kernel under ``perf``
    at each shape (`albert_tf.benchmark.profile`) and ``(title, KernelProfile)`` appended.

    ``skipped`` (runtime -> reason) collects the runtimes that could not run, across models:
    one whose package is missing is reported with one line the first time and then left
    out for every later model (the package will not appear mid-run).

    ``failed`` (runtime -> ``"model: reason"``, ``"; "``-joined across models) collects the
    runtimes whose export or timing failed (`RuntimeFailed`: a peer's export and every
    timing run in child processes, so a crash included): each is named with one line, its
    rows of this model are left out (every round's), and the other runtimes run on."""
    import albert_tf
    from albert_tf.checkpoints import load_config_from_dir
    run = _ModelRun(name, load_config_from_dir(model_dir),
                    ArtifactBuilder(model_dir, os.path.join(work_dir, name), data_dir, echo),
                    shapes, threads, min_seconds, rounds, echo,
                    skipped={} if skipped is None else skipped,
                    failed={} if failed is None else failed)
    for round_index in range(rounds):
        for runtime in runtimes:
            run.time_once(runtime, round_index)
    rows = []
    for runtime in (r for r in runtimes if r in run.timings):
        rows += run.measurements(runtime, cpu)
        if profiles is not None:
            worker_runtime, artifact = run.artifacts[runtime]
            _profile(name, runtime, worker_runtime, artifact, shapes, run.config.vocab_size,
                     threads, profiles, echo)
    del albert_tf
    return rows


@dataclasses.dataclass
class _ModelRun:
    """`benchmark_model`'s state for one model: its config and artifact builder, what it
    times, and what it found: ``timings`` (runtime -> one worker result per round),
    ``artifacts`` (runtime -> (worker runtime, artifact)), ``skipped`` and ``failed`` (shared
    across models) and the runtimes whose package is ``missing``."""

    name: str
    config: object
    builder: ArtifactBuilder
    shapes: list[tuple[int, int]]
    threads: int
    min_seconds: float
    rounds: int
    echo: Callable[[str], None]
    skipped: dict[str, str]
    failed: dict[str, str]
    timings: dict[str, list[dict]] = dataclasses.field(default_factory=dict)
    artifacts: dict[str, tuple[str, str]] = dataclasses.field(default_factory=dict)
    missing: set[str] = dataclasses.field(default_factory=set)

    def __post_init__(self):
        self.missing = {r for r, reason in self.skipped.items()
                        if reason.endswith(" is not installed")}

    def time_once(self, runtime: str, round_index: int) -> None:
        """One round of ``runtime``: its artifact built (the first time) and timed; a
        missing package skips it, a failure drops its rows and later rounds."""
        if runtime in self.missing or (round_index and runtime not in self.timings):
            return
        target = targets.get(runtime)
        if target.peer and self._no_hugging_face_layout(runtime):
            return
        try:
            if runtime not in self.artifacts:
                self.artifacts[runtime] = (build_peer(self.builder, runtime, self.shapes)
                                           if target.peer
                                           else self.builder.artifact(runtime, self.shapes))
            worker_runtime, artifact = self.artifacts[runtime]
            self.echo(f"  timing {self.name} {runtime} {self.shapes}"
                      + (f" (round {round_index + 1}/{self.rounds})" if self.rounds > 1
                         else ""))
            timed = time_in_worker(worker_runtime, artifact, self.shapes,
                                   self.config.vocab_size, self.threads, self.min_seconds)
        except ModuleNotFoundError as e:
            self._skip_missing(runtime, e)
            return
        except RuntimeFailed as e:
            self._fail(runtime, e)
            return
        self.timings.setdefault(runtime, []).append(timed)

    def _no_hugging_face_layout(self, runtime: str) -> bool:
        """A peer runs the Hugging Face layout, which only fully shared ALBERT and BERT
        have: otherwise one line, and ``runtime`` is skipped for this model."""
        if self.config.sharing == "all" or self.config.is_bert:
            return False
        self.echo(f"  {self.name}: {runtime} skipped (no Hugging Face layout for "
                  f"sharing={self.config.sharing})")
        self.skipped.setdefault(runtime, f"{self.name}: no Hugging Face layout for "
                                f"sharing={self.config.sharing}")
        return True

    def _skip_missing(self, runtime: str, error: ModuleNotFoundError) -> None:
        """``runtime``'s package is not installed: one line with the pip command, and it is
        left out from now on (other errors are raised)."""
        package = missing_package(error)
        if package is None:
            raise error
        self.skipped[runtime] = NOT_INSTALLED.format(package)
        self.missing.add(runtime)
        self.echo(f"  {runtime}: skipped: {self.skipped[runtime]} "
                  f"({pip_fix(package, runtime)})")

    def _fail(self, runtime: str, error: RuntimeFailed) -> None:
        """``runtime``'s export or timing failed: its stderr to a log, one line, its rows
        (every round's) left out, and no later round."""
        self.timings.pop(runtime, None)
        log = self.builder.path("logs", f"{runtime}.{error.stage}.log")
        os.makedirs(os.path.dirname(log), exist_ok=True)
        with open(log, "w", encoding="utf-8") as f:
            f.write(error.stderr)
        why = f"{self.name}: {error.reason}"
        self.failed[runtime] = (f"{self.failed[runtime]}; {why}" if runtime in self.failed
                                else why)
        self.echo(f"  {self.name} {runtime}: FAILED, its rows are left out: {error.reason} "
                  f"(stderr: {log})")

    def measurements(self, runtime: str, cpu) -> list[Measurement]:
        """``runtime``'s rows, one per shape (the median over the rounds, against the CPU's
        fp32 or int8 peak), each echoed."""
        from albert_tf.benchmark.flops import flops_per_sequence
        _, artifact = self.artifacts[runtime]
        timed = merge_rounds(self.timings[runtime])
        integer = targets.get(runtime).integer
        peak = cpu.peak_int8_gops(self.threads) if integer else \
            cpu.peak_fp32_gflops(self.threads)
        rows = []
        for r in timed["results"]:
            gflops = flops_per_sequence(self.config, r["seq"]) / 1e9
            achieved = gflops * r["batch"] / (r["median_ms"] / 1e3)
            rows.append(Measurement(
                model=self.name, runtime=runtime, batch=r["batch"], seq=r["seq"],
                median_ms=r["median_ms"], p90_ms=r["p90_ms"],
                sequences_per_s=r["sequences_per_s"], peak_rss_mib=timed["peak_rss_mib"],
                file_mib=file_size(runtime, artifact, r["batch"], r["seq"]),
                gflops_per_sequence=gflops, peak_fraction=achieved / peak,
                vector_peak_fraction=(achieved / cpu.peak_int8_vector_gops(self.threads)
                                      if integer else None),
                rounds=len(self.timings[runtime])))
            self._echo_row(runtime, r, 100 * achieved / peak)
        return rows

    def _echo_row(self, runtime: str, r: dict, percent_of_peak: float) -> None:
        """One line per shape: median, p90, share of the peak (and each round's median)."""
        spread = (" (rounds: " + ", ".join(f"{m:.1f}" for m in r["round_medians_ms"])
                  + ")") if self.rounds > 1 else ""
        self.echo(f"    {self.name:16s} {runtime:15s} {r['batch']:3d} x {r['seq']:4d}: "
                  f"median {r['median_ms']:8.1f} ms, p90 {r['p90_ms']:8.1f} ms, "
                  f"{percent_of_peak:5.1f}% of peak{spread}")
