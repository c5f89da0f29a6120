"""albert-tf-benchmark: CPU inference of ALBERT vs BERT at every size, our artifacts vs
PyTorch, ONNX Runtime and OpenVINO on the same weights, against the CPU's measured peak.

    albert-tf-benchmark --models= --model_dirs=runs/sst2/best --shapes=1x64 \\
        --runtimes=tflite_dynamic,tflite_int8,ort_int8 --output_dir=bench/sst2   # the tour's model
    albert-tf-benchmark --models=albert_mini,bert_mini --shapes=1x32,1x128 \\
        --runtimes=tflite_dynamic,ort_int8,torch_int8 --output_dir=bench/mini   # ALBERT vs BERT
    albert-tf-benchmark --sst2_end_to_end --shapes= --models= --model_dirs=runs/sst2/best \\
        --runtimes=tflite_dynamic --output_dir=bench/sst2_e2e   # SST-2 dev, raw text in
    albert-tf-benchmark --compressed --models=albert_mini --shapes=1x64 --sparsities=0.9 \\
        --patterns=1x16 --structured=ffn50 --output_dir=bench/compressed   # sparse / 4-bit vs int8

--quick is the standard comparison: albert_base vs bert_base, batch 1 x seq 128, our int8
artifacts vs the peers (~7 min on 2 cores); without --models every official size is timed
(albert_base to albert_xxlarge, bert_base, bert_large: hours), at the --shapes of the full
grid (1x16 to 32x384). Writes report.md, results.json and latency_vs_flops.png to
--output_dir (default runs/benchmark), and says so at the end. --output_dir is checked
before any work: a new or empty directory, or an earlier albert-tf-benchmark run (whose
files it rewrites); never a directory of the user's or another albert-tf output. With
--sst2_end_to_end also SST-2 dev end to end (raw text in, labels out: all 872 dev
sentences, tokenized, bucketed by length, batched; sentences/s and, for SST-2 finetuned
model directories, accuracy), per TFLite quantization and batch size; --shapes= (empty) skips the per-shape latency runs.

A runtime whose Python package is not installed is skipped with one line naming the
package and the pip command (the peers: ``pip install 'albert-tf[peers]'``); the report
lists it under "skipped", and says so when no peer ran at all.

With --compressed (albert_tf/benchmark/compressed.py): per model (default albert_base,
bert_base) and shape (default 1x128), our dense int8 targets (the fastest is the
baseline), the 4-bit ones, and copies of the model pruned by magnitude to each --patterns x
--sparsities on the targets whose sparse kernels run that pattern, and copies made
physically smaller by --structured recipes (heads50_ffn50: half the heads and FFN neurons
removed; ffn50; layers50) on every dense int8 target; one line per model and shape,
``compressed speedup over dense int8: <model> <b x s> <X.XX>x (<runtime>, <recipe>)``,
and a table, also in compressed.md / compressed.json.

Each runtime is timed in a process of its own, and each peer (PyTorch, ONNX Runtime,
OpenVINO) is exported in one too: a peer whose export, or any runtime whose timing, fails
(a crash included) loses its rows and nothing else. One line names it with the signal or
exit status, the report lists it under "failed", and the command exits with status 1 once
the report of everything else is written.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Sequence

from absl import app, flags

from albert_tf import cli

FLAGS = flags.FLAGS


def define_flags() -> None:
    """Defines the flags. Called by `run`, not at import: every binary shares absl's
    one flag registry, and several define the same names."""
    flags.DEFINE_list("models", ["albert_base", "albert_large", "albert_xlarge", "albert_xxlarge",
                                 "bert_base", "bert_large"],
                      "Official configs to time with random weights.")
    flags.DEFINE_list("model_dirs", [], "Model directories (trained weights) to time as well.")
    from albert_tf.benchmark import targets
    flags.DEFINE_list("runtimes", None, "Deployment targets to time (default: "
                      f"{', '.join(targets.default_names())}; every choice with what it is: "
                      "python -m albert_tf.benchmark.targets, docs/cpu-benchmark.md): "
                      f"{', '.join(targets.names())}.")
    flags.DEFINE_list("shapes", ["1x128", "32x128", "1x384", "32x384", "1x16", "1x32"],
                      "BATCHxSEQ shapes.")
    flags.DEFINE_integer("threads", 2, "Threads per runtime.")
    flags.DEFINE_float("min_seconds", 3.0, "Minimum timed seconds per shape.")
    flags.DEFINE_integer("rounds", 1, "Time every runtime this many times, round-robin (a "
                         "fresh worker each time), and report the median over the rounds: "
                         "on a shared, noisy machine a slow minute then hits every runtime "
                         "alike. Ratios between runtimes are only meaningful from one run.",
                         lower_bound=1)
    flags.DEFINE_string("output_dir", "runs/benchmark", "Report, JSON, plots and artifacts.")
    flags.DEFINE_string("data_dir", None,
                        "Real text: SST-2 train for int8 calibration, SST-2 dev for "
                        "--sst2_end_to_end (default $ALBERT_TF_DATA_DIR).")
    flags.DEFINE_boolean("profile", False, "Also profile every timed runtime by kernel "
                         "under Linux perf, per shape (albert_tf/benchmark/profile.py): "
                         "where the time goes, which XNNPACK kernels ran.")
    flags.DEFINE_boolean("quick", False, "A ~7-minute run on 2 cores: albert_base and "
                         "bert_base, batch 1 x seq 128, "
                         f"{', '.join(targets.quick_names())}.")
    flags.DEFINE_boolean("sst2_end_to_end", False, "Also time SST-2 dev end to end (raw text "
                         "in, labels out, all dev sentences bucketed by length) on TFLite and, "
                         "for the ir_* runtimes in --runtimes, on our OpenVINO export (same "
                         "Python tokenization, buckets and batch sizes); official configs get "
                         "a random 2-class head (no accuracy).")
    from albert_tf.benchmark.end_to_end import DEFAULT_BATCH_SIZES, DEFAULT_BUCKETS
    flags.DEFINE_list("sst2_buckets", [str(b) for b in DEFAULT_BUCKETS],
                      "--sst2_end_to_end: sequence-length buckets (one signature each).")
    flags.DEFINE_list("sst2_batch_sizes", [str(b) for b in DEFAULT_BATCH_SIZES],
                      "--sst2_end_to_end: static batch sizes to try (the fastest is marked).")
    flags.DEFINE_list("sst2_tflite", [], "--sst2_end_to_end: TFLite export directories with "
                      "bucket signatures to time as they are (besides the models above).")
    from albert_tf.benchmark import compressed
    flags.DEFINE_boolean("compressed", False, "Instead of the suite: do sparsity or 4-bit "
                         "beat our dense int8 here? Times our dense int8 targets (the fastest "
                         "is the baseline), the q4 targets, and copies pruned by magnitude to "
                         "--patterns x --sparsities on the targets that run each pattern "
                         "(--models default albert_base,bert_base, --shapes 1x128; --quick: "
                         f"albert_base, sparsity {compressed.QUICK_SPARSITY}).")
    flags.DEFINE_list("sparsities", [f"{s:g}" for s in compressed.DEFAULT_SPARSITIES],
                      "--compressed: fractions of each kernel pruned to zero, in (0, 1).")
    flags.DEFINE_list("patterns", list(compressed.PATTERNS), "--compressed: pruning "
                      "patterns: unstructured; 1x4 / 1x16: blocks of 1 output x 4 / 16 "
                      "inputs of the [out, in] weight, as TFLite's sparse kernels store them.")
    from albert_tf.benchmark.compressed_structured import DEFAULT_RECIPES
    flags.DEFINE_list("structured", list(DEFAULT_RECIPES), "--compressed: physically "
                      "smaller copies timed on every dense int8 target: heads<P>, ffn<P>, "
                      "layers<P> (percent of every block's heads / FFN neurons / of the "
                      "layers removed by magnitude) joined by _, e.g. heads50_ffn50; none: "
                      "skip (--quick: the first).")
    flags.DEFINE_list("sst2_quantizations", None, "--sst2_end_to_end: TFLite quantizations "
                      "(default: those of the tflite_* runtimes in --runtimes).")


def check_inputs(models: list[str], shapes: list[str]) -> None:
    """Unknown configs, configs the benchmark's vocabulary does not fit, model directories
    that are none, bad shapes and counts: one-line usage errors before anything is built."""
    from albert_tf import resources, user_inputs
    from albert_tf.config import ConfigError, load_config
    try:
        user_inputs.at_least(FLAGS.threads, "--threads")
        user_inputs.at_least(FLAGS.min_seconds, "--min_seconds", 0)
        for shape in shapes:
            try:
                batch, seq = (int(v) for v in shape.lower().split("x"))
            except ValueError:
                raise user_inputs.InputError(f"--shapes: {shape!r} is not BATCHxSEQ (e.g. "
                                             "1x128).") from None
            if batch < 1 or seq < 3:
                raise user_inputs.InputError(f"--shapes: {shape!r}: the batch must be >= 1 and "
                                             "the sequence length >= 3 (e.g. 1x128).")
        pieces = None
        for name in models:
            try:
                config = load_config(name)
            except (FileNotFoundError, ConfigError) as e:
                raise user_inputs.InputError(f"--models: {e}") from None
            if pieces is None:
                from albert_tf.text.vocabulary import load_tokenizer
                pieces = load_tokenizer(resources.resolve(resources.DEFAULT_VOCAB)).vocab_size
            if config.vocab_size < pieces:
                raise user_inputs.InputError(
                    f"--models={name}: its vocab_size {config.vocab_size} is below the {pieces} "
                    f"pieces of the vocabulary the benchmark tokenizes with "
                    f"({resources.DEFAULT_VOCAB}); time such a model from a model directory "
                    "(--model_dirs) instead.")
        for model_dir in FLAGS.model_dirs:
            user_inputs.model_dir(model_dir, "--model_dirs", purpose="to time")
    except user_inputs.InputError as e:
        raise app.UsageError(str(e)) from None
    check_output_dir()


def check_output_dir() -> str:
    """--output_dir before any work (`albert_tf.outputs.check_run_directory`): new, empty, or
    an earlier albert-tf-benchmark run (rewritten); never a directory of the user's, another
    albert-tf output (an export, a model directory) or a place inside one, an input it
    times (--model_dirs, --sst2_tflite) or a directory that cannot be written. An
    `albert_tf.outputs.OutputError` (one line) names the flag."""
    from albert_tf import outputs
    inputs = [("--model_dirs", d) for d in FLAGS.model_dirs]
    inputs += [("--sst2_tflite", e) for e in FLAGS.sst2_tflite]
    return outputs.check_run_directory(FLAGS.output_dir,
                                       kind=outputs.RUN_KINDS["albert-tf-benchmark"],
                                       inputs=inputs, flag="--output_dir")


@dataclasses.dataclass(frozen=True)
class CompressedChoice:
    """``--compressed``: the targets by role (`albert_tf.benchmark.compressed.Plan`), the
    sparsities and the pruning patterns."""

    plan: object
    sparsities: Sequence[float]
    patterns: Sequence[str]


@dataclasses.dataclass(frozen=True)
class EndToEndChoice:
    """``--sst2_end_to_end``: TFLite quantizations, batch sizes, length buckets, the SST-2
    dev file and our server exports (OpenVINO, ONNX) to time end to end."""

    quantizations: Sequence[str]
    batch_sizes: Sequence[int]
    buckets: Sequence[int]
    dev_file: str
    servers: Sequence[str]


@dataclasses.dataclass(frozen=True)
class BenchmarkPlan:
    """One albert-tf-benchmark run, from its flags, every flag checked before any work:
    the official configs and model directories, ``(batch, seq)`` shapes and runtimes to
    time, and the --compressed or --sst2_end_to_end part (None when not asked for)."""

    models: Sequence[str]
    model_dirs: Sequence[str]
    shapes: Sequence[tuple[int, int]]
    runtimes: Sequence[str]
    min_seconds: float
    data_dir: str | None
    output_dir: str
    threads: int
    rounds: int
    profile: bool
    sst2_tflite: Sequence[str]
    compressed: CompressedChoice | None = None
    end_to_end: EndToEndChoice | None = None

    @classmethod
    def from_flags(cls) -> tuple["BenchmarkPlan | None", Exception | None]:
        """The plan, or the first problem with the flags (before any work): an
        ``app.UsageError`` (exit 1) or, for --output_dir, an `albert_tf.outputs.OutputError`
        (exit 2), whose text is the one line to print."""
        from albert_tf import outputs
        try:
            return cls._checked(), None
        except (app.UsageError, outputs.OutputError) as e:
            return None, e

    @classmethod
    def _checked(cls) -> "BenchmarkPlan":
        """The plan, in the order the checks have always run; raises the first problem."""
        models, shapes, runtimes, min_seconds, choice = _mode()
        _check_runtimes(runtimes)
        check_inputs(models, shapes)
        if choice is not None and choice.plan.structured:
            _check_structured(choice.plan.structured, models)
        data_dir = _calibration_data_dir(runtimes, shapes)
        parsed = _parsed_shapes(shapes)
        end_to_end = _end_to_end(runtimes, models, data_dir) if FLAGS.sst2_end_to_end else None
        return cls(models=models, model_dirs=FLAGS.model_dirs, shapes=parsed,
                   runtimes=runtimes, min_seconds=min_seconds, data_dir=data_dir,
                   output_dir=FLAGS.output_dir, threads=FLAGS.threads, rounds=FLAGS.rounds,
                   profile=FLAGS.profile, sst2_tflite=FLAGS.sst2_tflite, compressed=choice,
                   end_to_end=end_to_end)


def _mode() -> tuple[list[str], list[str], Sequence[str], float, CompressedChoice | None]:
    """Models, shape strings, runtimes and --min_seconds of the mode asked for: the suite,
    --quick (the standard comparison) or --compressed (its own defaults)."""
    from albert_tf.benchmark import targets
    models, shapes, min_seconds = FLAGS.models, FLAGS.shapes, FLAGS.min_seconds
    if FLAGS.compressed:
        return _compressed_mode(models, shapes, min_seconds)
    if FLAGS.quick:
        return (["albert_base", "bert_base"], ["1x128"],
                FLAGS.runtimes or targets.quick_names(), min(min_seconds, 2.0), None)
    return models, shapes, FLAGS.runtimes or targets.default_names(), min_seconds, None


def _compressed_mode(models: list[str], shapes: list[str], min_seconds: float):
    """`_mode` for --compressed: its flags checked, its default models and shapes (--quick:
    the first of each, one sparsity, the first --structured recipe)."""
    from albert_tf.benchmark import compressed, compressed_structured
    try:
        sparsities = compressed.parse_sparsities(FLAGS.sparsities)
        patterns = compressed.check_patterns(FLAGS.patterns)
        recipes = compressed_structured.parse_recipes(FLAGS.structured)
        _check_runtimes(FLAGS.runtimes or ())
        the_plan = compressed.plan(FLAGS.runtimes, patterns, recipes)
    except compressed.CompressedInputError as e:
        raise app.UsageError(str(e)) from None
    if FLAGS.sst2_end_to_end or FLAGS.profile:
        raise app.UsageError("--compressed times per-shape latency only; run "
                             "--sst2_end_to_end and --profile without it.")
    if not FLAGS["models"].present:
        models = list(compressed.DEFAULT_MODELS)
    if not FLAGS["shapes"].present:
        shapes = list(compressed.DEFAULT_SHAPES)
    if FLAGS.quick:
        models, shapes = models[:1], shapes[:1]
        sparsities, min_seconds = [compressed.QUICK_SPARSITY], min(min_seconds, 2.0)
        the_plan = dataclasses.replace(the_plan, structured=the_plan.structured[:1])
    return (models, shapes, the_plan.runtimes, min_seconds,
            CompressedChoice(the_plan, sparsities, patterns))


def _check_runtimes(runtimes: Sequence[str]) -> None:
    """Every runtime is one of `albert_tf.benchmark.targets`."""
    from albert_tf.benchmark import targets
    unknown = sorted(set(runtimes) - set(targets.names()))
    if unknown:
        raise app.UsageError(f"--runtimes: unknown {unknown}; use {list(targets.names())}.")


def _check_structured(recipes: Sequence, models: list[str]) -> None:
    """--structured recipes fit every model to time (e.g. heads50 needs an even head
    count), read from the configs without TensorFlow."""
    from albert_tf.benchmark import compressed, compressed_structured
    from albert_tf.config import load_config
    from albert_tf.user_inputs import CONFIG_FILE   # no TensorFlow before the error
    configs = {name: load_config(name) for name in models}
    configs.update({d: load_config(os.path.join(d, CONFIG_FILE)) for d in FLAGS.model_dirs})
    try:
        compressed_structured.check_recipes(recipes, configs)
    except compressed.CompressedInputError as e:
        raise app.UsageError(str(e)) from None


def _calibration_data_dir(runtimes: Sequence[str], shapes: list[str]) -> str | None:
    """The data directory (None: none given); required, with SST-2 train in it, when an
    int8 runtime calibrates on it (only per-shape runs calibrate)."""
    from albert_tf import resources
    from albert_tf.benchmark import targets
    calibrated = [r for r in runtimes if targets.get(r).calibrated]
    if not (shapes and calibrated):
        return resources.data_dir_or_none(FLAGS.data_dir)
    names = " and ".join([", ".join(calibrated[:-1]), calibrated[-1]] if calibrated[:-1]
                         else calibrated)
    try:   # int8 calibration reads <data_dir>/glue/SST-2/train.tsv
        data_dir = resources.data_dir(FLAGS.data_dir)
    except resources.DataDirError as e:
        raise app.UsageError(f"{names} calibrate{'s' * (len(calibrated) == 1)} on SST-2 "
                             f"train text: {e}")
    from albert_tf.data.task_data import expected_glue_file
    calibration = expected_glue_file(data_dir, "sst2", "train")
    if not os.path.isfile(calibration):
        raise app.UsageError(f"{calibration} not found ({names} calibrate"
                             f"{'s' * (len(calibrated) == 1)} on it): "
                             f"{resources.data_dir_fix()} to the data directory, or leave "
                             f"{names} out of --runtimes.")
    return data_dir


def _parsed_shapes(shapes: list[str]) -> list[tuple[int, int]]:
    """``BATCHxSEQ`` strings as ``(batch, seq)``."""
    parsed = []
    for shape in shapes:
        try:
            batch, seq = (int(v) for v in shape.lower().split("x"))
        except ValueError:
            raise app.UsageError(f"--shapes: {shape!r} is not BATCHxSEQ (e.g. 1x128).")
        parsed.append((batch, seq))
    return parsed


def _end_to_end(runtimes: Sequence[str], models: list[str],
                data_dir: str | None) -> EndToEndChoice:
    """--sst2_end_to_end: the dev file, the given exports, buckets and batch sizes checked,
    and the TFLite quantizations and server exports (from --runtimes) to time."""
    from albert_tf.benchmark import targets
    from albert_tf.benchmark.end_to_end import (END_TO_END_SERVERS, EndToEndError,
                                                check_export, sst2_dev_file)
    try:
        dev_file = sst2_dev_file(data_dir)
        for export in FLAGS.sst2_tflite:
            check_export(export)
    except EndToEndError as e:
        raise app.UsageError(str(e))
    buckets, batch_sizes = _end_to_end_sizes()
    chosen = [targets.get(r) for r in runtimes]
    quantizations = FLAGS.sst2_quantizations or [
        t.export[1] for t in chosen if t.export and t.export[0] == "tflite"]
    # our OpenVINO and ONNX exports, run through their Python runners
    servers = [t.name for t in chosen if t.export and t.export[0] in END_TO_END_SERVERS]
    if models or FLAGS.model_dirs:   # to export (only then import TensorFlow)
        _check_end_to_end_quantizations(quantizations, servers)
    return EndToEndChoice(quantizations, batch_sizes, buckets, dev_file, servers)


def _end_to_end_sizes() -> tuple[list[int], list[int]]:
    """--sst2_buckets (sequence lengths >= 3) and --sst2_batch_sizes (>= 1)."""
    from albert_tf.export.signatures import bucket_lengths
    try:
        buckets = bucket_lengths(FLAGS.sst2_buckets)
        batch_sizes = [int(b) for b in FLAGS.sst2_batch_sizes]
    except ValueError:
        raise app.UsageError("--sst2_buckets and --sst2_batch_sizes take integers, e.g. "
                             "--sst2_buckets=16,32,64,128 --sst2_batch_sizes=1,8,32.")
    if not buckets or not batch_sizes or min(buckets) < 3 or min(batch_sizes) < 1:
        raise app.UsageError("--sst2_buckets need lengths >= 3 and --sst2_batch_sizes "
                             "sizes >= 1.")
    return buckets, batch_sizes


def _check_end_to_end_quantizations(quantizations: Sequence[str],
                                    servers: Sequence[str]) -> None:
    """Models to export end to end need TFLite quantizations our exporter knows, or a
    server export."""
    from albert_tf.export import formats
    tflite = formats.get("tflite").quantizations()
    bad = sorted(set(quantizations) - set(tflite))
    if (not quantizations and not servers) or bad:
        raise app.UsageError(f"--sst2_end_to_end needs TFLite quantizations: "
                             f"--sst2_quantizations from {list(tflite)} or "
                             f"tflite_* runtimes in --runtimes, or ir_* (OpenVINO) / "
                             f"ort_* (ONNX) runtimes there (got {bad or 'none'}).")


def main(argv: list[str]) -> int:
    """Checks every flag (`BenchmarkPlan`), then times the models: the suite, or
    --compressed; exits 1 when a runtime failed."""
    del argv
    plan, problem = BenchmarkPlan.from_flags()
    if problem is not None:
        raise problem
    from albert_tf import outputs
    from albert_tf.benchmark.cpu import cpu_info
    outputs.mark_run_directory(plan.output_dir,                 # checked by the plan
                               outputs.RUN_KINDS["albert-tf-benchmark"])
    cpu = cpu_info()
    print(f"CPU: {cpu.describe()}", flush=True)
    work = os.path.join(plan.output_dir, "artifacts")
    to_time = _models_to_time(plan, work)
    if plan.compressed is not None:
        return _compressed(plan, to_time, work, cpu)
    return _suite(plan, to_time, work, cpu)


def _models_to_time(plan: BenchmarkPlan, work: str) -> list[tuple[str, str]]:
    """``(name, model directory)`` per model: the official configs with random (seeded)
    weights, written under ``work``, then --model_dirs."""
    from albert_tf.benchmark.artifacts import random_model_dir
    to_time = [(name, random_model_dir(name, work)) for name in plan.models]
    return to_time + [(os.path.basename(os.path.normpath(d)), d) for d in plan.model_dirs]


@dataclasses.dataclass
class _SuiteResults:
    """What the suite measured: per-shape rows, end-to-end rows, runtimes skipped (e.g. a
    missing package) or failed (export or timing), and --profile's (title, profile)."""

    rows: list = dataclasses.field(default_factory=list)
    end_to_end: list = dataclasses.field(default_factory=list)
    skipped: dict[str, str] = dataclasses.field(default_factory=dict)
    failed: dict[str, str] = dataclasses.field(default_factory=dict)
    profiles: list | None = None


