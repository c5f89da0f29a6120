"""`albert-tf-create-pretraining-data --runner=beam`: the shards written by an Apache Beam
pipeline instead of this machine's worker processes.

Everything but the writing is `albert_tf.data.pretraining_data.create_pretraining_data`'s
own, in this process: the checks (inputs, vocabulary, output paths: one line, nothing
written), the shard plan (`plan_shards`), what a rerun keeps (completion records), the lock
and the summary. The shards still to write go through the pipeline

    beam.Create(shard indices) | beam.Reshuffle() | beam.Map(write shard i)

whose step is the local path's `write_shard` (a partial file renamed when complete, then
its completion record), so the files are byte for byte those of the local path for the
same flags and ``--num_shards``, whatever the runner and its worker count; the per-shard
record counts come back through Beam counters (namespace ``albert_tf``) and are checked
against the completion records the driver reads to build the summary.

The output must be a path that the workers and this process share (a local disk with the
local runner; a mounted shared filesystem for a distributed one). Inputs may also be
object-store paths (``gs://``, ``s3://``): they are matched and read through
``apache_beam.io.filesystems.FileSystems`` (`albert_tf.data.documents.open_input`).

``--beam_pipeline_options`` is a comma-separated list of Beam's flags; without a
``--runner=`` it gets ``--runner=FnApiRunner`` (Beam's in-process portable runner:
``DirectRunner`` may hand the pipeline to Prism, which downloads a binary at run time and
fails offline), and with ``--direct_num_workers=N`` (N > 1)
``--direct_running_mode=multi_processing`` (N worker processes; Beam's default mode runs
one). apache_beam is imported here only (``pip install 'albert-tf[beam]'``).
"""

from __future__ import annotations

import copy
import os

DEFAULT_RUNNER = "FnApiRunner"
INSTALL = "pip install 'albert-tf[beam]'"
NAMESPACE = "albert_tf"


class BeamUnavailable(ImportError):
    """apache_beam cannot be imported; the message is one line naming the extra."""


def check_available() -> None:
    try:
        import apache_beam  # noqa: F401
    except ImportError as e:
        raise BeamUnavailable(f"--runner=beam needs Apache Beam ({e}): {INSTALL}") from None


def _given(args: list[str], name: str) -> str | None:
    values = [a.split("=", 1)[1] for a in args if a.startswith(f"--{name}=")]
    return values[-1] if values else None


def pipeline_args(options: list[str] | None) -> list[str]:
    """``--beam_pipeline_options``' items as Beam's argv, with ``--runner=FnApiRunner``
    unless one names a runner, and ``--direct_running_mode=multi_processing`` when
    ``--direct_num_workers`` is more than 1 and no mode is given (Beam's default,
    ``in_memory``, runs one worker whatever the number)."""
    args = [a.strip() for a in options or [] if a.strip()]
    if _given(args, "runner") is None and "--runner" not in args:
        args.insert(0, f"--runner={DEFAULT_RUNNER}")
    workers = _given(args, "direct_num_workers")
    if workers not in (None, "1") and _given(args, "direct_running_mode") is None \
            and "--direct_running_mode" not in args:
        args.append("--direct_running_mode=multi_processing")
    return args


