"""Pretraining input throughput vs what the trainer consumes (instances/s, seq 128).

Measured in one process, one after another, on the same IMDB slice and vocabulary
(official_configs/vocab/imdb_pydocs_8k.model, max_seq_length 128, 20 masked positions):

1. static records: `albert_tf.data.pretraining.pretraining_dataset` reading the TFRecords
   of (3) into shuffled training batches;
2. dynamic masking: `albert_tf.data.dynamic_masking.text_pretraining_dataset` making SOP
   pairs and masks from the raw text, in tf.data;
3. record creation: `albert_tf.data.pretraining_data.create_pretraining_data` (the local
   path of ``albert-tf-create-pretraining-data``) with one worker process: instances
   written per second per core, at ``--dupe_factors`` (each document is tokenized once and
   cut and masked ``dupe_factor`` times);
4. training: the training step of ``albert-tf-pretrain`` (the trainer's `tf.function`,
   AdamW, float32) on an in-memory batch, for each ``--models`` entry: examples/s.

The input pipelines are timed with tf.data's own thread pool (all cores) and with a
private pool of one thread (per core), after ``--warmup`` batches (tracing). The last
columns say how many times faster than each model's training step a path is: below 1 the
input is the bottleneck on this machine.

    .venv/bin/python studies/figures.py input-throughput
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import time


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data_dir", default=None, help="default: $ALBERT_TF_DATA_DIR")
    p.add_argument("--work_dir", default="/tmp/albert_tf_input_throughput")
    p.add_argument("--documents", type=int, default=2000, help="IMDB reviews in the slice")
    p.add_argument("--batch_size", type=int, default=16)
    p.add_argument("--seq_length", type=int, default=128)
    p.add_argument("--max_predictions", type=int, default=20)
    p.add_argument("--batches", type=int, default=200, help="timed batches per input path")
    p.add_argument("--warmup", type=int, default=5, help="untimed batches / steps first")
    p.add_argument("--steps", type=int, default=6, help="timed training steps per model")
    p.add_argument("--models", default="albert_base,albert_mini")
    p.add_argument("--dupe_factors", default="1,10",
                   help="record creation is timed at each (tokenization is once per document)")
    p.add_argument("--json", default="", help="also write the results here")
    p.add_argument("--from_json", default="", help="print the table of an earlier --json")
    return p.parse_args(argv)


def write_slice(data_dir: str, path: str, documents: int) -> None:
    from albert_tf.data.documents import iter_documents
    with open(path, "w", encoding="utf-8") as f:
        for i, doc in enumerate(iter_documents([os.path.join(data_dir, "corpus",
                                                             "imdb-unsup.txt")])):
            if i >= documents:
                break
            f.write("\n".join(doc) + "\n\n")


def time_batches(ds, batches: int, warmup: int, threads: int | None) -> float:
    """Instances per second over ``batches`` batches of ``ds`` after ``warmup``."""
    from albert_tf.backend import tf
    if threads:
        options = tf.data.Options()
        options.threading.private_threadpool_size = threads
        ds = ds.with_options(options)
    from albert_tf.benchmark.timing import time_call
    it = iter(ds)
    sizes = []
    latencies = time_call(lambda: sizes.append(int(next(it)["input_word_ids"].shape[0])),
                          batches, 0.0, warmup)
    return sum(sizes[warmup:]) / (sum(latencies) / 1e3)


def train_rate(model: str, args) -> float:
    """Examples per second of the training step (in-memory batch)."""
    import albert_tf
    from albert_tf.data.pretraining import synthetic_batch
    from albert_tf.training.trainer import pretraining_step_config, time_pretraining_steps
    config = pretraining_step_config(model, args.batch_size, args.seq_length,
                                     args.max_predictions,
                                     os.path.join(args.work_dir, "train", model))
    batch = synthetic_batch(albert_tf.load_config(model), args.batch_size, args.seq_length,
                            args.max_predictions)
    result = time_pretraining_steps(config, batch, args.warmup, args.steps)
    return args.steps * args.batch_size / result["seconds"]


def print_table(results: dict) -> None:
    """The docs table of ``results`` (`main`'s, or read back with ``--from_json``)."""
    models = list(results["train"])
    cores = results["config"].get("cores", os.cpu_count())

    def ratio(rate, model):
        value = rate / results["train"][model]
        return f"{value:,.0f}" if value >= 100 else f"{value:.1f}"

    config = results["config"]
    print(f"machine: {results['cpu']}; TensorFlow {results['tf']}")
    print(f"IMDB slice: {config['documents']} reviews, {results['slice_mb']:.2f} MB, "
          f"{results['instances']} instances at seq {config['seq_length']} (dupe_factor 1); "
          f"batch {config['batch_size']}\n")
    head = " | ".join(f"x {m} training" for m in models)
    print(f"| path | instances/s, {cores} cores | instances/s, 1 thread | {head} |")
    print("|---|---:|---:|" + "---:|" * len(models))

    def row(name, all_cores, one):
        ratios = " | ".join(ratio(all_cores, m) for m in models)
        one = f"{one:,.0f}" if one is not None else "-"
        all_text = f"{all_cores:,.0f}" if all_cores is not None else "-"
        print(f"| {name} | {all_text} | {one} | {ratios} |")

    row("(1) static TFRecords -> batches", results["static"]["all_cores"],
        results["static"]["one_thread"])
    row("(2) dynamic masking from text", results["dynamic"]["all_cores"],
        results["dynamic"]["one_thread"])
    for dupe, c in sorted(results["create"].items(), key=lambda item: int(item[0])):
        print(f"| (3) albert-tf-create-pretraining-data, dupe_factor {dupe}, one process "
              f"(written; {c['mb_per_core']:.2f} MB of text/s) | - | {c['per_core']:,.0f} | "
              + " | ".join(ratio(c["per_core"], m) for m in models)
              + " |")
    for m in models:
        rate = results["train"][m]
        print(f"| (4) {m} training step (examples/s) | {rate:,.1f} | - | "
              + " | ".join("1" if n == m else "-" for n in models) + " |")


def main(argv=None) -> dict:
    args = parse(argv)
    if args.from_json:
        with open(args.from_json) as f:
            results = json.load(f)
        print_table(results)
        return results
    from albert_tf import resources
    from albert_tf.backend import tf
    from albert_tf.benchmark.cpu import cpu_info
    from albert_tf.data.dynamic_masking import text_pretraining_dataset
    from albert_tf.data.pretraining import pretraining_dataset
    from albert_tf.data.pretraining_data import PretrainingConfig, create_pretraining_data

    data_dir = resources.data_dir(args.data_dir)
    vocab = resources.resolve(resources.DEFAULT_VOCAB)
    os.makedirs(args.work_dir, exist_ok=True)
    text = os.path.join(args.work_dir, "imdb_slice.txt")
    write_slice(data_dir, text, args.documents)
    config = PretrainingConfig(max_seq_length=args.seq_length,
                               max_predictions_per_seq=args.max_predictions, dupe_factor=1,
                               random_seed=1)
    results = {"cpu": cpu_info(measure_clock=False).summary(), "tf": tf.__version__,
               "config": dict(vars(args), cores=os.cpu_count()),
               "slice_mb": os.path.getsize(text) / 1e6, "create": {}}
    for dupe in sorted({1, *(int(d) for d in args.dupe_factors.split(",") if d)}):
        out = os.path.join(args.work_dir, f"records_dupe{dupe}")
        shutil.rmtree(out, ignore_errors=True)                      # time a fresh creation
        start = time.perf_counter()
        summary = create_pretraining_data(
            [text], os.path.join(out, "imdb.tfrecord"), vocab,
            dataclasses.replace(config, dupe_factor=dupe), num_workers=1, progress=False)
        seconds = time.perf_counter() - start
        results["create"][dupe] = {"instances": summary["instances"], "seconds": seconds,
                                   "per_core": summary["instances"] / seconds,
                                   "mb_per_core": results["slice_mb"] / seconds}
    records = os.path.join(args.work_dir, "records_dupe1", "imdb.tfrecord*")
    results["instances"] = results["create"][1]["instances"]

    def static(threads):
        ds = pretraining_dataset(records, args.batch_size, args.seq_length,
                                 args.max_predictions, is_training=True, seed=0)
        return time_batches(ds, args.batches, args.warmup, threads)

    def dynamic(threads):
        ds = text_pretraining_dataset(text, vocab, args.batch_size, config, seed=0)
        return time_batches(ds, args.batches, args.warmup, threads)

    for name, fn in (("static", static), ("dynamic", dynamic)):
        results[name] = {"all_cores": fn(None), "one_thread": fn(1)}
    models = [m for m in args.models.split(",") if m]
    results["train"] = {m: train_rate(m, args) for m in models}

    print_table(results)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return results

if __name__ == "__main__":
    from albert_tf.cli import script_main
    script_main(main)
