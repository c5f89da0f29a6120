"""MLM loss curves of run_quick's albert_mini pretraining: static TFRecords vs dynamic masking.

Both runs are `albert-tf-run --experiment=run_quick`'s ``pretrain_albert_mini`` stage (the
same `albert_tf.pipeline.driver` commands: ``pretrain_albert_mini_imdb`` with run_quick's
batch 32, peak learning rate, warmup, validation interval and seed) on the same corpus
split (3,000 IMDB reviews, 200 held out) and vocabulary (run_quick's SentencePiece model,
trained on the split); they differ only in the training input:

* static: the ``dupe_factor: 1`` TFRecords of ``albert-tf-create-pretraining-data``
  (run_quick's, so every epoch repeats the same masks);
* dynamic: the split's raw text with ``--train_source=text`` (`albert_tf.data
  .dynamic_masking`: re-chunked and re-masked every epoch).

Both evaluate on the same held-out TFRecords, so the eval curves are comparable. The
figure is ``docs/pretraining_static_vs_dynamic_mlm.png``; the table is the final MLM
loss / accuracy. Rerunning reuses the data and finished runs in ``--work_dir``;
``--plot_only`` redraws from the runs' summaries.

    .venv/bin/python studies/figures.py pretraining-static-vs-dynamic --steps=600
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PLOT = os.path.join(ROOT, "docs", "pretraining_static_vs_dynamic_mlm.png")
MODEL = "albert_mini"
RUNS = ("static", "dynamic")


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--work_dir", default="/tmp/albert_tf_static_vs_dynamic")
    p.add_argument("--data_dir", default=None, help="default: $ALBERT_TF_DATA_DIR")
    p.add_argument("--steps", type=int, default=0,
                   help="optimizer steps of both runs (0: run_quick's albert_mini budget)")
    p.add_argument("--plot", default=PLOT)
    p.add_argument("--plot_only", action="store_true",
                   help="redraw the figure and table from the runs' summaries")
    return p.parse_args(argv)


def _option(command: list[str], flag: str, value: str | None) -> list[str]:
    """``command`` with ``--flag=...`` replaced by ``--flag=value`` (removed for None)."""
    out = [a for a in command if not a.startswith(flag + "=")]
    return out + ([f"{flag}={value}"] if value is not None else [])


def _run(command: list[str], log: str) -> None:
    os.makedirs(os.path.dirname(log), exist_ok=True)
    print(f"  {' '.join(command[1:])}\n  > {log}", flush=True)
    with open(log, "w") as out:
        subprocess.run(["nice", "-n", "10", *command], cwd=ROOT, check=True, stdout=out,
                       stderr=subprocess.STDOUT)


def prepare(args):
    """run_quick's config, paths and the commands of both runs (data made when missing)."""
    from albert_tf.pipeline import driver
    from albert_tf.pipeline.pipeline_config import load_pipeline_config, resolve_data_dir

    config = load_pipeline_config("run_quick")
    if args.data_dir:
        config.data_dir = args.data_dir
    paths = driver.Paths(args.work_dir)
    steps = args.steps or config.pretrain.steps_for(MODEL)
    base = driver.pretrain_stage(config, paths, MODEL).command
    base = _option(_option(base, "--num_train_steps", str(steps)), "--max_seconds", "0")
    commands = {
        "static": _option(base, "--model_dir", paths("pretrain", "static")),
        "dynamic": _option(_option(_option(base, "--model_dir", paths("pretrain", "dynamic")),
                                   "--train_files", paths("corpus", "train.txt")),
                           "--train_source", "text"),
    }
    if args.plot_only:
        return config, paths, steps, commands
    resolve_data_dir(config)
    for stage in driver.data_stages(config, paths):
        done = paths("stages", stage.name + ".json")
        if os.path.exists(done):
            continue
        print(f"{stage.name}:", flush=True)
        if stage.command is None:
            result = stage.collect()
        else:
            _run(list(stage.command), paths("logs", stage.name + ".log"))
            result = stage.collect()
        os.makedirs(os.path.dirname(done), exist_ok=True)
        with open(done, "w") as f:
            json.dump(result, f, indent=1)
    return config, paths, steps, commands