def _suite(plan: BenchmarkPlan, to_time: list[tuple[str, str]], work: str, cpu) -> int:
    """The suite: every model timed, then --sst2_tflite, then the report; 1 when a
    runtime failed."""
    from albert_tf.benchmark.tables import write_report
    results = _SuiteResults(profiles=[] if plan.profile else None)
    for index, (name, model_dir) in enumerate(to_time, 1):
        print(f"[{index}/{len(to_time)}] {name}", flush=True)
        _time_model(plan, name, model_dir, work, cpu, results)
    if plan.end_to_end:
        _time_given_exports(plan, results)
    meta = _suite_meta(plan, cpu, results)
    print(write_report(plan.output_dir, results.rows, meta, end_to_end=results.end_to_end,
                       profiles=results.profiles))
    print(f"wrote {os.path.join(plan.output_dir, 'report.md')} and results.json, the plots "
          f"and artifacts/ beside it", flush=True)
    for runtime, why in results.failed.items():   # last: the lines a reader looks for
        print(f"FAILED: {runtime} ({why}); its rows are left out, the others stand "
              f"(logs: {os.path.join(work, '<model>', 'logs')})", flush=True)
    return 1 if results.failed else 0


def _time_model(plan: BenchmarkPlan, name: str, model_dir: str, work: str, cpu,
                results: _SuiteResults) -> None:
    """One model per shape on every runtime, and end to end; adds to ``results``."""
    from albert_tf.benchmark.suite import benchmark_model
    echo = lambda s: print(s, flush=True)  # noqa: E731
    if plan.shapes:
        results.rows += benchmark_model(
            name, model_dir, plan.runtimes, plan.shapes, work, plan.data_dir, plan.threads,
            plan.min_seconds, cpu, echo=echo, skipped=results.skipped,
            profiles=results.profiles, rounds=plan.rounds, failed=results.failed)
    e2e = plan.end_to_end
    if e2e:
        from albert_tf.benchmark.end_to_end import benchmark_end_to_end
        results.end_to_end += benchmark_end_to_end(
            name, model_dir, e2e.quantizations, e2e.batch_sizes, e2e.buckets, work,
            plan.data_dir, plan.threads, plan.min_seconds, echo=echo, servers=e2e.servers)


