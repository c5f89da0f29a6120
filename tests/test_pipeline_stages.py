"""Pipeline plumbing: stages run once, resume after a failure, and the report's Pareto front."""

import json
import os
import sys

import pytest

from albert_tf.pipeline.pareto_report import Artifact, choose_final, pareto_front, write_report
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


def test_the_final_choice_is_the_fastest_within_the_allowed_dev_drop():
    artifacts = [_artifact("best", 0.830, 10.0), _artifact("close", 0.8205, 4.0),
                 _artifact("closer_slower", 0.825, 6.0), _artifact("fast_bad", 0.80, 1.0)]
    assert choose_final(artifacts, 1.0).name == "close"          # 0.95 points below best
    assert choose_final(artifacts, 0.5).name == "closer_slower"
    assert choose_final(artifacts, 0.0).name == "best"
    assert choose_final(artifacts, 5.0).name == "fast_bad"
    tie = [_artifact("a", 0.81, 2.0), _artifact("b", 0.82, 2.0)]
    assert choose_final(tie, 1.0).name == "b"                   # equal speed: more accurate
    with pytest.raises(ValueError, match="no scored and timed artifacts"):
        choose_final([], 1.0)


def test_latencies_inside_each_others_spread_are_ties_the_more_accurate_wins():
    """Interleaved rounds give each latency a spread; a faster median inside the spread of
    a slower one is a tie on speed, so the more accurate of the two ships."""
    fast = Artifact("fast", "m", "dense", "tflite_int8", 0.80, 1.00, 1.0, latency_low=0.95,
                    latency_high=1.10)
    close = Artifact("close", "m", "dense", "tflite_int8", 0.81, 1.05, 1.0, latency_low=1.02,
                     latency_high=1.12)
    apart = Artifact("apart", "m", "dense", "tflite_int8", 0.81, 1.30, 1.0, latency_low=1.20,
                     latency_high=1.40)
    assert choose_final([fast, close], 5.0).name == "close"
    assert choose_final([fast, apart], 5.0).name == "fast"
    once = [_artifact("a", 0.80, 1.00), _artifact("b", 0.81, 1.05)]   # no spread: no tie
    assert choose_final(once, 5.0).name == "a"


def test_the_report_compares_at_equal_latency(tmp_path):
    from albert_tf.pipeline.pareto_report import markdown
    small = Artifact("albert_mini/int8", "albert_mini", "dense", "tflite_int8", 0.79, 0.30, 1.0,
                     latency_low=0.29, latency_high=0.31)
    large = Artifact("albert_small+at_albert_mini/int8", "albert_small", "at_albert_mini",
                     "tflite_int8", 0.81, 0.28, 2.0)
    text = markdown([small, large], {}, {}, equal_latency=[(large.name, small.name),
                                                            ("missing/int8", small.name)])
    assert "## At equal latency: compressed large model vs trained small model" in text
    assert (f"| {large.name} | 81.00 | 0.280 (0.280-0.280) | {small.name} | 79.00 | "
            "0.300 (0.290-0.310) | +2.00 |") in text
    assert "missing/int8" not in text


def test_latency_budgets_come_from_the_named_models_int8_timing(tmp_path):
    """run_quick compresses albert_small at albert_mini's measured int8 latency (and 1.5x
    less): the compress stage waits for that timing and turns it into the budget, timed at
    the pipeline's own shape and threads."""
    from albert_tf.compression.compression_config import build_compression_config
    from albert_tf.pipeline.driver import Paths, all_stages
    config = load_pipeline_config("run_quick", [f"output_dir={tmp_path}"])
    stages = {s.name: s for s in all_stages(config, Paths(config.output_dir))}
    timing = tmp_path / "export" / "albert_mini" / "int8_latency.json"
    timing.parent.mkdir(parents=True)
    timing.write_text(json.dumps([{"median_ms": 0.6}]))
    for name, budget in (("at_albert_mini", 0.6), ("at_albert_mini_x1.5", 0.4)):
        stage = stages[f"compress_albert_small+{name}"]
        assert "time_albert_mini__int8" in stage.needs
        resolved = build_compression_config([stage.argv()[-1].split("=", 1)[1]])
        assert resolved.speedup.latency_budget_ms == pytest.approx(budget)
        assert resolved.speedup.seq_length == config.export.seq_length
        assert resolved.speedup.threads == config.export.threads
        assert resolved.structured.schedule == "polynomial_decay"
        assert resolved.structured.train_steps == config.compress.latency_steps
        assert resolved.stages == ["structured"]
        assert [s for s in stages if s.startswith(f"export_albert_small+{name}__")] == \
            [f"export_albert_small+{name}__int8"]


