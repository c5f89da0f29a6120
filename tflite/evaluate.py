"""Score any exported ``.tflite`` on a task's dev set (accuracy, or the task's metric).

    albert-tflite-evaluate --model=edge/sst2_int8 --task=sst2 [--data_dir=DIR]
        # --data_dir defaults to $ALBERT_TF_DATA_DIR
    python -m albert_tflite.evaluate --model=edge/sst2_text --task=sst2 --json=scores.json
    albert-tflite-evaluate --model=edge/final --task=sst2 --split=test   # once, at the end

Classification: accuracy (and Matthews correlation for CoLA); regression: Pearson and
Spearman. The dev split by default; ``--split=test`` is for the final report of a model
chosen on dev (`albert_tf.pipeline.driver` does this once), never for choosing.

The CLI of `albert_tf.export.evaluate` (``python -m albert_tf.export.evaluate`` takes the
same flags), which holds the evaluation; its names are re-exported here.
"""

from __future__ import annotations

import sys

from albert_tf.export.evaluate import SPLITS, evaluate, load_split, main, open_runner, score

__all__ = ["SPLITS", "evaluate", "load_split", "main", "open_runner", "score"]


if __name__ == "__main__":
    sys.exit(main())
