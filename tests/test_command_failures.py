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
    albert-tf's)."""

    id: str
    script: str
    args: tuple[str, ...]
    expect: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()


def case(id: str, script: str, args: str | tuple, *expect: str, **environment: str) -> Case:
    args = tuple(args.split()) if isinstance(args, str) else tuple(args)
    return Case(id, script, args, expect, tuple(environment.items()))


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
         "already exists (an earlier albert-tf output)", "pass --overwrite"),
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
    "one_sentence": "files/one_sentence.txt",   # a corpus of one one-sentence document
    "records": "files/records.tfrecord",        # pretraining TFRecords (not raw text)
    "missing": "nothing_here",
    "no_onnxruntime": "no_onnxruntime",  # on PYTHONPATH: onnxruntime fails to import
    "no_beam": "no_beam",               # on PYTHONPATH: apache_beam fails to import
    "user_dir": "user/project",         # a user's directory: important.txt, sub/notes.md
    "home": "user",                     # $HOME of the --output=~ case
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
    shutil.copytree(paths["model"], os.path.join(run, "final"))
    model, _ = load_task_model(paths["model"])          # the run's own checkpoint, as trained
    tf.train.CheckpointManager(tf.train.Checkpoint(model=model), run,
                               max_to_keep=1).save(checkpoint_number=10)
    with open(os.path.join(run, "experiment.yaml"), "w", encoding="utf-8") as f:
        f.write("task:\n  name: sst2\n")
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
                       ("one_sentence", "Just one sentence here.\n")):
        with open(paths[name], "w", encoding="utf-8") as f:
            f.write(text)
    from tests.training_fixtures import write_pretraining_tfrecords
    write_pretraining_tfrecords(paths["records"], num_examples=4)
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


def run_case(c: Case, values: dict[str, str], work: str) -> Result:
    cwd = os.path.join(work, c.id)
    os.makedirs(cwd)
    extra = {k: _fill(v, values) for k, v in c.env}
    process = subprocess.run([path(c.script), *(_fill(a, values) for a in c.args)], cwd=cwd,
                             env=env(**extra), text=True, capture_output=True, timeout=600)
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
        if r.case.env:
            command = " ".join(f"{k}={_fill(v, values)}" for k, v in r.case.env) + " " + command
        lines = [line for line in r.err.splitlines() if line.strip()]
        rows.append(f"| {short(command)} | {r.code} | {short(' / '.join(lines))} |")
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
    return {r.case.id: r for r in results}, dict(values, work=work), before, snapshot(root)


@pytest.mark.slow
@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_one_line_and_writes_nothing(ran, c):
    results, values, _, _ = ran
    r = results[c.id]
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
    table = markdown([results[c.id] for c in CASES], values, values["work"])
    assert docs_table() == table, f"docs/robustness.md is out of date: run {REGENERATE}"


@pytest.mark.slow
def test_onnx_and_openvino_exports_run_in_the_edge_runner(ran, capsys):
    """albert-tflite-run runs the server exports (raw text in, the TFLite runner's JSON
    out) through their classifiers, where it said "not an albert-tf-tflite v1 metadata
    file" before."""
    from albert_tf.export.onnx_runner import OnnxClassifier
    from albert_tf.export.openvino_runner import OpenVinoClassifier
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


def test_task_library_is_not_claimed_for_op_versions_it_lacks():
    """A dynamic-range export (FULLY_CONNECTED v12) said it "runs in Task Library
    BertNLClassifier", whose 0.4.4 runtime refuses it (tflite/README.md)."""
    from albert_tf import task_heads
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
        table = markdown(run_all(values, work), values, work)
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