@pytest.mark.parametrize("override, message", [
    ("compress.latency_of=[bert_base]", "not in pretrain.models"),
    ("compress.latency_factors=[0.5]", "factors >= 1"),
    ("export.quantizations=[dynamic]", "add int8 to export.quantizations"),
])
def test_bad_latency_budgets_fail_naming_the_key(tmp_path, override, message):
    with pytest.raises(ConfigValueError, match=message):
        load_pipeline_config("run_quick", [f"output_dir={tmp_path}", override])


def test_report_files_are_written(tmp_path):
    artifacts = [_artifact("a", 0.8, 2.0, 3.0), _artifact("b", 0.85, 4.0, 1.0)]
    curves = {"small": [(10.0, 7.0), (60.0, 5.5)], "large": [(10.0, 7.2), (60.0, 5.0)]}
    text = write_report(str(tmp_path), artifacts, curves, {"task": "sst2"})
    for name in ("report.md", "report.json", "pretraining_curves.png",
                 "accuracy_vs_latency.png", "accuracy_vs_size.png"):
        assert os.path.getsize(tmp_path / name) > 0, name
    assert "| large | 1.0 | 7.200 | 5.000 | 2 |" in text
    saved = json.loads((tmp_path / "report.json").read_text())
    assert saved["pareto_front"] == ["a", "b"]


# ------------------------------------------------------------------------- compression
from albert_tf.hyperparams import ConfigValueError  # noqa: E402
from albert_tf.pipeline import candidates as compress_lib  # noqa: E402
from albert_tf.pipeline.pipeline_config import PipelineConfig, load_pipeline_config  # noqa: E402


@pytest.mark.parametrize("override, key", [
    ("compress.prune_sparsities=[0.5,1.5]", "compress.prune_sparsities: 1.5 is not in"),
    ("compress.prune_sparsities=[0.5,0.5]", "compress.prune_sparsities.*twice"),
    ("compress.models=[albert_base]", "compress.models: .*albert_base.*pretrain.models"),
    ("compress.quantizations=[qat]", "compress.quantizations: 'qat'"),
    ("compress.seconds=0", "compress.seconds: must be positive"),
    ("compress.distill=true,compress.distill_student=no_such_model", "compress.distill_student"),
    ("pretrain.models=[albert_mini,no_such_model]", "pretrain.models: 'no_such_model'"),
    ("final_test.max_dev_drop=-1", "final_test.max_dev_drop=-1"),
    ("pretrain.learning_rates={albert_base: 0.001}", "pretrain.learning_rates: 'albert_base'"),
    ("pretrain.learning_rates={albert_mini: 2}", "pretrain.learning_rates.albert_mini=2.0"),
    ("pretrain.learning_rates=0.001", "pretrain.learning_rates: expected a mapping"),
    ("pretrain.max_steps_per_model={albert_base: 9000}", "pretrain.max_steps_per_model: 'alb"),
    ("pretrain.max_steps_per_model={albert_mini: 50}",
     "max_steps_per_model.albert_mini=50: .*warmup"),
    ("pretrain.max_steps_per_model={albert_mini: many}",
     "max_steps_per_model.albert_mini: expected an int"),
    ("compress.steps=-1", "compress.steps=-1: give the optimizer steps"),
    ("compress.steps=many", "compress.steps: expected an int"),
    ("pretrain.max_steps=50", "pretrain.max_steps=50: .*warmup"),
    ("finetune.max_steps=0", "finetune.max_steps=0: .*warmup"),
    ("pretrain.validation_interval=0", "pretrain.validation_interval=0"),
    ("finetune.validation_interval=-5", "finetune.validation_interval=-5"),
    ("pretrain.vocab_types={albert_mini: bpe}", "vocab_types.albert_mini='bpe': use "),
    ("pretrain.vocab_types={bert_base: wordpiece}", "pretrain.vocab_types: 'bert_base'"),
])
def test_bad_compression_keys_fail_naming_the_key(override, key):
    with pytest.raises(ConfigValueError, match=key):
        load_pipeline_config("run_quick", [override])


