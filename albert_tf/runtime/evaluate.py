"""Accuracy of an export (TFLite, ONNX or OpenVINO) on a task split: the task's metric.

    from albert_tf.runtime.evaluate import evaluate
    evaluate("edge/sst2_int8", "sst2", data_dir)   # {'accuracy': 0.91, 'examples': 872, ...}

    python -m albert_tf.runtime.evaluate --model=edge/sst2_int8 --task=sst2 --json=scores.json
    python -m albert_tf.runtime.evaluate --model=edge/final --task=sst2 --split=test   # once

Classification: accuracy (and Matthews correlation for CoLA); regression: Pearson and
Spearman. The dev split by default; ``--split=test`` is for the final report of a model
chosen on dev (`albert_tf.pipeline.driver` does this once), never for choosing.
``--data_dir`` defaults to ``$ALBERT_TF_DATA_DIR``. ``--json`` writes a list with one result
dict per ``--model`` (``accuracy`` ..., ``model``, ``task``, ``split``, ``examples``,
``quantization``, ``seconds``), which the pipeline reads. A model whose ``metadata.json``
records another task than ``--task`` is refused, naming both, unless
``--allow_task_mismatch`` (`check_task`; a model recording no task is scored). The task's
data is read from its own folder only (``DATA_DIR/glue/<Task>/``: another task's folder as
``--data_dir`` is refused); a custom TSV task's model is not scored here (its data is not
GLUE's or SentEval's): the error says how albert-tf-finetune --mode=eval scores it.

`albert_tf.runtime.runner.open_runner` picks the runner of an export. The
``albert-tflite-evaluate`` CLI (``albert_tflite.evaluate``) is this module's `main`.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any, Iterable, Sequence

import numpy as np

from albert_tf import cli, outputs
from albert_tf.runtime.runner import open_runner


SPLITS = ("dev", "test")
# How a model of a custom TSV task (albert-tf-finetune --task=NAME with task.train_file) is
# scored: the evaluator reads GLUE and SentEval tasks only.
CUSTOM_TASK_SCORE = ("a custom TSV task's model is scored on its dev file by albert-tf-finetune "
                     "--mode=eval --task=NAME --init_checkpoint=<the model directory it was "
                     "exported from> --model_dir=<a new directory> --params_override="
                     "task.train_file=TRAIN,task.dev_file=DEV (and its training's column "
                     "settings)")


def load_split(task: str, data_dir: str, split: str = "dev"):
    """(texts_a, texts_b or None, labels, label_list, is_regression) of the task's ``split``
    (dev or test); a `albert_tf.data.task_data.TaskDataError` (one line) when the task is
    unknown or its split absent or unlabeled."""
    from albert_tf import resources
    from albert_tf.data import task_data as data_tasks
    if split not in SPLITS:
        raise data_tasks.TaskDataError(f"--split={split!r}: use one of {', '.join(SPLITS)}.")
    key = data_tasks.glue_task_key(task)
    if not key and task.lower() not in data_tasks.SENTEVAL_TASKS:
        raise data_tasks.TaskDataError(
            f"unknown task {task!r}: albert-tflite-evaluate scores GLUE and SentEval tasks "
            f"({data_tasks.known_tasks(squad=False, custom=False)}); {CUSTOM_TASK_SCORE}.")
    try:
        data_dir = resources.data_dir(data_dir)
    except resources.DataDirError as e:
        raise data_tasks.TaskDataError(str(e)) from None
    fix = resources.DATA_DIR_FIX
    if not key:   # SentEval: <data_dir>/extra/NAME_{train,dev}.tsv, label<TAB>sentence
        upper = task.upper()
        files = [os.path.join(data_dir, "extra", f"{upper}_{s}.tsv") for s in ("train", split)]
        for path in files:
            if not os.path.isfile(path):
                raise data_tasks.TaskDataError(f"task {task!r}: {path} not found; {fix}.")
        data = data_tasks.load_tsv_task(files[0], files[1] if split == "dev" else None,
                                        files[1] if split == "test" else None, text_a_column=1,
                                        label_column=0, has_header=False, name=task.lower())
    else:
        if data_tasks.find_glue_task_dir(data_dir, task) is None:
            raise data_tasks.TaskDataError(
                f"task {task!r}: {data_tasks.expected_glue_file(data_dir, task)} not found; "
                f"{fix}.")
        try:
            data = data_tasks.load_task(task, data_dir)
        except Exception as e:  # noqa: BLE001  (a malformed file: TaskDataError, OSError)
            raise data_tasks.TaskDataError(
                f"cannot load task {task!r} from {data_dir}: {e}") from None
    examples = data.dev if split == "dev" else data.test
    if not examples:
        raise data_tasks.TaskDataError(f"task {task!r} has no {split} split under {data_dir} "
                                       f"(expected <Task>/{split}.tsv).")
    if any(ex.label is None for ex in examples):
        raise data_tasks.TaskDataError(
            f"the {split} split of {task!r} under {data_dir} has no labels (GLUE's public "
            "test files are unlabeled): score on dev, or give a labeled file.")
    texts_b = [ex.text_b for ex in examples] if examples[0].text_b is not None else None
    return [ex.text_a for ex in examples], texts_b, [ex.label for ex in examples], \
        data.label_list, data.is_regression


def score(predictions: Sequence[dict], labels: Sequence[Any], label_list, is_regression: bool,
          task: str = "") -> dict[str, float]:
    if is_regression:
        pred = np.array([p["value"] for p in predictions], float)
        gold = np.array([float(y) for y in labels])
        ranks = lambda v: np.argsort(np.argsort(v))  # noqa: E731
        return {"pearson": float(np.corrcoef(pred, gold)[0, 1]),
                "spearman": float(np.corrcoef(ranks(pred), ranks(gold))[0, 1])}
    pred = [p["label"] for p in predictions]
    gold = [str(y) for y in labels]
    result = {"accuracy": float(np.mean([p == g for p, g in zip(pred, gold)]))}
    if task.lower() == "cola":
        p = np.array([label_list.index(x) for x in pred])
        g = np.array([label_list.index(x) for x in gold])
        tp, tn = np.sum((p == 1) & (g == 1)), np.sum((p == 0) & (g == 0))
        fp, fn = np.sum((p == 1) & (g == 0)), np.sum((p == 0) & (g == 1))
        denom = np.sqrt(float((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))) or 1.0
        result["matthews"] = float((tp * tn - fp * fn) / denom)
    return result


def check_task(model: str, task: str, allow_mismatch: bool = False) -> None:
    """An `albert_tf.user_inputs.InputError` when the export at ``model`` records, in its
    ``metadata.json``, another task than ``task`` (the ``task`` of the model directory's
    ``task.json`` it was exported from): its labels would be scored against another task's
    (an SST-2 model on CoLA scores 0.43 without a word). ``allow_mismatch``
    (``--allow_task_mismatch``) allows it. An export that records no task is allowed."""
    from albert_tf.data.task_data import task_key
    from albert_tf.export.metadata import metadata_path
    from albert_tf.user_inputs import InputError
    try:
        with open(metadata_path(model), encoding="utf-8") as f:
            recorded = json.load(f).get("task")
    except (OSError, ValueError, AttributeError):
        return                  # no readable metadata: the runner says what is wrong
    if allow_mismatch or not recorded or task_key(str(recorded)) == task_key(task):
        return
    if not is_scored_task(str(recorded)):
        from albert_tf.data.task_data import SQUAD_TASKS
        name = str(recorded)
        if name.lower() in SQUAD_TASKS:
            what, how = (f"task {name!r}", "a SQuAD model is scored by albert-tf-finetune "
                         f"--mode=eval --task={name} --init_checkpoint=<the model directory it "
                         "was exported from> --model_dir=<a new directory>")
        elif name.lower() == "pretraining":
            what, how = "pretraining (no task head)", "finetune it first (albert-tf-finetune)"
        else:
            what, how = f"the custom task {name!r}", CUSTOM_TASK_SCORE.replace("NAME", name)
        raise InputError(
            f"--model={model} was trained on {what} (its metadata.json), not --task={task}; "
            f"albert-tflite-evaluate scores GLUE and SentEval tasks only: {how}; or pass "
            f"--allow_task_mismatch to score it on --task={task} anyway.")
    raise InputError(f"--model={model} was trained on task {recorded!r} (its metadata.json), "
                     f"not --task={task}: score it on --task={recorded}, or pass "
                     "--allow_task_mismatch to score it on this task anyway.")


def is_scored_task(name: str) -> bool:
    """Whether the evaluator reads task ``name``'s data (a GLUE or SentEval task)."""
    from albert_tf.data import task_data as data_tasks
    return bool(data_tasks.glue_task_key(name)) or name.lower() in data_tasks.SENTEVAL_TASKS


