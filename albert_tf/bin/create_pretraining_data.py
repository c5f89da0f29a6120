"""albert-tf-create-pretraining-data: masked-LM + sentence-order TFRecords from raw text.

    albert-tf-create-pretraining-data --output_file=pretraining/tutorial.tfrecord \\
        --input_file="$ALBERT_TF_DATA_DIR/corpus/python-docs/tutorial/*.txt" --document_per_file \\
        --vocab_file=runs/sst2/best/vocab.model --max_seq_length=128 \\
        --max_predictions_per_seq=20 --dupe_factor=2 --num_workers=2 --num_shards=2

(the Python tutorial, one document per file, with the tour model's vocabulary; the IMDB
corpus, documents separated by blank lines: --input_file=$ALBERT_TF_DATA_DIR/corpus/imdb-unsup.txt,
65 MB, minutes). Flags as the original ALBERT script, plus --num_workers / --num_shards
(sharded output: OUTPUT-00000-of-0000N) and --summary_file. Streams: memory does not grow
with corpus size. --vocab_file is a SentencePiece model (vocab.model) or a WordPiece
vocab.txt, told apart by content (--spm_model_file, the original name, is an alias); with
WordPiece a whole word is a piece and the ## pieces after it.

Deterministic: the files are a function of the input files' contents, the vocabulary and
the flags; --num_workers only sets how many shards are written at once (but the default
--num_shards is --num_workers: give --num_shards for files that do not depend on the
machine). Restartable: each shard is written to a hidden partial file and renamed when
complete, with a completion record (.NAME.done.json: records, sha256, inputs and flags);
running the same command again after a crash or kill keeps the finished shards, rewrites
the others and removes partial files; changed flags or inputs rewrite everything. The
summary (printed at the end, with the files written) lists reused_shards, written_shards
and invalidated_shards (with the reason), and shard_records (records per shard). Shards an
earlier run wrote with another --num_shards are removed once the new ones are complete
(removed_stale_outputs: a glob of the output would read them too); files of those names
albert-tf cannot tell it wrote are left alone and listed (stale_outputs).

--runner=beam writes the shards through an Apache Beam pipeline (pip install
'albert-tf[beam]'; albert_tf/data/pretraining_beam.py): the same files, byte for byte, and
summary as the default --runner=local for the same flags and --num_shards.
--beam_pipeline_options are Beam's flags, comma-separated, e.g.
--beam_pipeline_options=--runner=FnApiRunner,--direct_num_workers=2 (without a --runner=
there: FnApiRunner, Beam's in-process runner, which works offline).
"""

from __future__ import annotations

import json
import sys

from absl import app, flags

from albert_tf import cli

FLAGS = flags.FLAGS


def define_flags() -> None:
    """Defines the flags (called by `run`, not at import)."""
    flags.DEFINE_list("input_file", None, "Input text files or globs (comma-separated).")
    flags.DEFINE_string("output_file", None, "Output TFRecord path (shards get -NNNNN-of-NNNNN).")
    flags.DEFINE_string("vocab_file", None, "Vocabulary: a SentencePiece model (vocab.model) "
                        "or a WordPiece vocab.txt, or a model directory holding one.")
    flags.DEFINE_alias("spm_model_file", "vocab_file")
    flags.DEFINE_bool("do_lower_case", True, "Lower-case the input text.")
    flags.DEFINE_bool("do_whole_word_mask", True, "Mask whole words (n-grams of words).")
    flags.DEFINE_integer("max_seq_length", 512, "Maximum sequence length.")
    flags.DEFINE_integer("max_predictions_per_seq", 20, "Maximum masked LM predictions per sequence.")
    flags.DEFINE_integer("random_seed", 12345, "Random seed.")
    flags.DEFINE_integer("dupe_factor", 40, "Number of times to duplicate the input with different masks.")
    flags.DEFINE_float("masked_lm_prob", 0.15, "Masked LM probability.")
    flags.DEFINE_float("short_seq_prob", 0.1, "Probability of a shorter target sequence length.")
    flags.DEFINE_integer("ngram", 3, "Maximum n-gram length to mask (n drawn with weight 1/n).")
    flags.DEFINE_bool("favor_shorter_ngram", False, "Reverse the n-gram weights.")
    flags.DEFINE_bool("split_sentences", True, "Split lines into sentences (segments for SOP).")
    flags.DEFINE_bool("document_per_file", False, "Each input file is one document.")
    flags.DEFINE_integer("num_workers", 1, "Worker processes, each writing one shard at a time "
                         "(the output does not depend on it, only on --num_shards).")
    flags.DEFINE_integer("num_shards", None, "Output shards, each a contiguous part of the "
                         "input (default: num_workers); also the unit a rerun keeps.")
    flags.DEFINE_integer("shuffle_buffer", 10000, "Instances held per shard being written, "
                         "for shuffling before writing.")
    flags.DEFINE_string("summary_file", None, "Also write the JSON summary here.")
    flags.DEFINE_bool("progress", True, "Show a progress bar on stderr.")
    flags.DEFINE_enum("runner", "local", ["local", "beam"], "Who writes the shards: this "
                      "machine's --num_workers processes (local) or an Apache Beam pipeline "
                      "(beam; the same files).")
    flags.DEFINE_list("beam_pipeline_options", None, "With --runner=beam: Beam's pipeline "
                      "options, comma-separated (default --runner=FnApiRunner, in-process; "
                      "e.g. --runner=FnApiRunner,--direct_num_workers=2, or "
                      "--runner=DataflowRunner,--project=...,--region=...).")