def scalars(model_dir: str, split: str) -> dict[str, list[tuple[int, float]]]:
    """``{tag: [(step, value), ...]}`` of a run's ``summaries/<split>`` events."""
    from albert_tf.backend import tf
    found: dict[str, dict[int, float]] = {}
    for path in sorted(glob.glob(os.path.join(model_dir, "summaries", split,
                                              "events.out.tfevents.*"))):
        for record in tf.data.TFRecordDataset(path).as_numpy_iterator():
            event = tf.compat.v1.Event.FromString(record)
            for value in event.summary.value:
                number = tf.make_ndarray(value.tensor) if value.HasField("tensor") \
                    else value.simple_value
                found.setdefault(value.tag, {})[int(event.step)] = float(number)
    return {tag: sorted(points.items()) for tag, points in found.items()}


def plot(curves: dict, path: str, steps: int) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (loss_ax, acc_ax) = plt.subplots(1, 2, figsize=(10, 4))
    colors = {"static": "tab:blue", "dynamic": "tab:orange"}
    labels = {"static": "static records (dupe_factor 1)", "dynamic": "dynamic masking (text)"}
    for run in RUNS:
        train, heldout = curves[run]["train"], curves[run]["eval"]
        for ax, tag in ((loss_ax, "mlm_loss"), (acc_ax, "mlm_accuracy")):
            if tag in train:
                x, y = zip(*train[tag])
                ax.plot(x, y, "--", color=colors[run], alpha=0.6, label=f"{labels[run]}, train")
            if tag in heldout:
                x, y = zip(*heldout[tag])
                ax.plot(x, y, "o-", color=colors[run], label=f"{labels[run]}, held-out")
    loss_ax.set_ylabel("MLM loss")
    acc_ax.set_ylabel("MLM accuracy")
    for ax in (loss_ax, acc_ax):
        ax.set_xlabel("step (batch 32)")
        ax.grid(alpha=0.3)
    loss_ax.legend(fontsize=7)
    fig.suptitle(f"run_quick albert_mini pretraining, {steps} steps: static vs dynamic masking "
                 "(held-out: the same static records)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    args = parse(argv)
    config, paths, steps, commands = prepare(args)
    seconds = {}
    for run in RUNS:
        model_dir = paths("pretrain", run)
        if not args.plot_only and not os.path.exists(os.path.join(model_dir,
                                                                  "eval_results.json")):
            print(f"pretrain {run}:", flush=True)
            start = time.time()
            _run(commands[run], paths("logs", f"pretrain_{run}.log"))
            seconds[run] = time.time() - start
    curves = {run: {split: scalars(paths("pretrain", run), split)
                    for split in ("train", "eval")} for run in RUNS}
    plot(curves, args.plot, steps)
    print(f"plot: {os.path.relpath(args.plot, ROOT)}")
    print(f"\nrun_quick {MODEL}, {steps} steps, batch {config.pretrain.batch_size}, "
          f"seed {config.seed}; held-out: the same static records\n")
    print(f"| training input | held-out MLM loss at step {steps} | held-out MLM accuracy | "
          "held-out SOP accuracy | training MLM loss (the last loop's steps) |")
    print("|---|---:|---:|---:|---:|")
    for run in RUNS:
        heldout, train = curves[run]["eval"], curves[run]["train"]

        def last(points, tag):
            return points[tag][-1][1] if points.get(tag) else float("nan")
        name = "static records (`albert-tf-create-pretraining-data`, dupe_factor 1)" \
            if run == "static" else "dynamic masking (`--train_source=text`)"
        print(f"| {name} | {last(heldout, 'mlm_loss'):.3f} | {last(heldout, 'mlm_accuracy'):.3f} "
              f"| {last(heldout, 'sop_accuracy'):.3f} | {last(train, 'mlm_loss'):.3f} |")
    if seconds:
        print("\nwall seconds: " + ", ".join(f"{k} {v:.0f}" for k, v in seconds.items()))
    return 0

if __name__ == "__main__":
    from albert_tf.cli import script_main
    script_main(main)