def test_a_bad_sparsity_fails_before_anything_runs(tmp_path):
    config = PipelineConfig(output_dir=str(tmp_path / "run"))
    config.compress.prune_sparsities = [1.5]
    from albert_tf.pipeline.driver import run_pipeline
    with pytest.raises(ConfigValueError,
                       match=r"compress.prune_sparsities: 1.5 is not in \(0, 1\)"):
        run_pipeline(config, echo=lambda s: None)
    assert not (tmp_path / "run").exists()


def test_a_final_test_with_nothing_exported_fails_before_anything_runs(tmp_path):
    from albert_tf.pipeline.driver import run_pipeline
    config = load_pipeline_config("run_quick", [f"output_dir={tmp_path / 'run'}",
                                                "export.quantizations=[]",
                                                "compress.prune_sparsities=[]",
                                                "compress.latency_of=[]"])
    with pytest.raises(ConfigValueError, match="final_test: nothing is exported"):
        run_pipeline(config, echo=lambda s: None)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("steps", [1, 2, 3, 7, 10, 11, 99, 450, 4001])
def test_step_budgets_give_valid_pruning_schedules(steps):
    from albert_tf.compression.compression_config import PruningConfig, validate_pruning
    schedule = compress_lib.pruning_schedule(steps)
    validate_pruning(PruningConfig(**schedule))        # reaches its final sparsity
    assert schedule["end_step"] <= steps and schedule["end_step"] >= 0.5 * steps


def test_seconds_become_steps_by_the_measured_speed():
    # 0.75 of what the 45 s of start-up, tracing and evaluation leave, at least 0.25
    assert compress_lib.training_steps(445, 4.0, "structured") == 1200     # 300 s at 4/s
    assert compress_lib.training_steps(445, 4.0, "qat") == 600             # twice as costly
    assert compress_lib.training_steps(60, 4.0, "structured") == 60        # 15 s
    assert compress_lib.training_steps(1, 0.01, "pruning") == 1            # at least one
    two_heads = compress_lib.structured_settings(100, num_heads=2)
    assert two_heads["head_fraction"] == 0.0 and two_heads["ffn_fraction"] == 0.5
    four_heads = compress_lib.structured_settings(100, num_heads=4)
    assert four_heads["head_fraction"] == 0.25
    assert four_heads["importance_batches"] + four_heads["train_steps"] == 100


def _flag(argv, name):
    return next(a.split("=", 1)[1] for a in argv if a.startswith(f"--{name}="))


def test_the_quick_experiment_is_budgeted_in_steps(tmp_path):
    """run_quick (the main job) means the same on every machine: fixed steps for every
    pretraining, finetuning and compression stage, at least 5 held-out points per
    pretraining curve, and wall-clock guards well above what the steps take."""
    from albert_tf.pipeline.driver import Paths, all_stages
    config = load_pipeline_config("run_quick", [f"output_dir={tmp_path}"])
    stages = {s.name: s for s in all_stages(config, Paths(config.output_dir))}
    pretrain = config.pretrain
    for model in pretrain.models:
        argv = stages[f"pretrain_{model}"].argv()
        steps = int(_flag(argv, "num_train_steps"))
        assert steps == pretrain.max_steps_per_model.get(model, pretrain.max_steps)
        assert steps // int(_flag(argv, "validation_interval")) >= 5, model
        assert float(_flag(argv, "max_seconds")) == pretrain.seconds
        assert int(_flag(argv, "seed")) == config.seed
        argv = stages[f"finetune_{model}"].argv()
        assert int(_flag(argv, "num_train_steps")) == config.finetune.max_steps
        assert int(_flag(argv, "seed")) == config.seed
    assert config.compress.steps > 0


