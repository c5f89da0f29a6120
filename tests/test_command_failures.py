"""Bad input to every console script: one line naming the problem and the fix, a non-zero
exit, no traceback, nothing written (docs/robustness.md, "Bad input: one line, nothing
written").

`CASES` is the table: a console script, its arguments and the words its one stderr line
must hold. Arguments name shared artifacts by placeholder (`ARTIFACTS`: a finetune run
directory, its model directory, a pretrained encoder, TFLite / ONNX / OpenVINO / SavedModel
exports of it, empty and whitespace-only files), built once per module; each case runs the
installed script (`tests/console_scripts.py`) in a fresh empty directory, without
``ALBERT_TF_DATA_DIR``, a few at a time, and must leave that directory empty and the
artifacts unchanged. Outputs are relative (``out``, ``runs/nope``), so "nothing written"
is "the directory is still empty".

The table of docs/robustness.md is this one, run (the test checks they agree)::

    .venv/bin/python tests/test_command_failures.py --markdown      # print it
    .venv/bin/python tests/test_command_failures.py --update-docs   # rewrite the docs' table
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import os
import py_compile
import re
import shutil
import subprocess
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))   # run as a script too
sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests.*
from console_scripts import NOISE, env, path  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs", "robustness.md")
DOCS_BEGIN = "<!-- command failures table: begin -->"
DOCS_END = "<!-- command failures table: end -->"
REGENERATE = ".venv/bin/python tests/test_command_failures.py --update-docs"
PROCESSES = int(os.environ.get("ALBERT_TF_TEST_PROCESSES", "3"))  # at a time (2 cores)


@dataclasses.dataclass(frozen=True)
class Case:
    """``script args`` must exit non-zero with one stderr line holding every ``expect``.

    ``args``, ``expect`` and ``env`` values may name `ARTIFACTS` as ``{name}``;
    ``{data}`` is the real data directory. ``env`` adds variables (else none of
    albert-tf's). ``before_tf``: the refusal must come before TensorFlow is imported (the
    script runs with ``import tensorflow`` made to fail: `BLOCK_TENSORFLOW`), i.e. before
    any work. ``read_only_cwd``: the working directory is a read-only file system (a
    bind mount in a private mount namespace)."""

    id: str
    script: str
    args: tuple[str, ...]
    expect: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()
    before_tf: bool = False
    read_only_cwd: bool = False
    timed: bool = False


def case(id: str, script: str, args: str | tuple, *expect: str, before_tf: bool = False,
         read_only_cwd: bool = False, timed: bool = False, **environment: str) -> Case:
    """``timed``: the line holds figures measured on this machine (speedups, latencies),
    shown as ``N`` in the docs' table so that it is the same on every run."""
    args = tuple(args.split()) if isinstance(args, str) else tuple(args)
    return Case(id, script, args, expect, tuple(environment.items()), before_tf, read_only_cwd,
                timed)


MEASURED = re.compile(r"\d+\.\d+(x| ms)")   # a timed case's figures (`Case.timed`)


# Runs the console script named by argv[1] with the rest of argv, with any import of
# TensorFlow raising a BaseException (no `except Exception` of the package can turn it into
# a polite line): a refusal that is made before TensorFlow loads still prints its one line;
# one made after prints this traceback.
BLOCK_TENSORFLOW = """
import importlib.abc, sys
from importlib import metadata
class TensorFlowImportedBeforeTheCheck(BaseException):
    pass
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("tensorflow", "tf_keras", "keras"):
            raise TensorFlowImportedBeforeTheCheck(name)
sys.meta_path.insert(0, Block())
sys.argv = sys.argv[1:]
entry = next(e for e in metadata.entry_points(group="console_scripts") if e.name == sys.argv[0])
sys.exit(entry.load()())
"""
# Makes $0 (the case's working directory) a read-only file system, then runs "$@".
READ_ONLY = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"'