def _time_given_exports(plan: BenchmarkPlan, results: _SuiteResults) -> None:
    """--sst2_tflite: the given TFLite exports end to end, as they are."""
    from albert_tf.benchmark.end_to_end import run_in_worker
    from albert_tf.benchmark.tables import EndToEndMeasurement
    for export in plan.sst2_tflite:
        name = os.path.basename(os.path.normpath(export))
        print(f"SST-2 end to end: {export}", flush=True)
        results.end_to_end.append(EndToEndMeasurement.from_result(name, run_in_worker(
            export, plan.end_to_end.dev_file, plan.threads, plan.min_seconds)))
        print("    " + results.end_to_end[-1].describe(), flush=True)


def _suite_meta(plan: BenchmarkPlan, cpu, results: _SuiteResults) -> dict:
    """The report's notes: machine, threads, weights, peaks, bf16, skipped, failed, peers
    (printed too) and end to end."""
    from albert_tf.benchmark import targets
    from albert_tf.benchmark.suite import peers_note
    meta = {"cpu": cpu.describe(), "threads": plan.threads,
            "weights": "random (seeded) for official configs",
            "peak": "fp32 runtimes vs the FMA peak; int8 runtimes vs the machine's int8 "
                    "peak (AMX where the CPU has AMX-INT8) and, in their own column, vs the "
                    "vector int8 peak (VNNI, or AVX2 vpmaddubsw) (albert_tf/benchmark/cpu.py)"}
    bf16 = [r for r in plan.runtimes if targets.get(r).arithmetic == "bf16"]
    if bf16:
        meta["bf16"] = (f"{', '.join(bf16)}: bfloat16 "
                        "inference (a 16-bit float peer, not fp32), timed against the fp32 "
                        "peak like the fp32 runtimes")
    if results.skipped:
        meta["skipped"] = results.skipped
    if results.failed:
        meta["failed"] = results.failed
    note = peers_note(plan.runtimes, results.rows, {**results.skipped, **results.failed})
    if note:
        print(note, flush=True)
        meta["peers"] = note
    if results.end_to_end:
        meta["sst2_end_to_end"] = ("official configs: their random encoder + a random 2-class "
                                   "head (accuracy n/a); --model_dirs: their trained weights")
    return meta