def test_fixed_compression_steps_need_no_measured_speed(tmp_path):
    """compress.steps sets every stage's steps; no finetuning summaries are read (there
    are none here: the seconds conversion would fail)."""
    from albert_tf.compression.compression_config import build_compression_config
    from albert_tf.pipeline.driver import Paths, all_stages
    config = load_pipeline_config("run_full", [f"output_dir={tmp_path}", "compress.steps=40"])
    stages = {s.name: s for s in all_stages(config, Paths(config.output_dir))}
    for method, stage in (("prune0.8", "pruning"), ("structured", "structured"),
                          ("qat", "qat")):
        argv = stages[f"compress_albert_small+{method}"].argv()
        resolved = build_compression_config([argv[-1].split("=", 1)[1]])
        section = getattr(resolved, stage)
        if stage == "structured":
            assert section.train_steps + section.importance_batches == 40
        else:
            assert section.train_steps == 40
        budget = json.loads((tmp_path / "compress" / f"albert_small+{method}" /
                             "budget.json").read_text())
        assert budget["steps"] == 40 and budget["budget"] == "steps"
        assert budget["steps_per_second"] is None
    config.compress.steps = 0       # the seconds budget needs the measured speed
    stages = {s.name: s for s in all_stages(config, Paths(config.output_dir))}
    with pytest.raises(ConfigValueError, match="compress.steps_per_second: the finetuning"):
        stages["compress_albert_small+qat"].argv()


def test_the_report_states_step_budgets_and_guard_stops():
    from albert_tf.pipeline.driver import budget_meta, collect_compressions
    config = load_pipeline_config("run_quick", ["pretrain.max_steps_per_model="
                                                "{albert_small: 600}", "compress.steps=80"])
    results = {"pretrain_albert_mini": {"steps": 1500, "max_steps": 1500},
               "pretrain_albert_small": {"steps": 420, "max_steps": 600},
               "finetune_albert_mini": {"steps": 1500, "max_steps": 1500},
               "compress_albert_small+prune0.5": {
                   "method": "prune0.5", "steps": 80, "budget": "steps",
                   "budget_seconds": 90, "seconds": 70, "dev": {"accuracy": 0.8}}}
    meta = budget_meta(config, results)
    mini = config.pretrain.max_steps_per_model.get("albert_mini", config.pretrain.max_steps)
    assert meta["pretraining steps per model"].startswith(
        f"albert_mini {mini}, albert_small 600 (")
    assert meta["compression steps per stage"].startswith("80 (")
    assert meta["stopped by a wall-clock guard"] == "pretrain_albert_small at step 420 of 600"
    assert collect_compressions(results)[0].budget_seconds is None
    del results["pretrain_albert_small"]
    assert budget_meta(config, results)["stopped by a wall-clock guard"] == "none"


