"""albert-tflite-evaluate: score an export (TFLite, ONNX, OpenVINO) on a task's dev set.

    albert-tflite-evaluate --model=edge/sst2_int8 --task=sst2    # --data_dir: $ALBERT_TF_DATA_DIR
    albert-tflite-evaluate --model=edge/sst2_int8 --model=server/sst2_ort --model=server/sst2_ir \\
        --task=sst2 --json=scores.json      # several exports, one JSON list
    albert-tflite-evaluate --model=edge/sst2_int8 --task=sst2 --split=test   # once, at the end

Classification: accuracy (and Matthews correlation for CoLA); regression: Pearson and
Spearman. The dev split by default; ``--split=test`` is for the final report of a model
chosen on dev (`albert_tf.pipeline.driver` does this once), never for choosing. A model
trained on another task than ``--task`` (its metadata.json's ``task``) is refused unless
``--allow_task_mismatch``.

The CLI of `albert_tf.runtime.evaluate` (``python -m albert_tf.runtime.evaluate`` takes the
same flags), which holds the evaluation; its names are re-exported here.
"""

from __future__ import annotations

import sys

from albert_tf.runtime import evaluate as _cli
from albert_tf.runtime.evaluate import (SPLITS, check_task, evaluate, load_split, open_runner,
                                       score)

__all__ = ["SPLITS", "check_task", "evaluate", "load_split", "main", "open_runner", "score"]


def main(argv=None) -> int:
    """``albert-tflite-evaluate``: `albert_tf.runtime.evaluate.main` with this docstring (its
    examples) as ``--help``."""
    return _cli.main(argv, doc=__doc__)


if __name__ == "__main__":
    sys.exit(main())
