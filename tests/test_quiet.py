"""Quiet by default (issue #27, item 3): a successful run of every console script prints
only albert-tf's own output (results, progress lines printed on purpose), no TensorFlow /
LiteRT / absl / C++ log line, converter dump or library progress bar; ``--verbose`` brings
them back (`albert_tf.cli`: quiet_startup, quiet_logs, quiet_native).

Two places check it with one test of a line (``NOISE``: tools/tour.py's ``LIBRARY_LINE``):
the README's tour (`make tour`, in CI) checks what each of its commands prints, on the
tour's real data: finetune, both conversions, compress, the four exports, the TFLite
runner, evaluator and benchmark, the benchmark, info. The jobs here are the rest (the
commands the tour does not run, and two exports the others read), plus ``--verbose``, so
that each console script is checked once (`test_every_console_script_is_covered`).

The scripts run as a user runs them: the installed console scripts, as subprocesses, from a
scratch directory, without the ``TF_CPP_MIN_LOG_LEVEL`` that conftest sets for the suite.
Every job runs once, two at a time (a job after the ones it reads: `JOBS`), in the
module's `runs` fixture, on tiny inputs: an albert_tiny classifier of 2 layers at 16
tokens, the first rows of the real SST-2 splits, ~150 KB of the real corpus. Each test
then checks one job. The noise found: the int8 TFLite quantizer's ``fully_quantize: ...``
line (export, compress, benchmark), LiteRT's ``INFO: Created TensorFlow Lite XNNPACK
delegate for CPU.`` (every LiteRT run), saved_model_cli's TF logs and oneDNN notice.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from typing import NamedTuple

import pytest

from tests.repo_files import load_tour

tour = load_tour()
BIN = os.path.dirname(sys.executable)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOCAB = os.path.join(ROOT, "official_configs", "vocab", "imdb_pydocs_8k.model")
PARALLEL = 2            # processes at a time (the project's machines have 2 cores)
TIMEOUT = 400           # seconds per job

# A line a library printed, not albert-tf (the same test as the tour's).
NOISE = tour.LIBRARY_LINE


class Job(NamedTuple):
    name: str
    script: str
    args: tuple[str, ...]
    expect: str                     # on stdout: the command did its job
    needs: tuple[str, ...] = ()
    noisy: bool = False             # --verbose: the library lines must be there


class Result(NamedTuple):
    code: int
    out: str
    err: str
    seconds: float


# In start order (longest first among the ready ones). Paths are relative to the scratch
# directory: model/ (the classifier), data/ (SST-2 rows), corpus.txt, run/ (albert-tf-run).
CALIBRATION = ("--data_dir=data", "--num_calibration=16")
STEPS = ("--config_file=tiny_ci",
         ("--params_override=trainer.train_steps=2,trainer.steps_per_loop=1,"
          "trainer.checkpoint_interval=2,trainer.validation_interval=2,"
          "trainer.validation_steps=1,task.max_seq_length=16"))
JOBS = [
    Job("export_tflite_int8", "albert-tf-export",
        ("--model_dir=model", "--format=tflite", "--quantization=int8", "--seq_lengths=16",
         "--output=edge_int8", *CALIBRATION), "TFLite model written to"),
    Job("export_saved_model", "albert-tf-export", ("--model_dir=model", "--output=serving"),
        "SavedModel written to"),
    Job("create_pretraining_data", "albert-tf-create-pretraining-data",
        ("--input_file=corpus.txt", "--output_file=pretraining/train.tfrecord",
         f"--vocab_file={VOCAB}", "--max_seq_length=16", "--max_predictions_per_seq=5",
         "--dupe_factor=1"),
        '"instances"'),
    Job("pretrain", "albert-tf-pretrain",
        ("--model_dir=pretrained", "--train_files=pretraining/train.tfrecord",
         "--eval_files=pretraining/train.tfrecord", *STEPS),
        "training done at step 2", needs=("create_pretraining_data",)),
    Job("run", "albert-tf-run", ("--experiment=experiment.yaml", "--output_dir=run",
                                 "--data_dir=data"), "report: "),
    Job("export_openvino_int8", "albert-tf-export",
        ("--model_dir=model", "--format=openvino", "--quantization=int8", "--output=ov_int8",
         *CALIBRATION), "OpenVINO IR written to"),
    Job("convert_to_keras_hub", "albert-tf-convert",
        ("--to=keras_hub", "--input=model", "--output_dir=keras_hub"), "wrote keras_hub"),
    Job("saved_model_cli_run", "albert-tf-saved-model-cli",
        ("run", "--dir", "serving/sst2/1", "--tag_set", "serve", "--signature_def",
         "serving_default", "--input_exprs", 'text=["a gorgeous film", "flat"]'),
        "Result for output key probabilities", needs=("export_saved_model",)),
    Job("train_spm", "albert-tf-train-spm",
        ("--input=corpus.txt", "--model_prefix=spm/sp", "--vocab_size=400"),
        '"vocab_size": 400'),
    Job("train_vocab_wordpiece", "albert-tf-train-vocab",
        ("--type=wordpiece", "--input=corpus.txt", "--output=wordpiece", "--vocab_size=400"),
        '"type": "wordpiece"'),
    Job("tflite_run_verbose", "albert-tflite-run",
        ("--model=edge_int8", "--text=a gorgeous film", "--verbose"), '"probabilities"',
        needs=("export_tflite_int8",), noisy=True),
    Job("tflite_metadata", "albert-tflite-metadata",
        ("--model=bare/model.tflite", "--model_dir=model", "--quantization=int8"), "wrote ",
        needs=("export_tflite_int8",)),
]
SCRIPTS = {job.script for job in JOBS}

# albert-tf-run from the finetuned model on: the data, pretraining and finetuning stages
# are recorded as done (their output: the tiny classifier), as in test_pipeline_stages.
EXPERIMENT = """\
pretrain:
  models: [albert_tiny]