def test_the_full_experiment_plans_every_compression(tmp_path):
    from albert_tf.pipeline.driver import Paths, all_stages
    config = load_pipeline_config("run_full", [f"output_dir={tmp_path}",
                                               "compress.steps_per_second=2"])
    stages = {s.name: s for s in all_stages(config, Paths(config.output_dir))}
    assert config.compress.models == ["albert_small"]         # train large, then compress
    rates = {m: next(a for a in stages[f"pretrain_{m}"].argv() if a.startswith("--learning_rate="))
             for m in config.pretrain.models}
    assert rates == {"albert_tiny": "--learning_rate=0.002", "albert_mini": "--learning_rate=0.002",
                     "albert_small": "--learning_rate=0.0005"}
    caps = {m: next(a for a in stages[f"pretrain_{m}"].argv() if a.startswith("--num_train_steps="))
            for m in config.pretrain.models}
    assert caps == {"albert_tiny": "--num_train_steps=13000",
                    "albert_mini": "--num_train_steps=5000",
                    "albert_small": "--num_train_steps=2100"}
    for model in config.pretrain.models:
        assert f"time_{model}__int8" in stages                 # every size exported
        if model not in config.compress.models:
            assert f"compress_{model}+distill" not in stages
    model = "albert_small"
    for method in ("prune0.5", "prune0.8", "prune0.9", "structured", "distill", "qat"):
        assert stages[f"compress_{model}+{method}"].needs == (f"finetune_{model}",)
    assert f"export_{model}+qat__qat" in stages
    assert f"export_{model}+qat__none" not in stages
    assert f"time_{model}+prune0.9__dynamic" in stages
    assert f"time_{model}+prune0.9__int8" not in stages       # compress.quantizations
    argv = stages["compress_albert_small+distill"].argv()     # writes its inputs now
    out = tmp_path / "compress" / "albert_small+distill"
    assert argv[-1] == f"--config_file={out / 'compression.yaml'}"
    from albert_tf.compression.compression_config import build_compression_config
    resolved = build_compression_config([str(out / "compression.yaml")])
    assert resolved.stages == ["distillation"]
    assert resolved.distillation.train_steps == 195      # 0.75 * (240 - 45) s * 2 / 1.5
    assert resolved.distillation.student_init == "teacher"
    student = json.loads((out / "student_config.json").read_text())
    assert student["num_hidden_layers"] == 2 and student["hidden_size"] == 256


def _seed_finished_stages(run_dir, model: str, finetuned: str) -> None:
    """Records the data, pretraining and finetuning stages as done (their outputs are a
    tiny random model), so that the run starts at the exports and compressions."""
    stages = run_dir / "stages"
    stages.mkdir(parents=True)
    done = {"corpus_split": {}, "vocabulary": {}, "pretraining_data_train": {},
            "pretraining_data_heldout": {}, f"pretrain_{model}": {"curve": []},
            f"finetune_{model}": {"model_dir": finetuned,
                                  "best": {"metric": "accuracy", "value": 0.5}}}
    for name, result in done.items():
        (stages / f"{name}.json").write_text(json.dumps(dict(result, seconds=0)))


def _write_finetuning_speed(finetune_dir, values) -> None:
    """``steps_per_sec`` train summaries, as albert-tf-finetune writes them."""
    from albert_tf.backend import tf
    from albert_tf.training.trainer import write_scalar
    writer = tf.summary.create_file_writer(str(finetune_dir / "summaries" / "train"))
    with writer.as_default():
        for step, value in enumerate(values, 1):
            write_scalar("steps_per_sec", value, step)
    writer.close()