def _compressed(plan: BenchmarkPlan, to_time: list[tuple[str, str]], work: str, cpu) -> int:
    """``--compressed``: every model's rows (`albert_tf.benchmark.compressed`), then the
    summary lines and the table; exits 1 when a target failed, as the suite does."""
    import statistics

    from albert_tf.benchmark import compressed
    choice = plan.compressed
    the_plan, sparsities, patterns = choice.plan, choice.sparsities, choice.patterns
    loads = [os.getloadavg()[0]]   # the 1-minute load average, at every progress line

    def echo(line: str) -> None:
        print(line, flush=True)
        loads.append(os.getloadavg()[0])
    echo(f"--compressed: baselines {', '.join(the_plan.baselines)}; 4-bit "
         f"{', '.join(the_plan.q4) or 'none'}; sparse {', '.join(the_plan.sparse) or 'none'}; "
         f"patterns {', '.join(patterns)}; sparsities "
         f"{', '.join(compressed.percent(s) for s in sparsities)}; structured "
         f"{', '.join(r.name for r in the_plan.structured) or 'none'}")
    rows, skipped, failed = [], {}, {}
    for index, (name, model_dir) in enumerate(to_time, 1):
        echo(f"[{index}/{len(to_time)}] {name}")
        rows += compressed.benchmark_compressed(
            name, model_dir, the_plan, sparsities, patterns, plan.shapes, work, plan.data_dir,
            plan.threads, plan.min_seconds, cpu, echo=echo, skipped=skipped, failed=failed,
            rounds=plan.rounds)
    meta = {"cpu": cpu.describe(), "threads": plan.threads,
            "1-minute load average during the run (min / median / max)":
                f"{min(loads):.2f} / {statistics.median(loads):.2f} / {max(loads):.2f}"}
    if skipped:
        meta["skipped"] = "; ".join(f"{r}: {why}" for r, why in skipped.items())
    if failed:
        meta["failed"] = "; ".join(f"{r}: {why}" for r, why in failed.items())
    print(compressed.write_report(plan.output_dir, rows, meta), flush=True)
    for key, value in meta.items():
        print(f"{key}: {value}", flush=True)
    print(f"wrote {os.path.join(plan.output_dir, 'compressed.md')} and compressed.json",
          flush=True)
    return 1 if failed else 0


def run() -> None:
    cli.run_app(main, define_flags, __doc__)


if __name__ == "__main__":
    run()
