"""Pretraining throughput (tokens/s): albert-tf vs Hugging Face transformers (PyTorch).

Both train the same ALBERT config (MLM + SOP heads, same batch, sequence length and
number of masked positions, AdamW, float32, dropout 0) on the same synthetic batches,
on the same machine, in the same run, with the same number of CPU threads (PyTorch is also run with 1 thread, and its best
thread count is compared, since its OpenMP threads busy-wait on a shared CPU). The
albert-tf side runs the training step of ``albert-tf-pretrain`` (the shared trainer's
`tf.function`, all-reduce-free on one device, global-norm clipping included); the
PyTorch side is ``AlbertForPreTraining`` with ``torch.optim.AdamW`` and
``clip_grad_norm_``. Tokens/s counts every position of every sequence (B x S).
Part of the difference is by design: albert-tf computes MLM logits only at the masked
positions (``masked_lm_positions``), Hugging Face over all B x S positions.

    .venv/bin/python studies/figures.py pretrain-throughput --model_config=albert_mini \\
        --batch_size=32 --seq_length=128 --steps=30 --threads=2

Not a test: it prints a table and the speed-up (goal: >= 1.2x).
"""

from __future__ import annotations

import argparse
import json
import os

import numpy as np



def run_albert_tf(args, batch) -> dict:
    """albert-tf's pretraining step (the trainer's exact step) on ``batch``, timed."""
    from albert_tf.training.trainer import pretraining_step_config, time_pretraining_steps
    config = pretraining_step_config(args.model_config, args.batch_size, args.seq_length,
                                     args.max_predictions, args.work_dir, args.jit_compile)
    result = time_pretraining_steps(config, batch, args.warmup, args.steps)
    return {**result,
            "tokens_per_sec": args.steps * args.batch_size * args.seq_length / result["seconds"]}


def run_torch(args, batch, albert_config, threads: int | None = None) -> dict:
    import torch
    from transformers import AlbertConfig as HFConfig
    from transformers import AlbertForPreTraining

    from albert_tf.benchmark.timing import time_call
    from albert_tf.config import activation_to_hf
    torch.set_num_threads(threads or args.threads)
    torch.manual_seed(0)
    c = albert_config
    hf_config = HFConfig(vocab_size=c.vocab_size, embedding_size=c.embedding_size,
                         hidden_size=c.hidden_size, num_hidden_layers=c.num_hidden_layers,
                         num_hidden_groups=c.num_hidden_groups,
                         inner_group_num=c.inner_group_num,
                         num_attention_heads=c.num_attention_heads,
                         intermediate_size=c.intermediate_size,
                         hidden_act=activation_to_hf(c.hidden_act), hidden_dropout_prob=0.0,
                         attention_probs_dropout_prob=0.0, classifier_dropout_prob=0.0,
                         max_position_embeddings=c.max_position_embeddings,
                         type_vocab_size=c.type_vocab_size, layer_norm_eps=c.layer_norm_eps)
    model = AlbertForPreTraining(hf_config)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
    ids = torch.as_tensor(batch["input_word_ids"], dtype=torch.long)
    labels = torch.full_like(ids, -100)
    positions = torch.as_tensor(batch["masked_lm_positions"], dtype=torch.long)
    labels.scatter_(1, positions, torch.as_tensor(batch["masked_lm_ids"], dtype=torch.long))
    inputs = dict(input_ids=ids,
                  attention_mask=torch.as_tensor(batch["input_mask"], dtype=torch.long),
                  token_type_ids=torch.as_tensor(batch["input_type_ids"], dtype=torch.long),
                  labels=labels,
                  sentence_order_label=torch.as_tensor(batch["next_sentence_labels"],
                                                       dtype=torch.long))

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = model(**inputs).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        return float(loss.detach())

    losses = []
    latencies = time_call(lambda: losses.append(step()), args.steps, 0.0, args.warmup)
    seconds = sum(latencies) / 1e3
    return {"seconds": seconds, "loss": float(np.mean(losses[args.warmup:])),
            "tokens_per_sec": args.steps * args.batch_size * args.seq_length / seconds}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model_config", default="albert_mini")
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--seq_length", type=int, default=128)
    parser.add_argument("--max_predictions", type=int, default=20)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2,
                        help="intra-op threads for both frameworks")
    parser.add_argument("--torch_threads", default="",
                        help="comma-separated torch thread counts to try (default: 1 and "
                             "--threads); the best is compared. On a shared CPU, PyTorch's "
                             "OpenMP threads busy-wait and 2 threads can be much slower than 1.")
    parser.add_argument("--jit_compile", action="store_true", help="XLA for the TF step")
    parser.add_argument("--work_dir", default="/tmp/albert_tf_throughput")
    parser.add_argument("--json", default="", help="also write the results here")
    args = parser.parse_args(argv)

    os.environ.setdefault("TF_NUM_INTRAOP_THREADS", str(args.threads))
    from albert_tf.backend import tf
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(max(1, args.threads))
    import albert_tf
    from albert_tf.data.pretraining import synthetic_batch
    albert_config = albert_tf.load_config(args.model_config)
    batch = synthetic_batch(albert_config, args.batch_size, args.seq_length, args.max_predictions)

    tf_result = run_albert_tf(args, batch)
    thread_counts = sorted({int(t) for t in args.torch_threads.split(",") if t.strip()}
                           or {1, args.threads})
    torch_runs = {t: run_torch(args, batch, albert_config, t) for t in thread_counts}
    best_threads = max(torch_runs, key=lambda t: torch_runs[t]["tokens_per_sec"])
    torch_result = torch_runs[best_threads]
    ratio = tf_result["tokens_per_sec"] / torch_result["tokens_per_sec"]
    print(f"pretraining throughput, {args.model_config}: batch {args.batch_size} x seq "
          f"{args.seq_length}, {args.max_predictions} masked positions, {args.steps} steps, "
          f"{args.threads} threads")
    print("| implementation | tokens/s | s/step | mean loss |")
    print("|---|---|---|---|")
    rows = [(f"albert-tf (tf_keras, TF {tf.__version__}, {args.threads} threads)", tf_result)]
    rows += [(f"transformers AlbertForPreTraining (PyTorch, {t} thread{'s' * (t > 1)})", r)
             for t, r in torch_runs.items()]
    for name, r in rows:
        print(f"| {name} | {r['tokens_per_sec']:,.0f} | {r['seconds'] / args.steps:.3f} | "
              f"{r['loss']:.3f} |")
    print(f"speed-up albert-tf / transformers (best PyTorch thread count, {best_threads}): "
          f"{ratio:.2f}x (goal >= 1.2x)")
    result = {"albert_tf": tf_result, "transformers": torch_result, "speedup": ratio,
              "transformers_by_threads": {str(t): r for t, r in torch_runs.items()},
              "config": vars(args)}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    return result


if __name__ == "__main__":
    from albert_tf.cli import script_main
    script_main(main)