@pytest.mark.slow
def test_tiny_run_compresses_exports_reports_and_resumes(tmp_path, data_dir):
    """A tiny run from the finetuned model on: export, pruning (6 optimizer steps: a
    quarter of 12 s at the 3 steps/s the finetuning summaries record, over the pruning
    step cost 1.5), the pruned model's export, score and timing, the report; then a
    rerun that skips every stage."""
    from tests.compression_fixtures import tiny_config, tiny_model_dir, tiny_sst2_dir
    from albert_tf.pipeline.driver import Paths, run_pipeline
    config = PipelineConfig(output_dir=str(tmp_path / "run"),
                            data_dir=tiny_sst2_dir(str(tmp_path / "data"), data_dir, 64, 32,
                                                   test=48))
    config.pretrain.models = ["albert_tiny"]
    config.compress.prune_sparsities = [0.5]
    config.compress.structured = config.compress.distill = config.compress.qat = False
    config.compress.seconds = 12
    config.export.quantizations, config.export.seq_length = ["none"], 16
    paths = Paths(config.output_dir)
    finetuned = tiny_model_dir(paths.finetuned_model("albert_tiny"),
                               tiny_config(num_hidden_layers=2), max_seq_length=16)
    _write_finetuning_speed(tmp_path / "run" / "finetune" / "albert_tiny", [2.0, 3.0, 9.0])
    _seed_finished_stages(tmp_path / "run", "albert_tiny", finetuned)

    run_pipeline(config, echo=lambda s: None)
    candidate = "albert_tiny+prune0.5"
    result = json.loads((tmp_path / "run" / "stages" / f"compress_{candidate}.json").read_text())
    assert result["steps"] == 6 and result["steps_per_second"] == 3.0
    assert abs(result["sparsity"] - 0.5) < 0.01
    report = json.loads((tmp_path / "run" / "report" / "report.json").read_text())
    names = {a["name"]: a for a in report["artifacts"]}
    assert set(names) == {"albert_tiny/none", f"{candidate}/none"}
    assert names[f"{candidate}/none"]["method"] == "prune0.5"
    assert names[f"{candidate}/none"]["model"] == "albert_tiny"
    assert report["compressions"][0]["name"] == candidate
    text = (tmp_path / "run" / "report" / "report.md").read_text()
    assert f"| {candidate}/none | albert_tiny | prune0.5 |" in text
    assert (tmp_path / "run" / "report" / "accuracy_vs_latency.png").stat().st_size > 0
    # The one look at test: the artifact chose_final picks on dev, scored on the 48 rows.
    final = report["final"]
    expected = choose_final([Artifact(**a) for a in report["artifacts"]], 1.0)
    assert final["artifact"] == expected.name and final["test_examples"] == 48
    assert 0.0 <= final["test_accuracy"] <= 1.0
    assert final["dev_accuracy"] == expected.accuracy
    assert "## Final choice, scored once on test" in text

    messages = []
    run_pipeline(config, echo=messages.append)
    assert any(m.startswith(f"[skip] compress_{candidate} ") for m in messages), messages
    assert not [m for m in messages if m.startswith("[run ]")], messages


@pytest.mark.slow
def test_tiny_run_compresses_to_a_measured_latency_and_times_in_rounds(tmp_path, data_dir):
    """compress.latency_of on a tiny run: the model compressed to its own int8 export's
    measured latency divided by 1.5 (a shape timed on this CPU), exported at int8, every
    export then timed in interleaved rounds; the report compares at equal latency."""
    from tests.compression_fixtures import tiny_model_dir, tiny_sst2_dir
    from albert_tf.pipeline.driver import Paths, run_pipeline
    config = PipelineConfig(output_dir=str(tmp_path / "run"),
                            data_dir=tiny_sst2_dir(str(tmp_path / "data"), data_dir, 96, 32,
                                                   test=16))
    config.pretrain.models = ["albert_tiny"]
    config.compress.prune_sparsities = []
    config.compress.structured = config.compress.distill = config.compress.qat = False
    config.compress.latency_of, config.compress.latency_factors = ["albert_tiny"], [1.5]
    config.compress.latency_steps = 12
    config.export.quantizations, config.export.seq_length = ["int8"], 32
    config.export.timing_seconds, config.export.timing_rounds = 0.3, 3
    paths = Paths(config.output_dir)
    finetuned = tiny_model_dir(paths.finetuned_model("albert_tiny"), max_seq_length=32)
    _seed_finished_stages(tmp_path / "run", "albert_tiny", finetuned)

    run_pipeline(config, echo=lambda s: None)
    stages = tmp_path / "run" / "stages"
    candidate = "albert_tiny+at_albert_tiny_x1.5"
    baseline = json.loads((tmp_path / "run" / "export" / "albert_tiny" /
                           "int8_latency.json").read_text())[0]["median_ms"]
    result = json.loads((stages / f"compress_{candidate}.json").read_text())
    assert result["latency_budget_ms"] == pytest.approx(baseline / 1.5)
    assert result["speedup"]["chosen"]["latency_ms"] <= result["latency_budget_ms"]
    rounds = json.loads((stages / "timing_rounds.json").read_text())
    assert rounds["rounds"] == 3 and len(rounds["rows"]) == 2
    report = json.loads((tmp_path / "run" / "report" / "report.json").read_text())
    names = {a["name"]: a for a in report["artifacts"]}
    assert set(names) == {"albert_tiny/int8", f"{candidate}/int8"}
    for artifact in names.values():
        assert artifact["latency_low"] <= artifact["latency_ms"] <= artifact["latency_high"]
    text = (tmp_path / "run" / "report" / "report.md").read_text()
    assert f"| {candidate}/int8 |" in text.split("## At equal latency")[1]