DATA = "--data_dir={data}"
TINY = "--config_file=tiny_ci"
CASES = [
    # Training: no weights to evaluate is an error, not random-weight accuracy.
    case("finetune-eval-nothing-trained", "albert-tf-finetune",
         f"--task=sst2 --mode=eval --model_dir=runs/nope {TINY} {DATA}",
         "--mode=eval", "runs/nope", "no training checkpoint", "--init_checkpoint"),
    case("finetune-predict-nothing-trained", "albert-tf-finetune",
         f"--task=sst2 --mode=predict --model_dir=runs/nope {TINY} {DATA}",
         "--mode=predict", "no training checkpoint"),
    case("finetune-eval-model-directory", "albert-tf-finetune",
         f"--task=sst2 --mode=eval --model_dir={{model}} {TINY} {DATA}",
         "is a model directory", "--init_checkpoint={model}"),
    case("finetune-eval-pretrained-encoder", "albert-tf-finetune",
         f"--task=sst2 --mode=eval --init_checkpoint={{encoder}} --model_dir=out {TINY} {DATA}",
         "lacks", "classifier", "would stay random"),
    case("finetune-init-run-directory", "albert-tf-finetune",
         f"--task=sst2 --init_checkpoint={{run}} --model_dir=out {TINY} {DATA}",
         "the run directory of albert-tf-finetune", "{run}/best or {run}/final"),
    case("finetune-init-onnx-export", "albert-tf-finetune",
         f"--task=sst2 --init_checkpoint={{onnx}} --model_dir=out {TINY} {DATA}",
         "is an ONNX export", "not a model directory"),
    case("pretrain-eval-nothing-trained", "albert-tf-pretrain",
         f"--mode=eval --eval_files={{text}} --model_dir=out {TINY}",
         "--mode=eval", "no training checkpoint"),
    case("pretrain-no-training-files", "albert-tf-pretrain",
         f"--train_files={{missing}}-*.tfrecord --model_dir=out {TINY}",
         "no file matches", "albert-tf-create-pretraining-data"),
    # Raw text (--train_source=text): text, a vocabulary that fits the model, a dispatcher.
    case("pretrain-text-is-records", "albert-tf-pretrain",
         f"--train_source=text --train_files={{records}} --model_dir=out {TINY}",
         "{records}", "is a TFRecord file, not raw text", "--train_source=records"),
    case("pretrain-text-not-a-vocabulary", "albert-tf-pretrain",
         f"--train_source=text --train_files={{text}} --model_dir=out {TINY} "
         "--params_override=task.vocab_file={text}",
         "task.vocab_file (source=text tokenizes with it)", "{text}"),
    case("pretrain-text-vocabulary-too-large", "albert-tf-pretrain",
         f"--train_source=text --train_files={{text}} --model_dir=out {TINY} "
         "--params_override=model.vocab_size=4000",
         "8000 tokens", "4000 rows", "model.vocab_size=8000"),
    case("pretrain-bad-data-service", "albert-tf-pretrain",
         f"--train_source=text --train_files={{text}} --model_dir=out {TINY} "
         "--params_override=task.train_data.data_service=grpc://dispatcher",
         "task.train_data.data_service", "not grpc://HOST:PORT"),
    # Export: the model directory, not a run directory or an export; numbers are numbers.
    case("export-run-directory", "albert-tf-export",
         "--model_dir={run} --format=tflite --output=out", "{run}/best or {run}/final"),
    case("export-tflite-export", "albert-tf-export",
         "--model_dir={tflite} --format=tflite --output=out",
         "is a TFLite export", "not a model directory"),
    case("export-missing-model", "albert-tf-export",
         "--model_dir={missing} --format=onnx --output=out", "{missing}: no such directory"),
    case("export-seq-lengths-not-numbers", "albert-tf-export",
         "--model_dir={model} --format=tflite --output=out --seq_lengths=32,abc",
         "--seq_lengths", "'abc' is not an integer"),
    case("export-unknown-format", "albert-tf-export",
         "--model_dir={model} --format=tflight --output=out", "--format=tflight", "tflite"),
    case("export-zero-batch", "albert-tf-export",
         "--model_dir={model} --format=onnx --output=out --batch_size=0", "--batch_size=0"),
    # Sparse weights (--sparse_weights): a runtime without sparse kernels for the pattern is
    # refused before anything is read, naming the exports that run it; a model whose zeros
    # do not form it, after reading the model.
    case("export-sparse-weights-onnx", "albert-tf-export",
         "--model_dir={model} --format=onnx --output=out --sparse_weights=1x16",
         "--sparse_weights=1x16 --format=onnx: ONNX Runtime multiplies the zeros",
         "sparse weights run on: tflite none (1x4), tflite int8 (1x16), openvino int8 "
         "(unstructured, AMX CPUs)."),
    case("export-sparse-weights-int8-1x4", "albert-tf-export",
         "--model_dir={model} --format=tflite --quantization=int8 --output=out "
         "--sparse_weights=1x4", "--sparse_weights=1x4 --format=tflite --quantization=int8",
         "takes 1x16 blocks", "1x4 runs on: tflite none (1x4), openvino int8 (unstructured, "
         "AMX CPUs)."),
    case("export-sparse-weights-dense-model", "albert-tf-export",
         "--model_dir={model} --format=tflite --quantization=int8 --output=out "
         "--sparse_weights=auto", "--sparse_weights=auto: the model has 0.0% zeros",
         "prune it first"),
    # Compress and convert take model directories too.
    case("compress-missing-model", "albert-tf-compress",
         f"--init_model={{missing}} --model_dir=out --stages=pruning {DATA}",
         "--init_model={missing}: no such directory"),
    case("compress-run-directory", "albert-tf-compress",
         f"--init_model={{run}} --model_dir=out --stages=pruning {DATA}",
         "{run}/best or {run}/final"),
    case("compress-pretrained-model", "albert-tf-compress",
         f"--init_model={{encoder}} --model_dir=out --stages=pruning {DATA}",
         "pretrained model directory (no task.json)", "finetuned"),
    case("convert-to-hf-run-directory", "albert-tf-convert",
         "--to=hf --input={run} --output_dir=out", "{run}/best or {run}/final",
         "nothing was written"),
    case("convert-to-keras-hub-onnx-export", "albert-tf-convert",
         "--to=keras_hub --input={onnx} --output_dir=out", "is an ONNX export"),
    case("convert-from-hf-missing", "albert-tf-convert",
         "--from=hf --input={missing} --output_dir=out", "{missing}", "does not exist"),
    # Configs, lists and numbers.
    case("run-empty-experiment", "albert-tf-run", f"--experiment={{empty}} {DATA}",
         "{empty}: the file is empty"),
    case("info-unknown-sharing", "albert-tf-info", "--models=albert_base --sharing=al",
         "sharing", "'al'", "attention"),
    case("benchmark-malformed-shape", "albert-tf-benchmark",
         "--models=albert_base --runtimes=tf --shapes=1x", "'1x' is not BATCHxSEQ"),
    case("benchmark-unknown-model", "albert-tf-benchmark",
         "--models=nope --runtimes=tf --shapes=1x16", "no official model config named 'nope'"),
    case("benchmark-zero-rounds", "albert-tf-benchmark",
         "--models=albert_base --runtimes=tf --rounds=0", "--rounds=0"),
    case("benchmark-run-directory", "albert-tf-benchmark",
         "--models= --model_dirs={run} --runtimes=tf --shapes=1x16", "{run}/best"),
    # Vocabularies and pretraining data from empty text.
    case("train-vocab-empty-input", "albert-tf-train-vocab",
         "--type=wordpiece --input={empty} --output=out", "no text to train on"),
    case("train-spm-blank-input", "albert-tf-train-spm",
         "--input={blank} --model_prefix=out/spm", "no text to train on"),
    case("train-vocab-zero-size", "albert-tf-train-vocab",
         "--type=sentencepiece --input={text} --output=out --vocab_size=0", "--vocab_size=0"),
    case("pretraining-data-empty-input", "albert-tf-create-pretraining-data",
         "--input_file={empty} --output_file=out/x.tfrecord --vocab_file={model}",
         "--input_file: no text in {empty}", "(empty or only whitespace)"),
    case("pretraining-data-no-instance", "albert-tf-create-pretraining-data",
         "--input_file={one_sentence} --output_file=out/x.tfrecord --vocab_file={model} "
         "--noprogress",
         "no training instance", "at least two sentences", "no records were written"),
    case("pretraining-data-zero-workers", "albert-tf-create-pretraining-data",
         "--input_file={text} --output_file=out/x.tfrecord --vocab_file={model} --num_workers=0",
         "--num_workers=0"),
    case("saved-model-cli-model-directory", "albert-tf-saved-model-cli",
         "show --dir {model} --all", "not a SavedModel", "--format=saved_model"),
    # The edge tools: text, files and exports of every format.
    case("tflite-run-empty-text", "albert-tflite-run", ("--model={tflite}", "--text="),
         "--text is empty"),
    case("tflite-run-blank-text", "albert-tflite-run", ("--model={tflite}", "--text=   "),
         "--text is only whitespace"),
    case("tflite-run-empty-file", "albert-tflite-run",
         "--model={tflite} --input_file={empty}", "{empty} is empty"),
    case("tflite-run-empty-line", "albert-tflite-run",
         "--model={tflite} --input_file={holes}", "line 3 has an empty text"),
    case("tflite-run-saved-model", "albert-tflite-run", "--model={saved_model} --text=hi",
         "is a SavedModel", "albert-tf-saved-model-cli", "TF Serving"),
    case("tflite-run-model-directory", "albert-tflite-run", "--model={model} --text=hi",
         "not an export", "albert-tf-export --model_dir={model}"),
    case("tflite-run-onnx-without-onnxruntime", "albert-tflite-run",
         "--model={onnx} --text=hi", "is an ONNX export", "pip install 'albert-tf[onnx]'",
         PYTHONPATH="{no_onnxruntime}"),
    case("tflite-run-zero-threads", "albert-tflite-run", "--model={tflite} --text=hi --threads=0",
         "--threads=0"),
    case("tflite-evaluate-missing-model", "albert-tflite-evaluate",
         f"--model={{missing}} --task=sst2 {DATA}", "{missing}: no such file or directory"),
    case("tflite-evaluate-zero-limit", "albert-tflite-evaluate",
         f"--model={{tflite}} --task=sst2 --limit=0 {DATA}", "--limit=0"),
    case("tflite-benchmark-onnx-export", "albert-tflite-benchmark", "--model={onnx}",
         "is an ONNX export", "takes a TFLite export", "albert-tf-benchmark"),
    case("tflite-benchmark-unknown-signature", "albert-tflite-benchmark",
         "--model={tflite} --signature=serving", "no signature serving", "serving_default"),
    case("tflite-metadata-run-directory", "albert-tflite-metadata",
         "--model={tflite}/model.tflite --model_dir={run}", "{run}/best or {run}/final"),
    # The edge tools: input files read as they are. A file whose layout is ambiguous (columns
    # without a known header, a tab in plain text, a header it does not know) is refused,
    # naming the flags that read it (--text_column, --input_format), never guessed; a model of
    # another task is not scored without --allow_task_mismatch.
    case("tflite-run-headerless-columns", "albert-tflite-run",
         "--model={tflite} --input_file={label_sentence}",
         "--input_file={label_sentence}: line 1 has 2 tab-separated columns and no known header",
         "--text_column=1", "--input_format=text"),
    case("tflite-run-unknown-header", "albert-tflite-run",
         "--model={tflite} --input_file={unknown_header}",
         "line 1 has 2 tab-separated columns and no known header (sentence, ", "--text_column"),
    case("tflite-run-tab-in-plain-text", "albert-tflite-run",
         "--model={tflite} --input_file={tab_text}",
         "line 2 has 2 tab-separated columns where line 1 has 1", "--input_format=text"),
    case("tflite-run-tab-in-a-tsv-text", "albert-tflite-run",
         "--model={tflite} --input_file={ragged}",
         "line 3 has 3 tab-separated columns where line 1 has 2", "a tab inside a text?"),
    case("tflite-run-commas-in-csv", "albert-tflite-run",
         "--model={tflite} --input_file={commas_csv}",
         "line 1 has 2 comma-separated columns and no known header", "--input_format=text"),
    case("tflite-run-index-over-a-header", "albert-tflite-run",
         "--model={tflite} --input_file={pairs} --text_column=0",
         "line 1 is a header (sentence1, sentence2, label)", "--text_column=sentence1"),
    case("tflite-run-text-column-not-in-header", "albert-tflite-run",
         "--model={tflite} --input_file={unknown_header} --text_column=text",
         "--text_column=text is not in line 1, the header (review, sentiment)"),
    case("tflite-run-text-column-out-of-range", "albert-tflite-run",
         "--model={tflite} --input_file={label_sentence} --text_column=2",
         "--text_column=2 but line 1 has 2 column(s)"),
    case("tflite-run-text-column-whole-lines", "albert-tflite-run",
         "--model={tflite} --input_file={label_sentence} --input_format=text --text_column=1",
         "--input_format=text takes each whole line", "drop one of them"),
    case("tflite-run-text-column-with-text", "albert-tflite-run",
         "--model={tflite} --text=hi --text_column=1", "--text_column reads --input_file"),
    case("tflite-run-text-b-column-alone", "albert-tflite-run",
         "--model={tflite} --input_file={pairs} --text_b_column=sentence2",
         "--text_b_column needs --text_column"),
    case("tflite-run-text-b-with-input-file", "albert-tflite-run",
         "--model={tflite} --input_file={pairs} --text_b=hi",
         "--text_b goes with --text", "--text_b_column"),
    case("tflite-evaluate-another-task", "albert-tflite-evaluate",
         f"--model={{tflite}} --task=cola {DATA}", "was trained on task 'sst2'",
         "not --task=cola", "--allow_task_mismatch"),
    # Output paths (albert_tf/outputs.py): --overwrite replaces only an earlier albert-tf
    # output, never the current directory, ~, an input or a directory of the user's.
    case("export-output-current-directory", "albert-tf-export",
         "--model_dir={model} --format=onnx --output=. --overwrite",
         "--output=. (", "is the current directory"),
    case("export-output-parent-directory", "albert-tf-export",
         "--model_dir={model} --format=tflite --output=.. --overwrite",
         "is a parent of the current directory"),
    case("export-output-home", "albert-tf-export",
         "--model_dir={model} --format=tflite --output=~ --overwrite", "is the home directory",
         HOME="{home}"),
    case("export-output-is-the-model", "albert-tf-export",
         "--model_dir={model} --format=tflite --output={model} --overwrite",
         "it is --model_dir={model}, an input"),
    case("export-output-holds-the-model", "albert-tf-export",
         "--model_dir={model} --format=tflite --output={run} --overwrite",
         "it contains --model_dir={model}"),
    case("export-output-users-directory", "albert-tf-export",
         "--model_dir={model} --format=onnx --output={user_dir} --overwrite",
         "holds files albert-tf did not write", "nothing was touched"),
    case("export-output-earlier-export", "albert-tf-export",
         "--model_dir={model} --format=tflite --output={tflite}",
         "already exists (an earlier albert-tf output: a tflite export", "pass --overwrite"),
    case("convert-keras-hub-users-directory", "albert-tf-convert",
         "--to=keras_hub --input={model} --output_dir={user_dir} --overwrite",
         "--output_dir={user_dir} holds files albert-tf did not write"),
    case("compress-output-inside-the-model", "albert-tf-compress",
         f"--init_model={{model}} --model_dir={{model}}/pruned --stages=pruning {DATA}",
         "lies inside --init_model={model}"),
    # Block-sparse pruning: two patterns at once, a block that does not tile a kernel.
    case("compress-block-size-and-m-by-n", "albert-tf-compress",
         f"--init_model={{model}} --model_dir=out --stages=pruning {DATA} "
         "--params_override=pruning.block_size=16x1,pruning.m_by_n=2:4",
         "pruning.block_size: '16x1' and pruning.m_by_n '2:4'", "set only one"),
    case("compress-block-size-does-not-tile", "albert-tf-compress",
         f"--init_model={{model}} --model_dir=out --stages=pruning {DATA} "
         "--params_override=pruning.block_size=3x1",
         "pruning.block_size: 3x1 cannot prune layer 'group_0_inner_0_attention'",
         "[32, 32] [in, out] is not a whole number of 3x1 blocks"),
    case("finetune-run-holds-init-checkpoint", "albert-tf-finetune",
         f"--task=sst2 --init_checkpoint={{model}} --model_dir={{run}} {TINY} {DATA}",
         "--model_dir={run}: it contains --init_checkpoint={model}"),
    case("pretraining-data-output-is-input", "albert-tf-create-pretraining-data",
         "--input_file={text} --output_file={text} --vocab_file={model}",
         "is --input_file={text}"),
    case("pretraining-data-users-file", "albert-tf-create-pretraining-data",
         "--input_file={text} --output_file={user_dir}/important.txt --vocab_file={model}",
         "albert-tf did not write it", "nothing was touched"),
    # --runner=beam (albert_tf/data/pretraining_beam.py): the same checks, and Beam's own.
    case("pretraining-data-beam-users-file", "albert-tf-create-pretraining-data",
         "--input_file={text} --output_file={user_dir}/important.txt --vocab_file={model} "
         "--runner=beam", "albert-tf did not write it", "nothing was touched"),
    case("pretraining-data-beam-unknown-runner", "albert-tf-create-pretraining-data",
         "--input_file={text} --output_file=out/x.tfrecord --vocab_file={model} --runner=beam "
         "--beam_pipeline_options=--runner=NoSuchRunner",
         "--runner=NoSuchRunner: Unexpected pipeline runner"),
    case("pretraining-data-beam-not-installed", "albert-tf-create-pretraining-data",
         "--input_file={text} --output_file=out/x.tfrecord --vocab_file={model} --runner=beam",
         "--runner=beam needs Apache Beam", "pip install 'albert-tf[beam]'",
         PYTHONPATH="{no_beam}"),
    case("train-vocab-users-directory", "albert-tf-train-vocab",
         "--type=wordpiece --input={text} --output={user_dir} --overwrite",
         "holds files albert-tf did not write"),
    case("run-output-current-directory", "albert-tf-run",
         f"--experiment=run_quick --output_dir=. {DATA}", "is the current directory"),
    # Outputs replaced only by their own kind (issue #44): --overwrite never turns a trained
    # model directory into an export or a conversion; a run directory is new, empty or a run
    # of the same command, and what it writes inside (best/, final/) is checked too; eval
    # and predict neither retrain nor rewrite the run's records. All before TensorFlow loads.
    case("export-overwrite-a-model-directory", "albert-tf-export",
         "--model_dir={model} --format=tflite --output={run}/final --overwrite",
         "--output={run}/final is an albert-tf model directory (weights written by training",
         "not a tflite export (albert-tf-export)", "with or without --overwrite",
         "nothing was touched", before_tf=True),
    case("convert-overwrite-a-model-directory", "albert-tf-convert",
         "--to=hf --input={model} --output_dir={run}/final --overwrite",
         "is an albert-tf model directory", "not a Hugging Face directory", before_tf=True),
    case("finetune-best-holds-users-files", "albert-tf-finetune",
         f"--task=sst2 --model_dir={{run_users_best}} {TINY} {DATA}",
         "--model_dir/best={run_users_best}/best holds files albert-tf did not write",
         "nothing was touched", before_tf=True),
    case("finetune-users-experiment-yaml", "albert-tf-finetune",
         f"--task=sst2 --model_dir={{users_experiment}} {TINY} {DATA}",
         "--model_dir={users_experiment} holds files albert-tf did not write (experiment.yaml)",
         before_tf=True),
    case("finetune-into-a-pretrain-run", "albert-tf-finetune",
         f"--task=sst2 --model_dir={{pretrain_run}} {TINY} {DATA}",
         "is the run directory of albert-tf-pretrain, not the run directory of "
         "albert-tf-finetune", before_tf=True),
    case("finetune-eval-another-task", "albert-tf-finetune",
         f"--task=cola --mode=eval --model_dir={{run}} {DATA}",
         "--task=cola: the run in --model_dir={run} was trained on sst2 (its experiment.yaml)",
         "--init_checkpoint={run}/best", before_tf=True),
    case("finetune-predict-output-exists", "albert-tf-finetune",
         f"--mode=predict --model_dir={{run}} --predict_output={{text}} {DATA}",
         "--predict_output={text} exists", "pass a new path", before_tf=True),
    case("tflite-run-output-file-exists", "albert-tflite-run",
         "--model={tflite} --text=hi --output_file={text}",
         "--output_file={text} exists; pass a new path, or --overwrite to replace it"),
    case("tflite-evaluate-json-exists", "albert-tflite-evaluate",
         f"--model={{tflite}} --task=sst2 --json={{text}} {DATA}",
         "--json={text} exists; pass a new path, or --overwrite"),
    case("finetune-seq-length-past-the-positions", "albert-tf-finetune",
         f"--task=sst2 --model_dir=out --max_seq_length=600 {DATA}",
         "task.max_seq_length=600 (--max_seq_length): longer than the model's 512 positions",
         "pass at most 512", before_tf=True),
    case("pretrain-eval-of-a-finetune-run", "albert-tf-pretrain",
         "--mode=eval --model_dir={run} --eval_files={records}",
         "--model_dir={run} is a run of albert-tf-finetune", "albert-tf-finetune --mode=eval",
         before_tf=True),
    case("tflite-evaluate-json-inside-the-model", "albert-tflite-evaluate",
         f"--model={{tflite}} --task=sst2 --json={{tflite}}/metadata.json --overwrite {DATA}",
         "--json={tflite}/metadata.json: it lies inside --model={tflite}, an input"),
    case("tflite-evaluate-json-inside-a-model-directory", "albert-tflite-evaluate",
         f"--model={{tflite}} --task=sst2 --json={{model}}/config.json --overwrite {DATA}",
         "--json={model}/config.json lies inside {model} (an albert-tf model directory",
         "replaces whole"),
    case("export-saved-model-into-a-model-directory", "albert-tf-export",
         "--model_dir={model} --format=saved_model --output={run}/final",
         "{run}/final is an albert-tf model directory", "not a base directory of SavedModels",
         before_tf=True),
    case("export-saved-model-into-a-models-versions", "albert-tf-export",
         "--model_dir={model} --format=saved_model --output={serving_model}",
         "is one model's directory inside a TF Serving base", before_tf=True),
    case("finetune-train-another-tasks-run", "albert-tf-finetune",
         f"--task=rte --model_dir={{run}} {TINY} {DATA}",
         "--model_dir={run} is a run of task sst2 (its experiment.yaml)",
         "pass a new --model_dir", before_tf=True),
    case("finetune-predict-output-a-directory", "albert-tf-finetune",
         f"--mode=predict --model_dir={{run}} --predict_output=newdir/ {DATA}",
         "--predict_output=newdir/ is a directory", before_tf=True),
    case("finetune-predict-output-under-a-file", "albert-tf-finetune",
         f"--mode=predict --model_dir={{run}} --predict_output={{text}}/p.tsv {DATA}",
         "{text} is a file, not a directory", before_tf=True),
    case("compress-another-init-models-run", "albert-tf-compress",
         f"--init_model={{model}} --model_dir={{compress_run}} --stages=pruning {DATA}",
         "--model_dir={compress_run} holds the compression of --init_model=/elsewhere/model",
         "pass a new --model_dir", before_tf=True),
    case("run-other-settings", "albert-tf-run",
         f"--experiment=run_quick --output_dir={{pipeline_run}} {DATA}",
         "holds a run made with other settings (finetune.max_steps: 1000 -> 2000",
         "pass a new --output_dir", before_tf=True),
    case("export-seq-lengths-past-the-positions", "albert-tf-export",
         "--model_dir={model} --format=tflite --output=out --seq_lengths=16,600",
         "--seq_lengths=16,600: each must be in [3, 128] (128: max_position_embeddings of "
         "{model})", before_tf=True),
    # Damaged files: the file, what cannot read it, the fix; never a traceback.
    case("export-truncated-weights", "albert-tf-export",
         "--model_dir={truncated_weights} --format=tflite --output=out",
         "the weights {truncated_weights}/weights.index / {truncated_weights}/weights.data-* "
         "cannot be read (Read less bytes than requested)", "truncated or damaged"),
    case("export-damaged-weights", "albert-tf-export",
         "--model_dir={damaged_weights} --format=onnx --output=out",
         "cannot be read (", "Checksum does not match", "truncated or damaged"),
    case("compress-truncated-weights", "albert-tf-compress",
         f"--init_model={{truncated_weights}} --model_dir=out --stages=pruning {DATA}",
         "cannot be read (Read less bytes than requested)"),
    case("tflite-run-truncated-tflite", "albert-tflite-run",
         "--model={truncated_tflite} --text=hi",
         "{truncated_tflite}/model.tflite: LiteRT cannot load it", "export it again"),
    case("tflite-run-truncated-onnx", "albert-tflite-run",
         "--model={truncated_onnx} --text=hi",
         "{truncated_onnx}/model.onnx: ONNX Runtime cannot load it", "Protobuf parsing failed"),
    case("tflite-run-truncated-openvino-weights", "albert-tflite-run",
         "--model={truncated_openvino} --text=hi",
         "{truncated_openvino}/model.xml: OpenVINO cannot load it",
         "Incorrect weights in bin file"),
    case("saved-model-cli-truncated", "albert-tf-saved-model-cli",
         "show --dir {truncated_saved_model} --all",
         "the SavedModel {truncated_saved_model} cannot be read", "saved_model.pb"),
    # Storage that cannot be written: refused before any work, naming the path.
    case("export-read-only-directory", "albert-tf-export",
         "--model_dir={model} --format=tflite --output=out",
         "--output=out: cannot write in", "(Read-only file system)", before_tf=True,
         read_only_cwd=True),
    case("finetune-read-only-directory", "albert-tf-finetune",
         f"--task=sst2 --model_dir=runs/sst2 {TINY} {DATA}",
         "--model_dir=runs/sst2: cannot write in", "(Read-only file system)", before_tf=True,
         read_only_cwd=True),
    case("compress-read-only-directory", "albert-tf-compress",
         f"--init_model={{model}} --model_dir=out --stages=pruning {DATA}",
         "--model_dir=out: cannot write in", "(Read-only file system)", before_tf=True,
         read_only_cwd=True),
    case("convert-read-only-directory", "albert-tf-convert",
         "--to=keras_hub --input={model} --output_dir=out",
         "--output_dir=out: cannot write in", "(Read-only file system)", before_tf=True,
         read_only_cwd=True),
    # Fresh pass (issue #44): conversions and the SavedModel CLI. A Hugging Face directory or
    # a keras-hub preset (written by albert-tf-convert --to=...) where a model directory or
    # an export goes is named, with the conversion that makes one; --from names what the
    # input is (an albert-tf model directory: nothing to convert; another format: its
    # --from); the SavedModel CLI says what is wrong with the flags (the signature's inputs,
    # its signatures, --outdir), "damaged" only when the SavedModel cannot be read.
    case("export-hf-directory", "albert-tf-export",
         "--model_dir={hf} --format=tflite --output=out",
         "--model_dir={hf} is a Hugging Face directory",
         "convert it first: albert-tf-convert --from=hf --input={hf} --output_dir=DIR",
         before_tf=True),
    case("finetune-init-hf-directory", "albert-tf-finetune",
         f"--task=sst2 --init_checkpoint={{hf}} --model_dir=out {TINY} {DATA}",
         "--init_checkpoint={hf} is a Hugging Face directory",
         "albert-tf-convert --from=hf --input={hf} --output_dir=DIR", before_tf=True),
    case("finetune-init-keras-hub-preset", "albert-tf-finetune",
         f"--task=sst2 --init_checkpoint={{keras_hub}} --model_dir=out {TINY} {DATA}",
         "--init_checkpoint={keras_hub} is a keras-hub preset",
         "albert-tf-convert --from=keras_hub --input={keras_hub} --output_dir=DIR",
         before_tf=True),
    case("finetune-eval-hf-directory", "albert-tf-finetune",
         f"--task=sst2 --mode=eval --model_dir={{hf}} {DATA}",
         "--mode=eval: --model_dir={hf} is a Hugging Face directory, not a training run",
         "albert-tf-convert --from=hf --input={hf}", "--init_checkpoint=DIR", before_tf=True),
    case("compress-hf-directory", "albert-tf-compress",
         f"--init_model={{hf}} --model_dir=out --stages=pruning {DATA}",
         "--init_model={hf} is a Hugging Face directory", "convert it first", before_tf=True),
    case("benchmark-hf-directory", "albert-tf-benchmark",
         "--models= --model_dirs={hf} --runtimes=tf --shapes=1x16",
         "--model_dirs={hf} is a Hugging Face directory", "--from=hf", before_tf=True),
    case("tflite-run-hf-directory", "albert-tflite-run", "--model={hf} --text=hi",
         "--model={hf} is a Hugging Face directory, not an export",
         "albert-tf-convert --from=hf --input={hf} --output_dir=DIR, then export DIR",
         before_tf=True),
    case("tflite-run-keras-hub-preset", "albert-tflite-run", "--model={keras_hub} --text=hi",
         "--model={keras_hub} is a keras-hub preset, not an export", "--from=keras_hub",
         before_tf=True),
    case("convert-to-hf-hf-directory", "albert-tf-convert",
         "--to=hf --input={hf} --output_dir=out",
         "--input={hf} is a Hugging Face directory already",
         "albert-tf-convert --from=hf --input={hf} --output_dir=DIR", before_tf=True),
    case("convert-from-google-model-directory", "albert-tf-convert",
         "--from=google --input={model} --output_dir=out",
         "--input={model} is an albert-tf model directory already: nothing to convert",
         "drop --from", before_tf=True),
    case("convert-from-hf-model-directory", "albert-tf-convert",
         "--from=hf --input={model} --output_dir=out",
         "--input={model} is an albert-tf model directory already", before_tf=True),
    case("convert-from-hf-keras-hub-preset", "albert-tf-convert",
         "--from=hf --input={keras_hub} --output_dir=out",
         "--input={keras_hub} is a keras-hub preset, not a Hugging Face directory",
         "pass --from=keras_hub", before_tf=True),
    case("convert-from-keras-hub-hf-directory", "albert-tf-convert",
         "--from=keras_hub --input={hf} --output_dir=out",
         "--input={hf} is a Hugging Face directory", "pass --from=hf", before_tf=True),
    case("saved-model-cli-hf-directory", "albert-tf-saved-model-cli", "show --dir {hf} --all",
         "--dir={hf} is a Hugging Face directory, not a SavedModel",
         "--format=saved_model", before_tf=True),
    case("saved-model-cli-wrong-input-key", "albert-tf-saved-model-cli",
         ("run", "--dir", "{saved_model}", "--tag_set", "serve", "--signature_def",
          "serving_default", "--input_exprs", 'sentence=["a gorgeous film"]'),
         "the signature serving_default takes the input(s) text (not sentence)",
         "--input_exprs 'text=[...]'"),
    case("saved-model-cli-unknown-signature", "albert-tf-saved-model-cli",
         ("run", "--dir", "{saved_model}", "--tag_set", "serve", "--signature_def", "nope",
          "--input_exprs", 'text=["a gorgeous film"]'),
         "--signature_def=nope: the SavedModel {saved_model} has no such signature",
         "its signatures: encode, serving_default, tokenize"),
    case("saved-model-cli-outdir-a-file", "albert-tf-saved-model-cli",
         ("run", "--dir", "{saved_model}", "--tag_set", "serve", "--signature_def",
          "serving_default", "--input_exprs", 'text=["a gorgeous film"]', "--outdir={text}"),
         "--outdir={text}: {text} is a file", "pass a directory"),
    # Fresh pass (issue #44): data and tasks. A GLUE task is read only from its own folder
    # (another task's folder as --data_dir scored CoLA as SST-2); a custom task's model or
    # files get one line saying what reads them (never advice that cannot be followed, a
    # dropped row or a traceback); pretraining data is made from text only; the vocabulary
    # fits the model before TensorFlow loads.
    case("tflite-evaluate-another-tasks-folder", "albert-tflite-evaluate",
         "--model={tflite} --task=sst2 --data_dir={data}/glue/CoLA",
         "data directory {data}/glue/CoLA is the folder of GLUE task cola (CoLA/), not task "
         "sst2's", "DATA_DIR/glue/SST-2/ or DATA_DIR/SST-2/", before_tf=True),
    case("finetune-eval-another-tasks-folder", "albert-tf-finetune",
         "--mode=eval --model_dir={run} --data_dir={data}/glue/CoLA",
         "is the folder of GLUE task cola (CoLA/), not task sst2's", before_tf=True),
    case("compress-another-tasks-folder", "albert-tf-compress",
         "--init_model={model} --model_dir=out --stages=pruning --data_dir={data}/glue/CoLA",
         "is the folder of GLUE task cola (CoLA/), not task sst2's", before_tf=True),
    case("tflite-evaluate-model-of-another-task-first", "albert-tflite-evaluate",
         f"--model={{tflite}} --task=stsb {DATA}",
         "was trained on task 'sst2' (its metadata.json), not --task=stsb", before_tf=True),
    case("tflite-evaluate-custom-tasks-model", "albert-tflite-evaluate",
         f"--model={{custom_tflite}} --task=sst2 {DATA}",
         "was trained on the custom task 'mine'", "scores GLUE and SentEval tasks only",
         "albert-tf-finetune --mode=eval --task=mine", before_tf=True),
    case("tflite-evaluate-custom-task", "albert-tflite-evaluate",
         f"--model={{custom_tflite}} --task=mine {DATA}",
         "unknown task 'mine': albert-tflite-evaluate scores GLUE and SentEval tasks",
         "albert-tf-finetune --mode=eval", before_tf=True),
    case("compress-custom-tasks-model", "albert-tf-compress",
         f"--init_model={{custom_model}} --model_dir=out --stages=pruning {DATA}",
         "--init_model={custom_model} was finetuned on the custom task 'mine' (its task.json)",
         "albert-tf-compress trains and scores on GLUE tasks only", before_tf=True),
    case("finetune-custom-predict-without-test-file", "albert-tf-finetune",
         f"--task=mine --mode=predict --init_checkpoint={{model}} --model_dir=out {TINY} "
         "--params_override=task.train_file={mine_train},task.dev_file={mine_dev}",
         "--mode=predict reads the test split, and task 'mine' has none",
         "--params_override=task.test_file=FILE", before_tf=True),
    case("finetune-custom-unknown-dev-label", "albert-tf-finetune",
         f"--task=mine --mode=eval --init_checkpoint={{model}} --model_dir=out {TINY} "
         "--params_override=task.train_file={mine_train},task.dev_file={mine_dev}",
         "{mine_dev}, line 3: label 'neutral' is not one of the task's labels (0, 1: the "
         "labels of the train file {mine_train})"),
    case("pretraining-data-input-is-records", "albert-tf-create-pretraining-data",
         "--input_file={records} --output_file=out/x.tfrecord --vocab_file={model}",
         "--input_file: '{records}' is a TFRecord file, not raw text", before_tf=True),
    case("pretraining-data-input-is-binary", "albert-tf-create-pretraining-data",
         "--input_file={binary} --output_file=out/x.tfrecord --vocab_file={model}",
         "--input_file: '{binary}' is binary (NUL bytes), not UTF-8 text", before_tf=True),
    case("finetune-init-checkpoint-vocabulary-swapped", "albert-tf-finetune",
         f"--task=sst2 --mode=eval --init_checkpoint={{swapped_vocab}} --model_dir=out {DATA}",
         "--init_checkpoint={swapped_vocab}: the vocabulary {swapped_vocab}/vocab.txt has 2000 "
         "tokens but the model's vocab_size (config.json) is 8000", before_tf=True),
    case("finetune-model-config-smaller-than-vocabulary", "albert-tf-finetune",
         f"--task=sst2 --model_config=bert_tiny --model_dir=out {DATA}",
         "has 8000 tokens but the model's embedding (bert_tiny: model.vocab_size) has 1000 "
         "rows", "--params_override=model.vocab_size=8000", before_tf=True),
    # Fresh pass (issue #44): writers and edge tools. A writer never replaces what albert-tf
    # did not write (albert-tflite-metadata beside a user's .tflite, albert-tf-benchmark's
    # --output_dir), a .tflite is described only with the model it was exported from, and
    # what needs no model is refused before TensorFlow loads: a vocabulary that is not the
    # model's (or empty), a binary calibration file, int16x8 (LiteRT cannot run it),
    # --with_tokenizer with int8, qat without a QAT model, an empty config.json.
    case("tflite-metadata-users-files", "albert-tflite-metadata",
         "--model={user_app}/model.tflite --model_dir={model}",
         "--model={user_app}/model.tflite: {user_app} already holds metadata.json, "
         "vocab.model, labels.txt, which albert-tf did not write; nothing was written",
         "--overwrite", before_tf=True),
    case("tflite-metadata-another-task", "albert-tflite-metadata",
         "--model={tflite}/model.tflite --model_dir={rte_task}",
         "--model={tflite}/model.tflite is a model of task 'sst2' (its embedded metadata), "
         "not of --model_dir={rte_task} (task 'rte')", before_tf=True),
    case("tflite-metadata-other-labels", "albert-tflite-metadata",
         "--model={tflite}/model.tflite --model_dir={mnli_task}",
         "signature serving_default's probabilities has 2 scores per example but "
         "--model_dir={mnli_task} (task 'mnli') has 3 labels", before_tf=True),
    case("tflite-metadata-unknown-quantization", "albert-tflite-metadata",
         "--model={tflite}/model.tflite --model_dir={model} --quantization=banana",
         "--quantization: invalid choice: 'banana'", before_tf=True),
    case("benchmark-output-users-directory", "albert-tf-benchmark",
         "--models= --model_dirs={model} --runtimes=tflite_dynamic --shapes=1x16 "
         "--output_dir={user_dir}",
         "--output_dir={user_dir} holds files albert-tf did not write", before_tf=True),
    case("benchmark-output-an-export", "albert-tf-benchmark",
         "--models= --model_dirs={model} --runtimes=tflite_dynamic --shapes=1x16 "
         "--output_dir={tflite}", "--output_dir={tflite} is a tflite export (albert-tf-export), "
         "not the run directory of albert-tf-benchmark", before_tf=True),
    case("benchmark-output-inside-the-model", "albert-tf-benchmark",
         "--models= --model_dirs={model} --runtimes=tflite_dynamic --shapes=1x16 "
         "--output_dir={model}/bench",
         "--output_dir={model}/bench: it lies inside --model_dirs={model}", before_tf=True),
    case("benchmark-read-only-directory", "albert-tf-benchmark",
         "--models= --model_dirs={model} --runtimes=tflite_dynamic --shapes=1x16 "
         "--output_dir=out", "--output_dir=out: cannot write in", "(Read-only file system)",
         before_tf=True, read_only_cwd=True),
    case("info-run-directory", "albert-tf-info", "--models={run}",
         "--models={run} is the run directory", "pass --models={run}/best", before_tf=True),
    case("export-calibration-binary", "albert-tf-export",
         "--model_dir={model} --format=tflite --quantization=int8 --output=out "
         "--calibration_file={binary}",
         "--calibration_file={binary} is a binary file (NUL bytes), not text", before_tf=True),
    case("export-int16x8", "albert-tf-export",
         "--model_dir={model} --format=tflite --quantization=int16x8 --output=out",
         "--quantization=int16x8: LiteRT cannot run albert-tf's int16x8 models",
         "use --quantization=int8", before_tf=True),
    case("export-with-tokenizer-int8", "albert-tf-export",
         "--model_dir={model} --format=tflite --quantization=int8 --with_tokenizer --output=out",
         "--with_tokenizer with --quantization=int8: calibration runs the ids signatures",
         before_tf=True),
    case("export-qat-without-a-qat-model", "albert-tf-export",
         "--model_dir={model} --format=tflite --quantization=qat --output=out",
         "--quantization=qat needs a quantization-aware trained model and "
         "--model_dir={model} holds none", "--qat_model_dir=DIR", before_tf=True),
    case("export-another-vocabulary", "albert-tf-export",
         "--model_dir={model} --vocab_file={wordpiece_vocab} --format=onnx --output=out",
         "--vocab_file={wordpiece_vocab} (wordpiece) is not the vocabulary the model was "
         "trained with, {model}/vocab.model (sentencepiece, another sha256)", before_tf=True),
    case("export-empty-vocabulary", "albert-tf-export",
         "--model_dir={empty_vocab} --format=tflite --output=out",
         "{empty_vocab}/vocab.model is empty", before_tf=True),
    case("export-empty-config", "albert-tf-export",
         "--model_dir={empty_config} --format=tflite --output=out",
         "--model_dir={empty_config}: its config.json is empty", before_tf=True),
    # Documented examples and shipped configs (issue #44): a shipped compress config that
    # does not fit the model is refused before it loads, naming the value that fits; a
    # custom task's relative files are read here, else from the data directory.
    case("compress-structured-config-two-heads", "albert-tf-compress",
         f"--init_model={{two_heads}} --model_dir=out --config_file=compress_sst2_structured "
         f"{DATA}", "structured.head_fraction: 0.25 of 2 heads rounds to none removed",
         "--params_override=structured.head_fraction=0.5 (removes 1 head)"),
    # A latency target (issue #46): its values and what it needs are checked before
    # TensorFlow loads; a target no allowed shape reaches is one line naming the best
    # reachable speedup, nothing written (the latency cache is not writable there: said on
    # stdout, never an error).
    case("compress-speedup-without-structured", "albert-tf-compress",
         f"--init_model={{model}} --model_dir=out --stages=qat --target_speedup=2 {DATA}",
         "the structured stage removes what the target asks for", "--stages=structured",
         before_tf=True),
    case("compress-speedup-of-one", "albert-tf-compress",
         f"--init_model={{model}} --model_dir=out --config_file=compress_sst2_speedup "
         f"--target_speedup=1 {DATA}", "--target_speedup: must be > 1", before_tf=True),
    case("compress-speedup-and-budget", "albert-tf-compress",
         f"--init_model={{model}} --model_dir=out --config_file=compress_sst2_speedup "
         f"--target_speedup=2 --latency_budget_ms=1 {DATA}",
         "--target_speedup and --latency_budget_ms: give one", before_tf=True),
    case("compress-speedup-peer-target", "albert-tf-compress",
         f"--init_model={{model}} --model_dir=out --config_file=compress_sst2_speedup "
         f"--target_speedup=2 --target=onnx_int8 {DATA}",
         "--target: 'onnx_int8' is not one of albert-tf's int8 deployment targets",
         "tflite_int8", before_tf=True),
    case("compress-speedup-no-parts", "albert-tf-compress",
         f"--init_model={{model}} --model_dir=out --config_file=compress_sst2_speedup "
         f"--target_speedup=2 --params_override=speedup.parts=[] {DATA}",
         "speedup.parts: empty", before_tf=True),
    case("compress-speedup-unreachable", "albert-tf-compress",
         f"--init_model={{model}} --model_dir=out --config_file=compress_sst2_speedup "
         f"--target_speedup=1000 --params_override=speedup.seq_length=16,speedup.rounds=2,"
         f"speedup.round_seconds=0.05,speedup.cache_dir=/dev/null/cache {DATA}",
         "--target_speedup=1000: not reachable on tflite_int8 at 1x16", "reaches",
         "nothing was written", timed=True),
    case("finetune-custom-file-in-neither-place", "albert-tf-finetune",
         f"--task=mine --model_dir=out {TINY} {DATA} "
         "--params_override=task.train_file=train.tsv",
         "task.train_file=train.tsv is neither in the current directory",
         "nor in the data directory ({data}/train.tsv)"),
    case("finetune-custom-file-no-data-directory", "albert-tf-finetune",
         f"--task=mine --model_dir=out {TINY} --params_override=task.train_file=train.tsv",
         "task.train_file=train.tsv is not in the current directory",
         "no data directory to look in (pass --data_dir=DIR or set ALBERT_TF_DATA_DIR=DIR)"),
]

