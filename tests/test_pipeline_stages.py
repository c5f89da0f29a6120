"""Pipeline plumbing: stages run once, resume after a failure, and the report's Pareto front."""

import json
import os
import sys

import pytest

from albert_tf.pipeline.report import Artifact, pareto_front, write_report
from albert_tf.pipeline.stages import Stage, StageError, StageRunner


def _counting_stage(tmp_path, name, fail_flag=None):
    counter = tmp_path / f"{name}.count"
    script = ("import os, sys\n"
              f"p = {str(counter)!r}\n"
              "n = int(open(p).read()) + 1 if os.path.exists(p) else 1\n"
              "open(p, 'w').write(str(n))\n"
              f"sys.exit(1 if os.path.exists({str(fail_flag)!r}) else 0)\n")
    return counter, Stage(name, [sys.executable, "-c", script],
                          collect=lambda: {"count": int(counter.read_text())})


def test_finished_stages_are_skipped_and_a_failed_one_reruns(tmp_path):
    fail = tmp_path / "fail"
    runner = StageRunner(str(tmp_path / "run"), echo=lambda s: None)
    first_count, first = _counting_stage(tmp_path, "first")
    second_count, second = _counting_stage(tmp_path, "second", fail_flag=fail)
    second.needs = ("first",)

    fail.write_text("x")
    assert runner.run(first)["count"] == 1
    with pytest.raises(StageError, match="second.*failed.*logs"):
        runner.run(second)
    assert runner.result("second") is None

    fail.unlink()  # "restart the same command"
    assert runner.run(first)["count"] == 1          # skipped: not run again
    assert first_count.read_text() == "1"
    assert runner.run(second)["count"] == 2         # ran again and finished
    assert set(runner.results()) == {"first", "second"}
    assert "$ " in (tmp_path / "run" / "logs" / "second.log").read_text()


def test_a_stage_refuses_to_run_before_its_needs(tmp_path):
    runner = StageRunner(str(tmp_path), echo=lambda s: None)
    with pytest.raises(StageError, match="needs 'vocab'"):
        runner.run(Stage("pretrain", None, needs=("vocab",)))


def _artifact(name, accuracy, latency, size=1.0):
    return Artifact(name, "m", "dense", "tflite", accuracy, latency, size)


def test_pareto_front_keeps_only_undominated_artifacts():
    artifacts = [_artifact("fast_bad", 0.70, 1.0), _artifact("slow_good", 0.90, 10.0),
                 _artifact("dominated", 0.80, 12.0), _artifact("middle", 0.85, 5.0),
                 _artifact("tie_slower", 0.85, 6.0)]
    assert [a.name for a in pareto_front(artifacts)] == ["fast_bad", "middle", "slow_good"]


def test_report_files_are_written(tmp_path):
    artifacts = [_artifact("a", 0.8, 2.0, 3.0), _artifact("b", 0.85, 4.0, 1.0)]
    curves = {"small": [(10.0, 7.0), (60.0, 5.5)], "large": [(10.0, 7.2), (60.0, 5.0)]}
    text = write_report(str(tmp_path), artifacts, curves, {"task": "sst2"})
    for name in ("report.md", "report.json", "pretraining_curves.png",
                 "accuracy_vs_latency.png", "accuracy_vs_size.png"):
        assert os.path.getsize(tmp_path / name) > 0, name
    assert "| large | 1.0 | 7.200 | 5.000 |" in text
    saved = json.loads((tmp_path / "report.json").read_text())
    assert saved["pareto_front"] == ["a", "b"]