def pipeline_options(options: list[str] | None):
    """``PipelineOptions`` from ``--beam_pipeline_options``; raises ``ValueError`` (one line)
    for an argument Beam does not know or a runner it cannot create, before anything is
    written."""
    check_available()
    from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
    from apache_beam.runners.runner import create_runner
    args = pipeline_args(options)
    for arg in args:
        if not arg.startswith("-"):
            raise ValueError(f"--beam_pipeline_options: {arg!r} is not a --flag=value; pass "
                             "Beam's flags, comma-separated, e.g. "
                             f"--runner={DEFAULT_RUNNER},--direct_num_workers=2")
    parsed = PipelineOptions(args)
    unknown = _unknown_args(args)
    if unknown:
        raise ValueError(f"--beam_pipeline_options: Beam does not know {unknown[0]!r}; pass "
                         "Beam's pipeline options (python -m apache_beam.examples.wordcount "
                         "--help lists them)")
    runner = parsed.view_as(StandardOptions).runner
    try:
        create_runner(runner)
    except (ValueError, ImportError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ValueError(f"--beam_pipeline_options: --runner={runner}: {first}") from None
    return parsed


def _unknown_args(args: list[str]) -> list[str]:
    """The arguments of ``args`` that no Beam options class parses (``PipelineOptions``
    would drop them with a warning)."""
    import argparse
    from apache_beam.options import pipeline_options as po
    parser = getattr(po, "_BeamArgumentParser", argparse.ArgumentParser)(allow_abbrev=False,
                                                                         add_help=False)

    def error(message):                 # argparse would print usage and exit
        raise ValueError(f"--beam_pipeline_options: {message}")
    parser.error = error
    classes, todo = [], [po.PipelineOptions]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in classes:
                classes.append(sub)
                todo.append(sub)
    for cls in [po.PipelineOptions] + classes:
        try:
            cls._add_argparse_args(parser)
        except argparse.ArgumentError:          # defined twice: the first one counts
            pass
    _, rest = parser.parse_known_args(args)
    return [a for a in rest if a.startswith("-")]


# ------------------------------------------------------------------------------ workers
_MAKERS: dict = {}


def _maker(job):
    """One `InstanceMaker` per worker process and job (the tokenizer loads once)."""
    from albert_tf.data.pretraining_data import shard_maker
    key = (job.vocab_file, job.key)
    if key not in _MAKERS:
        _MAKERS.clear()
        _MAKERS[key] = shard_maker(job.vocab_file, job.config)
    return _MAKERS[key]


def write_one(index: int, job):
    """The pipeline's step: writes shard ``index`` of ``job`` (a `ShardJob`) exactly as the
    local path does; yields ``(index, records)``."""
    from apache_beam.metrics import Metrics
    from albert_tf.data.pretraining_data import write_shard
    plan = next(p for p in job.todo if p.index == index)
    # A copy per call (its random stream and statistics): threads of one worker process
    # may write two shards at once; the tokenizer and tables are shared.
    maker = copy.copy(_maker(job))
    record = write_shard(plan, job.files, job.sizes, maker, job.fingerprint, job.key)
    Metrics.counter(NAMESPACE, f"records-{index:05d}").inc(record["records"])
    Metrics.counter(NAMESPACE, "instances").inc(record["stats"]["instances"])
    yield index, record["records"]


def build_pipeline(pipeline, job):
    import apache_beam as beam
    return (pipeline
            | "Shards" >> beam.Create(sorted(p.index for p in job.todo))
            | "Spread" >> beam.Reshuffle()
            | "WriteShard" >> beam.FlatMap(write_one, job=job))


def _one_line(e: BaseException) -> str:
    """A pipeline failure in one line: the innermost error Beam wraps."""
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    errors = [line for line in lines if "Error:" in line or "Exception:" in line]
    text = (errors or lines or [type(e).__name__])[-1]
    return text if len(text) <= 400 else text[:400] + " ..."


def run_pipeline(options, job) -> dict[int, dict]:
    """Writes the shards ``job.todo`` through a Beam pipeline; their completion records."""
    import apache_beam as beam
    from apache_beam.metrics.metric import MetricsFilter
    from albert_tf.data.pretraining_shards import (CreationError, completion_record_path,
                                                   read_json, remove_partial_files)
    try:
        pipeline = beam.Pipeline(options=options)
        build_pipeline(pipeline, job)
        result = pipeline.run()
        result.wait_until_finish()
    except Exception as e:
        remove_partial_files(job.paths)
        raise CreationError(f"the Beam pipeline failed: {_one_line(e)}") from e
    counts = {}
    try:
        query = result.metrics().query(MetricsFilter().with_namespace(NAMESPACE))
        for counter in query["counters"]:
            name = counter.key.metric.name
            if name.startswith("records-"):
                value = counter.committed if counter.committed is not None else counter.attempted
                counts[int(name.split("-", 1)[1])] = value
    except (NotImplementedError, AttributeError, KeyError):
        counts = {}                   # a runner without metrics: the records alone
    records = {}
    for plan in job.todo:
        record = read_json(completion_record_path(plan.path))
        if not isinstance(record, dict) or record.get("key") != job.key \
                or not os.path.exists(plan.path):
            raise CreationError(f"the Beam pipeline finished but shard {plan.index} "
                                f"({plan.path}) has no completion record of this run: is "
                                "the output on a filesystem the workers share?")
        if plan.index in counts and counts[plan.index] != record["records"]:
            raise CreationError(f"shard {plan.index}: the pipeline counted "
                                f"{counts[plan.index]} records, its completion record says "
                                f"{record['records']}")
        records[plan.index] = record
    return records


def create_pretraining_data_beam(input_files, output_file: str, vocab_file: str, config=None,
                                 num_shards: int | None = None, beam_options=None,
                                 progress: bool = True, log=None) -> dict:
    """`create_pretraining_data` with the shards written by a Beam pipeline (``beam_options``:
    ``--beam_pipeline_options``' list, or a ``PipelineOptions``); the same files and
    summary. ``num_shards`` defaults to 1, as the local path's with one worker."""
    from albert_tf.data.pretraining_data import create_pretraining_data
    options = beam_options
    if options is None or isinstance(options, (list, tuple)):
        options = pipeline_options(list(options or []))
    return create_pretraining_data(
        input_files, output_file, vocab_file, config, num_workers=1, num_shards=num_shards,
        progress=progress, log=log, write_shards=lambda job: run_pipeline(options, job))


__all__ = ["BeamUnavailable", "DEFAULT_RUNNER", "check_available",
           "create_pretraining_data_beam", "pipeline_args", "pipeline_options",
           "run_pipeline", "write_one"]
