"""Structured-pruning latency at two model widths (random weights: latency only).

    make figures NAME=compression-structured-shapes

For albert_small (H=256, the trained experiments) and albert_base (H=768) shapes:
the dense model and the same model with 25% of the heads and 50% of the FFN neurons
removed (`structured.apply_plan`, magnitude importance), exported by the export library
and timed together (batch 1, seq 128, 2 threads). Shows how the per-op overhead of the
small ops (LayerNorm, softmax, GELU, reshapes), which pruning does not shrink, limits
the speed-up of a small model.
"""

import json
import os

from common import RESULTS, export, latency, log, path

from albert_tf import resources
from albert_tf.backend import keras
from albert_tf.checkpoints import TaskInfo, build_task_model, save_model_dir
from albert_tf.compression import structured
from albert_tf.compression.compression_config import StructuredConfig
from albert_tf.config import load_config

VOCAB = resources.resolve(resources.DEFAULT_VOCAB)
INFO = TaskInfo(task="sst2", head="classification", label_list=("0", "1"))


def main() -> None:
    files = {}
    for name in ("albert_small", "albert_base"):
        keras.utils.set_random_seed(0)
        config = load_config(name).replace(vocab_size=8000)
        model = build_task_model(config, INFO)
        plan = structured.plan(model, StructuredConfig(importance="magnitude"))
        pruned = structured.apply_plan(model, plan, lambda c: build_task_model(c, INFO))
        for tag, m in (("dense", model), ("structured", pruned)):
            directory = save_model_dir(m, path("shapes", f"{name}_{tag}"), m.albert_config,
                                       INFO, VOCAB)
            files[f"{name}_{tag}"] = export(directory, f"shapes_{name}_{tag}")
    times = latency(files, rounds=5, seconds=4.0)
    for name in ("albert_small", "albert_base"):
        times[f"{name}_speedup"] = times[f"{name}_dense"] / times[f"{name}_structured"]
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "structured_shapes.json"), "w") as f:
        json.dump(times, f, indent=2)
    log(json.dumps(times))


if __name__ == "__main__":
    from albert_tf.cli import script_main
    script_main(main)