def test_albert_vs_bert_plans_a_wordpiece_vocabulary_for_bert(tmp_path):
    """run_albert_vs_bert: bert_mini pretrains and finetunes on its own WordPiece vocabulary
    and pretraining data; albert_mini keeps the SentencePiece ones; the same clock."""
    from albert_tf.pipeline.driver import Paths, all_stages
    config = load_pipeline_config("run_albert_vs_bert", [f"output_dir={tmp_path}"])
    paths = Paths(config.output_dir)
    stages = {s.name: s for s in all_stages(config, paths)}
    vocab = paths("vocab_wordpiece", "vocab.txt")
    assert "--type=wordpiece" in stages["vocabulary_wordpiece"].argv()
    assert _flag(stages["vocabulary_wordpiece"].argv(), "output") == os.path.dirname(vocab)
    assert _flag(stages["pretraining_data_wordpiece_train"].argv(), "spm_model_file") == vocab
    bert, albert = stages["pretrain_bert_mini"], stages["pretrain_albert_mini"]
    assert bert.needs == ("pretraining_data_wordpiece_train",
                          "pretraining_data_wordpiece_heldout")
    assert "pretraining_data_wordpiece" in _flag(bert.argv(), "train_files")
    assert f"task.vocab_file={vocab}" in _flag(bert.argv(), "params_override")
    assert _flag(albert.argv(), "train_files").startswith(paths("pretraining_data", "train"))
    assert _flag(stages["finetune_bert_mini"].argv(), "vocab_file") == vocab
    assert _flag(stages["finetune_albert_mini"].argv(), "vocab_file") == paths.vocab_file
    assert _flag(bert.argv(), "max_seconds") == _flag(albert.argv(), "max_seconds")


def test_sparsity_experiment_prunes_both_models_at_every_sparsity(tmp_path):
    """run_sparsity_albert_vs_bert (issue #28): run_albert_vs_bert's models and budgets,
    each finetuned model pruned at 50/70/80/90/95% for 200 steps, every model exported as
    a float file only, no final test."""
    from albert_tf.compression.compression_config import build_compression_config
    from albert_tf.pipeline.driver import Paths, all_stages
    config = load_pipeline_config("run_sparsity_albert_vs_bert", [f"output_dir={tmp_path}"])
    base = load_pipeline_config("run_albert_vs_bert")
    assert (config.pretrain, config.finetune, config.vocabulary, config.corpus) == \
        (base.pretrain, base.finetune, base.vocabulary, base.corpus)
    stages = {s.name: s for s in all_stages(config, Paths(config.output_dir))}
    sparsities = ["0.5", "0.7", "0.8", "0.9", "0.95"]
    assert sorted(n for n in stages if n.startswith("compress_")) == sorted(
        f"compress_{m}+prune{s}" for m in ("albert_mini", "bert_mini") for s in sparsities)
    assert sorted(n for n in stages if n.startswith("score_")) == sorted(
        [f"score_{m}__none" for m in ("albert_mini", "bert_mini")] +
        [f"score_{m}+prune{s}__none" for m in ("albert_mini", "bert_mini") for s in sparsities])
    resolved = build_compression_config(
        [_flag(stages["compress_bert_mini+prune0.95"].argv(), "config_file")])
    assert resolved.stages == ["pruning"]
    assert resolved.pruning.final_sparsity == 0.95 and resolved.pruning.train_steps == 200
    assert not config.final_test.enabled