compress:
  prune_sparsities: []
  structured: false
  distill: false
  qat: false
export:
  quantizations: [none]
  seq_length: 16
  timing_seconds: 0.2
"""


def _seed_run(run_dir: str, model_dir: str) -> None:
    best = os.path.join(run_dir, "finetune", "albert_tiny", "best")
    shutil.copytree(model_dir, best)
    os.makedirs(os.path.join(run_dir, "stages"))
    done = {"corpus_split": {}, "vocabulary": {}, "pretraining_data_train": {},
            "pretraining_data_heldout": {}, "pretrain_albert_tiny": {"curve": []},
            "finetune_albert_tiny": {"model_dir": best,
                                     "best": {"metric": "accuracy", "value": 0.5}}}
    for name, result in done.items():
        with open(os.path.join(run_dir, "stages", f"{name}.json"), "w") as f:
            json.dump(dict(result, seconds=0), f)


def _inputs(work: str, real_data: str) -> None:
    """model/, data/, corpus.txt, experiment.yaml and run/ in ``work``."""
    from tests.compression_fixtures import tiny_config, tiny_model_dir, tiny_sst2_dir
    model = tiny_model_dir(os.path.join(work, "model"), tiny_config(num_hidden_layers=2),
                           max_seq_length=16)
    tiny_sst2_dir(os.path.join(work, "data"), real_data, train=64, dev=32, test=16)
    with open(os.path.join(real_data, "corpus", "imdb-unsup.txt"), encoding="utf-8") as f:
        corpus = f.read(150_000)
    with open(os.path.join(work, "corpus.txt"), "w", encoding="utf-8") as f:
        f.write(corpus[:corpus.rindex("\n") + 1])
    with open(os.path.join(work, "experiment.yaml"), "w", encoding="utf-8") as f:
        f.write(EXPERIMENT)
    _seed_run(os.path.join(work, "run"), model)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    for name in ("ALBERT_TF_VERBOSE", "TF_CPP_MIN_LOG_LEVEL", "ALBERT_TF_DATA_DIR"):
        env.pop(name, None)
    return env


def _before(job: Job, work: str) -> None:
    if job.name == "tflite_metadata":   # a .tflite made elsewhere: no metadata beside it
        os.makedirs(os.path.join(work, "bare"))
        shutil.copy(os.path.join(work, "edge_int8", "model.tflite"),
                    os.path.join(work, "bare", "model.tflite"))


def _run_all(work: str) -> dict[str, Result]:
    """Runs `JOBS`, ``PARALLEL`` at a time, each once the jobs it needs succeeded."""
    results: dict[str, Result] = {}
    pending, running = list(JOBS), {}
    try:
        _schedule(work, pending, running, results)
    finally:                # an error here: no job is left running
        for process, out, err, _ in running.values():
            process.kill()
            process.wait()
            out.close()
            err.close()
    return results


def _schedule(work: str, pending: list[Job], running: dict, results: dict[str, Result]) -> None:
    env = _env()
    while pending or running:
        for job in list(pending):
            if len(running) >= PARALLEL:
                break
            if not all(n in results for n in job.needs):
                continue
            pending.remove(job)
            failed = [n for n in job.needs if results[n].code != 0]
            if failed:
                results[job.name] = Result(-1, "", f"not run: {failed} failed", 0.0)
                continue
            _before(job, work)
            # Files, not pipes: nothing blocks on a full pipe while others run; closed
            # when the job is collected.
            out = open(os.path.join(work, f"{job.name}.out"), "w+")  # noqa: SIM115
            err = open(os.path.join(work, f"{job.name}.err"), "w+")  # noqa: SIM115
            process = subprocess.Popen([os.path.join(BIN, job.script), *job.args], cwd=work,
                                       env=env, stdout=out, stderr=err)
            running[job.name] = (process, out, err, time.time())
        time.sleep(0.2)
        for name, (process, out, err, start) in list(running.items()):
            if process.poll() is None and time.time() - start < TIMEOUT:
                continue
            if process.poll() is None:
                process.kill()
                process.wait()
            del running[name]
            texts = []
            for f in (out, err):
                f.seek(0)
                texts.append(f.read())
                f.close()
            results[name] = Result(process.returncode, *texts, time.time() - start)


@pytest.fixture(scope="module")
def runs(data_dir, tmp_path_factory) -> dict[str, Result]:
    missing = [s for s in sorted(SCRIPTS) if not os.path.exists(os.path.join(BIN, s))]
    if missing:
        pytest.fail(f"console scripts {missing} are not installed in {BIN} (pip install -e .)")
    work = str(tmp_path_factory.mktemp("quiet"))
    _inputs(work, data_dir)
    return _run_all(work)


def tour_programs() -> set[str]:
    """The console scripts the README's tour runs (`make tour` checks their output with
    ``NOISE``, on the tour's real data, in CI)."""
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        return {c.program for c in tour.extract(f.read())} - {tour.PYTHON}


def test_every_console_script_is_covered():
    """Each console script runs here or in the tour (dropping a command from the README's
    tour fails this until a job here runs its script)."""
    declared = tour.console_scripts()
    assert declared and declared == SCRIPTS | tour_programs(), \
        declared ^ (SCRIPTS | tour_programs())


@pytest.mark.slow
@pytest.mark.parametrize("job", JOBS, ids=[job.name for job in JOBS])
def test_successful_run_prints_no_library_lines(job, runs):
    result = runs[job.name]
    shown = f"{job.script} {' '.join(job.args)} ({result.seconds:.0f}s)\n" \
            f"--- stdout\n{result.out[-3000:]}\n--- stderr\n{result.err[-5000:]}"
    assert result.code == 0, shown
    assert job.expect in result.out, shown
    noise = [line for line in (result.out + "\n" + result.err).splitlines()
             if NOISE.search(line)]
    if job.noisy:       # --verbose: the lines a quiet run hides are printed
        assert "INFO: Created TensorFlow Lite XNNPACK delegate for CPU." in noise, shown
    else:
        assert not noise, "library lines:\n" + "\n".join(noise[:20]) + "\n\n" + shown