def evaluate(model: str, task: str, data_dir: str, num_threads: int = 2,
             limit: int | None = None, split: str = "dev",
             allow_task_mismatch: bool = False) -> dict[str, Any]:
    """The task's metric of the export ``model`` on ``split`` (see the module docstring);
    a model of another task is refused unless ``allow_task_mismatch`` (`check_task`)."""
    check_task(model, task, allow_task_mismatch)
    texts_a, texts_b, labels, label_list, is_regression = load_split(task, data_dir, split)
    if limit:
        texts_a, labels = texts_a[:limit], labels[:limit]
        texts_b = texts_b[:limit] if texts_b is not None else None
    runner = open_runner(model, num_threads)     # TFLite, ONNX or OpenVINO export
    if not is_regression and runner.labels and not set(runner.labels) <= set(label_list):
        from albert_tf.user_inputs import InputError
        raise InputError(f"--model={model} answers the labels {', '.join(runner.labels)}; "
                         f"task {task}'s are {', '.join(label_list)}: its answers cannot be "
                         f"scored on {task}.")
    start = time.perf_counter()
    predictions = runner.predict(texts_a, texts_b)
    seconds = time.perf_counter() - start
    result = score(predictions, labels, label_list, is_regression, task)
    result.update(model=model, task=task, split=split, examples=len(texts_a),
                  quantization=runner.meta.get("quantization"), seconds=seconds)
    return result


