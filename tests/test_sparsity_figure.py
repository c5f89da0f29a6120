"""Issue #28: the accuracy-vs-sparsity figure (`albert_tf.pipeline.sparsity_report`, driven by
`studies/sparsity_albert_vs_bert/run.py`) reads a run of run_sparsity_albert_vs_bert from its
recorded stages: here a fake run directory with the files the pipeline's stages write (no
TensorFlow, no training)."""

from __future__ import annotations

import json
import os


def _bench():
    from albert_tf.pipeline import sparsity_report
    return sparsity_report


def _write(path, value):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(value if isinstance(value, str) else json.dumps(value))


def _fake_run(root):
    stages = os.path.join(root, "stages")
    for model, dense, pruned in (("albert_mini", 0.80, {"0.5": 0.79, "0.9": 0.70}),
                                 ("bert_mini", 0.82, {"0.5": 0.82})):
        _write(f"{stages}/finetune_{model}.json", {"best": {"metric": "accuracy",
                                                            "value": dense + 0.001}})
        _write(f"{stages}/score_{model}__none.json", {"accuracy": dense, "examples": 872})
        for sparsity, accuracy in pruned.items():
            candidate = f"{model}+prune{sparsity}"
            _write(f"{stages}/compress_{candidate}.json", {
                "method": f"prune{sparsity}", "dev": {"accuracy": accuracy + 0.002},
                "sparsity": float(sparsity), "params": 1000, "steps": 200, "seconds": 60.0})
            _write(f"{stages}/score_{candidate}__none.json",
                   {"accuracy": accuracy, "examples": 872})
            _write(f"{root}/compress/{candidate}/sparsity.md",
                   "| weight | shape elements | sparsity |\n|---|---|---|\n"
                   f"| a/kernel:0 | 400 | {sparsity} |\n"
                   f"| **all pruned weights** | 400 | {sparsity} |\n")
    # The 0% control of albert_mini (`run_controls` writes it).
    _write(f"{root}/control/albert_mini+prune0/report.json", {
        "dev": {"start": {"accuracy": 0.80, "examples": 872},
                "pruning": {"accuracy": 0.81, "examples": 872}},
        "sparsity": {"total": 0.0}, "params": 1000})
    # Stages the figure ignores: another method, a quantized export, the report.
    _write(f"{stages}/compress_albert_mini+structured.json", {"method": "structured"})
    _write(f"{stages}/score_albert_mini__dynamic.json", {"accuracy": 0.1, "examples": 872})
    _write(f"{stages}/report.json", {"artifacts": 5})


def test_rows_table_and_plot_from_a_run_directory(tmp_path):
    bench = _bench()
    _fake_run(str(tmp_path / "run"))
    rows = bench.collect(str(tmp_path / "run"))
    assert [(r.model, r.target, r.control) for r in rows] == [
        ("albert_mini", 0.0, False), ("albert_mini", 0.0, True), ("albert_mini", 0.5, False),
        ("albert_mini", 0.9, False), ("bert_mini", 0.0, False), ("bert_mini", 0.5, False)]
    dense, control, pruned = rows[0], rows[1], rows[3]
    assert control.keras_accuracy == 0.81 and control.tflite_accuracy is None
    assert dense.keras_accuracy == 0.801 and dense.tflite_accuracy == 0.80
    assert dense.achieved is None and dense.zero_share is None
    assert pruned.tflite_accuracy == 0.70 and pruned.examples == 872
    assert pruned.pruned_weights == 400 and abs(pruned.zero_share - 0.36) < 1e-9
    assert pruned.kept == 40

    text = bench.table(rows)
    lines = text.splitlines()
    assert len(lines) == 2 + len(rows)
    assert lines[2] == "| albert_mini | dense | - | - | - | 80.10 | 80.00 | - | - |"
    assert lines[3] == ("| albert_mini | 0% + same steps (control) | 0.00 | - | - | 81.00 | - "
                        "| - | - |")     # no sparsity.md: kept and the zeros' share unknown
    assert lines[5] == ("| albert_mini | 90% | 90.00 | 40 | 36.0 | 70.20 | 70.00 | -10.00 "
                        "| -10.80 |")
    assert lines[7].endswith("| 82.20 | 82.00 | +0.00 | - |")       # no control for bert_mini

    plot = tmp_path / "plot.png"
    bench.plot(rows, str(plot))
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    out = tmp_path / "rows.json"
    assert bench.main([f"--output_dir={tmp_path / 'run'}",
                       f"--plot={plot}", f"--json={out}"]) == 0
    assert json.loads(out.read_text())[3]["zero_share"] == pruned.zero_share