# Placeholder -> path under the artifacts directory (`build_artifacts`).
ARTIFACTS = {
    "run": "run",                       # a finetune run: checkpoints, best/ and final/
    "model": "run/best",                # its model directory
    "encoder": "encoder",               # a pretrained (encoder-only) model directory
    "tflite": "exports/tflite",
    "onnx": "exports/onnx",
    "openvino": "exports/openvino",
    "saved_model": "exports/serving/sst2/1",
    "empty": "files/empty.txt",
    "blank": "files/blank.txt",         # only spaces and newlines
    "text": "files/text.txt",
    "holes": "files/holes.tsv",         # a TSV whose third line has no text
    "label_sentence": "files/label_sentence.tsv",   # headerless label<TAB>sentence (SentEval)
    "unknown_header": "files/unknown_header.tsv",   # review<TAB>sentiment header
    "tab_text": "files/tab_text.txt",   # plain text whose second line holds a tab
    "ragged": "files/ragged.tsv",       # sentence<TAB>label, a tab inside line 3's text
    "commas_csv": "files/commas.csv",   # plain text with commas, as .csv
    "pairs": "files/pairs.tsv",         # sentence1<TAB>sentence2<TAB>label
    "one_sentence": "files/one_sentence.txt",   # a corpus of one one-sentence document
    "records": "files/records.tfrecord",        # pretraining TFRecords (not raw text)
    "missing": "nothing_here",
    "no_onnxruntime": "no_onnxruntime",  # on PYTHONPATH: onnxruntime fails to import
    "no_beam": "no_beam",               # on PYTHONPATH: apache_beam fails to import
    "user_dir": "user/project",         # a user's directory: important.txt, sub/notes.md
    "home": "user",                     # $HOME of the --output=~ case
    "two_heads": "two_heads",           # a classifier of 2 attention heads (the tour's model)
    "run_users_best": "runs/users_best",     # a finetune run's checkpoints, best/ the user's
    "users_experiment": "runs/users_experiment",   # only the user's own experiment.yaml
    "pretrain_run": "runs/pretrain",    # a marked albert-tf-pretrain run directory
    "mine_train": "files/mine_train.tsv",   # a custom task's train file: labels 0 and 1
    "mine_dev": "files/mine_dev.tsv",   # its dev file, line 3 labeled 'neutral'
    "custom_tflite": "exports/custom_tflite",   # the tflite export, recording task 'mine'
    "custom_model": "custom_model",     # the model directory, its task.json's task 'mine'
    "swapped_vocab": "swapped_vocab",   # the model directory with a 2000-token vocab.txt
    "truncated_weights": "damaged/truncated_weights",   # model dir, weights cut short
    "damaged_weights": "damaged/damaged_weights",       # model dir, 64 bytes overwritten
    "truncated_tflite": "damaged/tflite",
    "truncated_onnx": "damaged/onnx",
    "truncated_openvino": "damaged/openvino",            # model.bin cut short
    "truncated_saved_model": "damaged/saved_model",      # saved_model.pb cut short
    "user_app": "user/app",             # the tflite export's model.tflite + the user's files
    "rte_task": "models/rte",           # the model directory with an RTE task.json
    "mnli_task": "models/mnli",         # ... with an MNLI task.json (3 labels)
    "binary": "files/binary.bin",       # NUL bytes
    "wordpiece_vocab": "files/vocab.txt",   # a WordPiece vocabulary (not the model's)
    "empty_vocab": "damaged/empty_vocab",   # the model directory with an empty vocab.model
    "empty_config": "damaged/empty_config",     # ... with an empty config.json
    "serving_model": "exports/serving/sst2",  # one model's versions in a TF Serving base
    "compress_run": "runs/compress",    # a compress run of another init model (run.json)
    "pipeline_run": "runs/pipeline",    # a pipeline run made with other settings
    "hf": "converted/hf",               # the model as albert-tf-convert --to=hf writes it
    "keras_hub": "converted/keras_hub",  # ... and --to=keras_hub (a task preset)
}