@cli.guarded
def main(argv: Iterable[str] | None = None, doc: str | None = None) -> int:
    """The CLI (``doc``: the ``--help`` text, `albert_tflite.evaluate`'s docstring)."""
    from albert_tf import user_inputs
    argv = list(argv) if argv is not None else None
    cli.quiet_startup(argv)   # TensorFlow's start-up logs only with --verbose
    parser = user_inputs.ArgumentParser(description="Score an exported model (TFLite, ONNX or "
                                        "OpenVINO) on a task's dev (or, once, test) set.",
                                        doc=doc)
    parser.add_argument("--model", required=True, action="append",
                        help="export directory (TFLite, ONNX, OpenVINO) or .tflite "
                        "(repeatable)")
    parser.add_argument("--task", required=True,
                        help="sst2, rte, cola, ... (GLUE) or mr, subj, cr, mpqa (SentEval)")
    parser.add_argument("--data_dir", default=None,
                        help="data root (glue/, extra/); default $ALBERT_TF_DATA_DIR")
    parser.add_argument("--threads", type=int, default=2, help="interpreter threads")
    parser.add_argument("--limit", type=int, default=None, help="score the first N examples")
    parser.add_argument("--split", default="dev", choices=SPLITS,
                        help="dev (default) or test: test only for a model already chosen")
    parser.add_argument("--json", default=None, help="write the results here (a new file, or "
                        "--overwrite)")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --json")
    parser.add_argument("--allow_task_mismatch", action="store_true",
                        help="score a model whose metadata.json records another task than "
                        "--task (refused without it; a model recording no task is scored)")
    cli.add_verbose_argument(parser)
    args = parser.parse_args(argv)
    cli.quiet_logs([] if not args.verbose else ["--verbose"])
    try:      # the task and its data, then every model, before the first one runs
        user_inputs.at_least(args.threads, "--threads")
        user_inputs.at_least(args.limit, "--limit")
        if args.json:
            outputs.check_output_file(args.json, overwrite=args.overwrite, flag="--json",
                                      inputs=[("--model", m) for m in args.model])
        for model in args.model:     # a model of another task first: its task is the fix
            check_task(model, args.task, args.allow_task_mismatch)
        load_split(args.task, args.data_dir, args.split)
        for model in args.model:
            user_inputs.edge_export(model)
        results = [evaluate(m, args.task, args.data_dir, args.threads, args.limit, args.split,
                            args.allow_task_mismatch) for m in args.model]
    except (ValueError, OSError) as e:   # not an export, a runtime missing, a broken file
        parser.exit(2, f"{parser.prog}: error: {user_inputs.one_line(e)}\n")
    for r in results:
        metrics = ", ".join(f"{k} {v:.4f}" for k, v in r.items()
                            if k in ("accuracy", "matthews", "pearson", "spearman"))
        print(f"{r['model']} ({r['quantization']}): {metrics} on {r['examples']} "
              f"{r['split']} examples ({r['seconds']:.1f}s)")
    if args.json:
        outputs.write_text(args.json, json.dumps(results, indent=2))
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