_REQUIRED = ["input_file", "output_file", "vocab_file"]


def _has_text(path: str) -> bool:
    """Whether ``path`` holds anything but whitespace (reads up to the first such byte)."""
    from albert_tf.data.documents import open_input
    with open_input(path) as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            if chunk.strip():
                return True
    return False


def check_text_inputs(files: list[str]) -> None:
    """Every input file is text: a TFRecord (the creator's own output) or a binary file is
    an `InputError` naming it, before anything is read or written
    (`albert_tf.data.input_checks.creation_input_problem`: its first 64 KiB)."""
    from albert_tf import user_inputs
    from albert_tf.data import input_checks
    from albert_tf.data.documents import open_input
    for path in files:
        with open_input(path) as f:
            problem = input_checks.creation_input_problem(path, f.read(input_checks.HEAD_BYTES))
        if problem:
            raise user_inputs.InputError(problem)


def check_inputs() -> None:
    """Zero or negative counts and input files without text (the run would write empty
    shards and exit 0) as one-line usage errors, before anything is written."""
    from albert_tf import user_inputs
    from albert_tf.data.documents import resolve_inputs
    from albert_tf.text.spm_training import VocabularyError
    try:
        for flag in ("num_workers", "num_shards", "shuffle_buffer"):
            user_inputs.at_least(FLAGS[flag].value, f"--{flag}")
        files = resolve_inputs(FLAGS.input_file)
        check_text_inputs(files)
        if not any(_has_text(path) for path in files):
            raise user_inputs.InputError(
                f"--input_file: no text in {', '.join(files[:3])}"
                f"{' ...' if len(files) > 3 else ''} (empty or only whitespace); pass the "
                "corpus: documents of sentences, one per line, separated by blank lines.")
    except (user_inputs.InputError, VocabularyError, OSError) as e:
        raise app.UsageError(str(e)) from None


def check_runner():
    """--runner=beam: Beam importable and its options valid (one line, nothing written);
    the ``PipelineOptions``, or None with --runner=local."""
    if FLAGS.runner != "beam":
        if FLAGS.beam_pipeline_options:
            raise app.UsageError("--beam_pipeline_options is for --runner=beam; pass "
                                 "--runner=beam or drop it.")
        return None
    from albert_tf.data import pretraining_beam
    try:
        return pretraining_beam.pipeline_options(FLAGS.beam_pipeline_options)
    except (pretraining_beam.BeamUnavailable, ValueError) as e:
        raise app.UsageError(str(e)) from None


def main(argv: list[str]) -> None:
    del argv
    missing = [f"--{name}" for name in _REQUIRED if FLAGS[name].value is None]
    if missing:
        raise app.UsageError(f"required: {', '.join(missing)}")
    check_inputs()
    beam_options = check_runner()
    from albert_tf.data.pretraining_data import (CreationError, PretrainingConfig,
                                                 create_pretraining_data)
    from albert_tf.text.spm_training import VocabularyError
    config = PretrainingConfig(
        max_seq_length=FLAGS.max_seq_length, max_predictions_per_seq=FLAGS.max_predictions_per_seq,
        masked_lm_prob=FLAGS.masked_lm_prob, dupe_factor=FLAGS.dupe_factor,
        short_seq_prob=FLAGS.short_seq_prob, ngram=FLAGS.ngram, random_seed=FLAGS.random_seed,
        do_lower_case=FLAGS.do_lower_case, do_whole_word_mask=FLAGS.do_whole_word_mask,
        favor_shorter_ngram=FLAGS.favor_shorter_ngram, split_sentences=FLAGS.split_sentences,
        document_per_file=FLAGS.document_per_file, shuffle_buffer=FLAGS.shuffle_buffer)
    from albert_tf import resources       # official_configs/vocab/... is the shipped file
    log = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    try:
        if beam_options is not None:
            from albert_tf.data.pretraining_beam import create_pretraining_data_beam
            summary = create_pretraining_data_beam(
                FLAGS.input_file, FLAGS.output_file, resources.resolve(FLAGS.vocab_file),
                config, num_shards=FLAGS.num_shards or FLAGS.num_workers,
                beam_options=beam_options, progress=FLAGS.progress, log=log)
        else:
            summary = create_pretraining_data(FLAGS.input_file, FLAGS.output_file,
                                              resources.resolve(FLAGS.vocab_file),
                                              config, num_workers=FLAGS.num_workers,
                                              num_shards=FLAGS.num_shards,
                                              progress=FLAGS.progress, log=log)
    except (VocabularyError, FileNotFoundError, ValueError) as e:
        raise app.UsageError(str(e))
    except CreationError as e:
        cli.fail(e, 1)
    text = json.dumps(summary, indent=1)
    print(text)
    if FLAGS.summary_file:
        with open(FLAGS.summary_file, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    records = sum(summary.get("shard_records") or [])
    print(f"wrote {', '.join(summary.get('outputs') or [FLAGS.output_file])} ({records} records)"
          + (f" and {FLAGS.summary_file}" if FLAGS.summary_file else ""))


def run() -> None:
    cli.run_app(main, define_flags, __doc__)


if __name__ == "__main__":
    run()