def build_artifacts(root: str) -> dict[str, str]:
    """Writes the artifacts under ``root``; returns ``{placeholder: path}``."""
    import albert_tf
    from albert_tf.backend import tf
    from tests.compression_fixtures import VOCAB, tiny_config, tiny_model_dir
    from albert_tf.checkpoints import load_task_model
    from albert_tf.export.common import load_source
    from albert_tf.export.onnx import export_onnx
    from albert_tf.export.openvino import export_openvino
    from albert_tf.export.saved_model import export_saved_model
    from albert_tf.export.tflite import export_tflite

    paths = {name: os.path.join(root, rel) for name, rel in ARTIFACTS.items()}
    run = paths["run"]
    tiny_model_dir(paths["model"])                      # run/best: a random SST-2 classifier
    tiny_model_dir(paths["two_heads"], tiny_config(num_attention_heads=2))
    shutil.copytree(paths["model"], os.path.join(run, "final"))
    model, _ = load_task_model(paths["model"])          # the run's own checkpoint, as trained
    tf.train.CheckpointManager(tf.train.Checkpoint(model=model), run,
                               max_to_keep=1).save(checkpoint_number=10)
    with open(os.path.join(run, "experiment.yaml"), "w", encoding="utf-8") as f:
        f.write("task:\n  type: classification\n  name: sst2\n")
    albert_tf.save_model_dir(albert_tf.build_encoder(tiny_config()), paths["encoder"],
                             vocab_file=VOCAB)
    source = load_source(paths["model"])                # read once for the four exports
    export_tflite(paths["model"], paths["tflite"], source=source)
    export_onnx(paths["model"], paths["onnx"], source=source)
    export_openvino(paths["model"], paths["openvino"], source=source)
    export_saved_model(paths["model"], os.path.dirname(os.path.dirname(paths["saved_model"])),
                       name="sst2", version=1, source=source)
    os.makedirs(os.path.dirname(paths["empty"]))
    for name, text in (("empty", ""), ("blank", "  \n\n   \n"),
                       ("text", "A film about films.\nIt is long.\n\nAnother document.\n"),
                       ("holes", "sentence\tlabel\na gorgeous film\t1\n\t0\n"),
                       ("label_sentence", "1\ta gorgeous film\n0\tdull and lifeless\n"),
                       ("unknown_header", "review\tsentiment\na gorgeous film\t1\n"),
                       ("tab_text", "a gorgeous film\ndull\tand lifeless\n"),
                       ("ragged", "sentence\tlabel\ngood\t1\ndull\tand flat\t0\n"),
                       ("commas_csv", "a gorgeous, witty film\n"),
                       ("pairs", "sentence1\tsentence2\tlabel\nA man sings.\tA man "
                        "performs.\t1\n"),
                       ("one_sentence", "Just one sentence here.\n")):
        with open(paths[name], "w", encoding="utf-8") as f:
            f.write(text)
    from tests.training_fixtures import write_pretraining_tfrecords
    write_pretraining_tfrecords(paths["records"], num_examples=4)
    _damaged_and_foreign_runs(paths)
    _fresh_pass_artifacts(paths)
    _custom_task_artifacts(paths)
    from albert_tf.interop import export_hf, export_keras_hub
    export_hf(paths["model"], paths["hf"])
    export_keras_hub(paths["model"], paths["keras_hub"])
    os.makedirs(os.path.join(paths["user_dir"], "sub"))
    for name in ("important.txt", os.path.join("sub", "notes.md")):
        with open(os.path.join(paths["user_dir"], name), "w", encoding="utf-8") as f:
            f.write(f"the user's {name}\n")
    for artifact, name in (("no_onnxruntime", "onnxruntime"), ("no_beam", "apache_beam")):
        package = os.path.join(paths[artifact], name)
        os.makedirs(package)
        with open(os.path.join(package, "__init__.py"), "w", encoding="utf-8") as f:
            f.write(f"raise ImportError(\"No module named '{name}'\")\n")
        # its bytecode now, before the snapshot: the runs write none (they may write it:
        # conftest lets them, so that TensorFlow's is compiled once).
        py_compile.compile(os.path.join(package, "__init__.py"), doraise=True)
    return paths


def _damaged_and_foreign_runs(paths: dict[str, str]) -> None:
    """The artifacts of damaged files and of run directories that are not a finetune run
    of the user's: copies of the model and the exports with a file cut short or changed,
    a run whose best/ holds the user's notes, a directory holding only the user's
    experiment.yaml, a pretrain run."""
    from albert_tf import outputs
    damaged = {"truncated_weights": (paths["model"], "weights.data-00000-of-00001", "cut"),
               "damaged_weights": (paths["model"], "weights.data-00000-of-00001", "flip"),
               "truncated_tflite": (paths["tflite"], "model.tflite", "cut"),
               "truncated_onnx": (paths["onnx"], "model.onnx", "cut"),
               "truncated_openvino": (paths["openvino"], "model.bin", "cut"),
               "truncated_saved_model": (paths["saved_model"], "saved_model.pb", "cut")}
    for name, (source, file, how) in damaged.items():
        shutil.copytree(source, paths[name])
        target = os.path.join(paths[name], file)
        size = os.path.getsize(target)
        with open(target, "r+b") as f:
            if how == "cut":
                f.truncate(size // 2)
            else:
                f.seek(size // 2)
                f.write(bytes(64))
    run = paths["run_users_best"]
    os.makedirs(os.path.join(run, "best"))
    for name in os.listdir(paths["run"]):
        if name == "checkpoint" or name.startswith("ckpt-"):
            shutil.copy(os.path.join(paths["run"], name), run)
    with open(os.path.join(run, "best", "notes.txt"), "w", encoding="utf-8") as f:
        f.write("the user's notes\n")
    os.makedirs(paths["users_experiment"])
    with open(os.path.join(paths["users_experiment"], "experiment.yaml"), "w",
              encoding="utf-8") as f:
        f.write("# the user's own settings\nlearning_rate: 0.1\n")
    outputs.mark_run_directory(paths["pretrain_run"], outputs.RUN_KINDS["albert-tf-pretrain"])
    outputs.mark_run_directory(paths["compress_run"], outputs.RUN_KINDS["albert-tf-compress"])
    with open(os.path.join(paths["compress_run"], "run.json"), "w", encoding="utf-8") as f:
        f.write('{"init_model": "/elsewhere/model"}\n')
    outputs.mark_run_directory(paths["pipeline_run"], outputs.RUN_KINDS["albert-tf-run"])
    from albert_tf.pipeline.driver import SETTINGS_FILE, _settings
    from albert_tf.pipeline.pipeline_config import load_pipeline_config
    import yaml
    earlier = _settings(load_pipeline_config("run_quick", ["finetune.max_steps=1000"]))
    with open(os.path.join(paths["pipeline_run"], SETTINGS_FILE), "w", encoding="utf-8") as f:
        yaml.safe_dump(earlier, f)


def _custom_task_artifacts(paths: dict[str, str]) -> None:
    """A custom task's files, copies of the model and its tflite export recording a custom
    task, and the model directory with another vocabulary."""
    for name, rows in (("mine_train", "a gorgeous film\t1\ndull and lifeless\t0\n"),
                       ("mine_dev", "a witty film\t1\nit is a film\tneutral\n")):
        with open(paths[name], "w", encoding="utf-8") as f:
            f.write("sentence\tlabel\n" + rows)
    for name, source, record in (("custom_tflite", "tflite", "metadata.json"),
                                 ("custom_model", "model", "task.json")):
        shutil.copytree(paths[source], paths[name])
        with open(os.path.join(paths[name], record), encoding="utf-8") as f:
            values = json.load(f)
        with open(os.path.join(paths[name], record), "w", encoding="utf-8") as f:
            json.dump(dict(values, task="mine"), f)
    shutil.copytree(paths["model"], paths["swapped_vocab"])
    os.remove(os.path.join(paths["swapped_vocab"], "vocab.model"))
    with open(os.path.join(paths["swapped_vocab"], "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("".join(f"{t}\n" for t in ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
                        + [f"piece{i}" for i in range(1995)]))


def _fresh_pass_artifacts(paths: dict[str, str]) -> None:
    """The artifacts of the fresh pass's writer and edge-tool rows: a user's app directory
    holding a copy of the TFLite export's model and the user's own metadata.json, labels.txt
    and vocab.model; copies of the model directory with another task's task.json, an empty
    vocab.model, an empty config.json; a binary file; a WordPiece vocabulary."""
    os.makedirs(paths["user_app"])
    shutil.copy(os.path.join(paths["tflite"], "model.tflite"), paths["user_app"])
    for name, text in (("metadata.json", '{"my": "app"}\n'), ("labels.txt", "mine\n"),
                       ("vocab.model", "the user's vocabulary\n")):
        with open(os.path.join(paths["user_app"], name), "w", encoding="utf-8") as f:
            f.write(text)
    for name, task in (("rte_task", dict(task="rte", label_list=["entailment",
                                                                  "not_entailment"])),
                       ("mnli_task", dict(task="mnli", label_list=["contradiction",
                                                                    "entailment", "neutral"]))):
        shutil.copytree(paths["model"], paths[name])
        with open(os.path.join(paths[name], "task.json"), encoding="utf-8") as f:
            values = json.load(f)
        with open(os.path.join(paths[name], "task.json"), "w", encoding="utf-8") as f:
            json.dump(dict(values, text_pair=True, **task), f)
    for name, file in (("empty_vocab", "vocab.model"), ("empty_config", "config.json")):
        shutil.copytree(paths["model"], paths[name])
        open(os.path.join(paths[name], file), "w").close()
    with open(paths["binary"], "wb") as f:
        f.write(bytes(range(256)) * 4)
    from albert_tf.text.vocabulary import WORDPIECE_SPECIAL_TOKENS, write_vocab_txt
    write_vocab_txt(list(WORDPIECE_SPECIAL_TOKENS) + ["a", "film", "good"],
                    paths["wordpiece_vocab"])


def _fill(text: str, values: dict[str, str]) -> str:
    for name, value in values.items():
        text = text.replace("{" + name + "}", value)
    return text


@dataclasses.dataclass
class Result:
    case: Case
    code: int
    out: str
    err: str
    left: list[str]        # what the run left in its working directory


def mount_namespaces() -> bool:
    """Whether this machine lets the tests make a private mount namespace (``unshare -m``)."""
    return subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode == 0


def run_case(c: Case, values: dict[str, str], work: str) -> Result | None:
    """The case run in a new directory of ``work``; None for a read-only case where no
    mount namespace can be made."""
    if c.read_only_cwd and not mount_namespaces():
        return None
    cwd = os.path.join(work, c.id)
    os.makedirs(cwd)
    extra = {k: _fill(v, values) for k, v in c.env}
    args = [_fill(a, values) for a in c.args]
    command = [sys.executable, "-c", BLOCK_TENSORFLOW, c.script, *args] if c.before_tf \
        else [path(c.script), *args]
    if c.read_only_cwd:
        command = ["unshare", "-m", "sh", "-c", READ_ONLY, cwd, *command]
    process = subprocess.run(command, cwd=cwd, env=env(**extra), text=True,
                             capture_output=True, timeout=600)
    left = sorted(os.listdir(cwd))
    return Result(c, process.returncode, process.stdout, process.stderr, left)


def run_all(values: dict[str, str], work: str) -> list[Result]:
    with concurrent.futures.ThreadPoolExecutor(PROCESSES) as pool:
        return list(pool.map(lambda c: run_case(c, values, work), CASES))


def snapshot(root: str) -> dict[str, tuple[int, int]]:
    """``{relative path: (size, mtime_ns)}`` of every file under ``root`` (but Keras's own
    ``$HOME/.keras/keras.json``, which importing Keras writes under the ``--output=~``
    case's HOME)."""
    found = {}
    for directory, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".keras"]
        for name in files:
            full = os.path.join(directory, name)
            stat = os.stat(full)
            found[os.path.relpath(full, root)] = (stat.st_size, stat.st_mtime_ns)
    return found


def markdown(results: list[Result], values: dict[str, str], work: str) -> str:
    """The table of docs/robustness.md: command | exit code | the one line, with the
    artifacts' paths shortened to their names under the artifacts directory (and the
    working directories' to nothing)."""
    root = os.path.dirname(values["run"])

    def short(text: str) -> str:
        for prefix, name in ((os.path.realpath(root), "artifacts"), (root, "artifacts"),
                             (os.path.realpath(work), "work"), (work, "work")):
            text = text.replace(prefix + os.sep, "").replace(prefix, name)
        text = text.replace(values["data"], "data")
        return "`" + text.replace("|", "\\|") + "`"

    rows = ["| command | exit code | the one line |", "|---|---:|---|"]
    for r in results:
        command = " ".join([r.case.script] + [
            _fill(a, values) if " " not in a else repr(_fill(a, values)) for a in r.case.args])
        if r.case.read_only_cwd:
            command = "(in a read-only directory) " + command
        if r.case.env:
            command = " ".join(f"{k}={_fill(v, values)}" for k, v in r.case.env) + " " + command
        lines = [line for line in r.err.splitlines() if line.strip()]
        line = " / ".join(lines)
        if r.case.timed:
            line = MEASURED.sub(r"N\1", line)
        rows.append(f"| {short(command)} | {r.code} | {short(line)} |")
    return "\n".join(rows) + "\n"


def docs_table() -> str:
    with open(DOCS, encoding="utf-8") as f:
        text = f.read()
    if DOCS_BEGIN not in text:
        return ""
    return text.split(DOCS_BEGIN, 1)[1].split(DOCS_END, 1)[0].strip("\n") + "\n"


# ------------------------------------------------------------------------------- tests
@pytest.fixture(scope="module")
def ran(tmp_path_factory, data_dir):
    """Every case run once (a few processes at a time), with the artifacts' snapshots."""
    root = str(tmp_path_factory.mktemp("artifacts"))
    values = dict(build_artifacts(root), data=data_dir)
    before = snapshot(root)
    work = str(tmp_path_factory.mktemp("work"))
    results = run_all(values, work)
    return ({c.id: r for c, r in zip(CASES, results)}, dict(values, work=work), before,
            snapshot(root))


@pytest.mark.slow
@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_one_line_and_writes_nothing(ran, c):
    results, values, _, _ = ran
    r = results[c.id]
    if r is None:
        pytest.skip("no mount namespace on this machine (unshare -m) for a read-only directory")
    context = f"{c.script} {' '.join(c.args)}\nstdout:\n{r.out}\nstderr:\n{r.err}"
    assert r.code != 0, context
    assert "Traceback" not in r.err, context
    lines = [line for line in r.err.splitlines() if line.strip()]
    assert len(lines) == 1, context
    assert not any(word in lines[0].lower() for word in NOISE if word != "absl"), context
    for words in c.expect:
        assert _fill(words, values) in lines[0], f"{words!r} not in: {lines[0]}"
    assert r.left == [], f"left behind {r.left}: {context}"


@pytest.mark.slow
def test_the_artifacts_are_untouched(ran):
    _, _, before, after = ran
    assert after == before


@pytest.mark.slow
def test_the_docs_show_this_table(ran):
    results, values, _, _ = ran
    if any(r is None for r in results.values()):
        pytest.skip("the read-only cases did not run here (no mount namespace): the table "
                    "would lack their rows")
    table = markdown([results[c.id] for c in CASES], values, values["work"])
    assert docs_table() == table, f"docs/robustness.md is out of date: run {REGENERATE}"


@pytest.mark.slow
def test_onnx_and_openvino_exports_run_in_the_edge_runner(ran, capsys):
    """albert-tflite-run runs the server exports (raw text in, the TFLite runner's JSON
    out) through their classifiers, where it said "not an albert-tf-tflite v1 metadata
    file" before."""
    from albert_tf.runtime.onnx import OnnxClassifier
    from albert_tf.runtime.openvino import OpenVinoClassifier
    from albert_tflite import runner
    _, values, _, _ = ran
    texts = ["a gorgeous , witty film", "dull and lifeless"]
    answers = {}
    for kind in ("tflite", "onnx", "openvino"):
        capsys.readouterr()
        assert runner.main([f"--model={values[kind]}", *(f"--text={t}" for t in texts)]) == 0
        answers[kind] = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    for kind, classifier in (("onnx", OnnxClassifier), ("openvino", OpenVinoClassifier)):
        expected = classifier(values[kind]).predict(texts)
        assert [{k: v for k, v in a.items() if k != "text"} for a in answers[kind]] == \
            json.loads(json.dumps(expected))
        assert [sorted(a) for a in answers[kind]] == [sorted(a) for a in answers["tflite"]]


def test_the_checks_before_tensorflow_import_none():
    """The binaries reject the cases above before TensorFlow loads (a case then costs
    ~0.3 s, not 5-10 s): what they import to read their flags and check them imports none."""
    modules = ["albert_tf.bin." + name for name in (
        "compress", "convert", "create_pretraining_data", "export", "finetune", "pretrain",
        "run")] + ["albert_tf.training.preflight", "albert_tf.training.flags",
                   "albert_tf.compression.compression_config",
                   "albert_tf.pipeline.pipeline_config"]
    code = (f"import importlib, sys\nfor m in {modules!r}: importlib.import_module(m)\n"
            "print(sorted(m for m in ('tensorflow', 'keras', 'tf_keras') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout
    assert out.strip() == "[]", out


def test_what_a_path_is_hugging_face_keras_hub_google(tmp_path):
    """`artifact_kind` knows the sources albert-tf-convert reads (issue #44, fresh pass):
    before, a Hugging Face directory was "a model directory" (it has config.json) and a
    keras-hub preset "a SavedModel" (its metadata.json has no export format)."""
    from albert_tf import outputs
    from albert_tf.user_inputs import artifact_kind, convert_source_problem

    def layout(name: str, files: dict[str, object]) -> str:
        directory = tmp_path / name
        directory.mkdir()
        for file, content in files.items():
            (directory / file).write_text(content if isinstance(content, str)
                                          else json.dumps(content))
        return str(directory)

    ours = layout("ours", {"config.json": {"hidden_size": 8}, "weights.index": ""})
    hf_marked = layout("hf_marked", {"config.json": {"hidden_size": 8}})
    outputs.write_marker(hf_marked, outputs.HF_DIRECTORY)
    kinds = {
        ours: "model",
        hf_marked: "hf",
        layout("hf", {"config.json": {"model_type": "albert"}, "model.safetensors": ""}): "hf",
        layout("hf_bin", {"config.json": {"architectures": ["BertModel"]},
                          "pytorch_model.bin": ""}): "hf",
        layout("keras_hub", {"config.json": {"module": "keras_hub.src.models.albert."
                                             "albert_backbone", "class_name": "AlbertBackbone"},
                             "metadata.json": {"keras_version": "3.15.1"},
                             "model.weights.h5": ""}): "keras_hub",
        layout("keras_hub_meta", {"metadata.json": {"keras_version": "3.15.1",
                                                    "keras_hub_version": "0.32.0"}}): "keras_hub",
        layout("google", {"albert_config.json": {"hidden_size": 8},
                          "model.ckpt-best.index": ""}): "google",
    }
    assert {path: artifact_kind(path) for path in kinds} == kinds
    # --from=google of a TF1 checkpoint with its config named config.json is not refused
    tf1 = layout("tf1", {"config.json": {"hidden_size": 8}, "model.ckpt-best.index": ""})
    assert convert_source_problem(tf1, "google") is None
    assert "already" in convert_source_problem(ours, "google")
    assert "pass --from=hf" in convert_source_problem(hf_marked, "keras_hub")


def test_task_library_is_not_claimed_for_op_versions_it_lacks():
    """A dynamic-range export (FULLY_CONNECTED v12) said it "runs in Task Library
    BertNLClassifier", whose 0.4.4 runtime refuses it (tflite/README.md)."""
    from albert_tf.heads import registry as task_heads
    from albert_tf.export.sdk_metadata import runners
    head = task_heads.get("classification")
    assert runners(head, {"FULLY_CONNECTED": 9}) == (list(head.sdk_runners), {})
    ok, refused = runners(head, {"FULLY_CONNECTED": 12})
    assert ok == ["MediaPipe TextClassifier"]
    assert "FULLY_CONNECTED v12" in refused["Task Library BertNLClassifier"]
    assert "dynamic_per_tensor" in refused["Task Library BertNLClassifier"]
    assert runners(task_heads.get("span"), {"FULLY_CONNECTED": 12})[0] == []


# ------------------------------------------------------------------------------- script
def main(argv: list[str]) -> int:
    """``--markdown``: print the table; ``--update-docs``: rewrite it in docs/robustness.md."""
    if not argv or argv[0] not in ("--markdown", "--update-docs"):
        print(__doc__)
        return 2
    from albert_tf import cli
    cli.quiet_startup()                 # TensorFlow's start-up lines (the artifacts import it)
    from conftest import DATA_DIR
    with tempfile.TemporaryDirectory() as root:
        values = dict(build_artifacts(os.path.join(root, "artifacts")), data=DATA_DIR)
        work = os.path.join(root, "work")
        os.makedirs(work)
        results = run_all(values, work)
        if any(r is None for r in results):
            print("the read-only cases need a mount namespace (unshare -m), which this machine "
                  "does not allow: the table is not written.", file=sys.stderr)
            return 1
        table = markdown(results, values, work)
    if argv[0] == "--markdown":
        print(table, end="")
        return 0
    with open(DOCS, encoding="utf-8") as f:
        text = f.read()
    head, rest = text.split(DOCS_BEGIN, 1)
    with open(DOCS, "w", encoding="utf-8") as f:
        f.write(head + DOCS_BEGIN + "\n" + table + DOCS_END + rest.split(DOCS_END, 1)[1])
    print(f"updated {DOCS}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
