"""Benchmark workers time real artifacts in fresh processes without importing TensorFlow."""

import os

import pytest

import albert_tf
from albert_tf.benchmark.artifacts import ArtifactBuilder
from albert_tf.benchmark.suite import time_in_worker

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _builder(config, tmp_path, data_dir) -> ArtifactBuilder:
    """Artifacts of a random-weight encoder of ``config`` saved as a model directory."""
    model_dir = str(tmp_path / "model")
    albert_tf.save_model_dir(albert_tf.build_encoder(config), model_dir, vocab_file=os.path.join(
        ROOT, "official_configs", "vocab", "imdb_pydocs_8k.model"))
    return ArtifactBuilder(model_dir, str(tmp_path / "work"), data_dir, echo=lambda s: None)


@pytest.mark.slow
def test_tflite_and_onnx_workers_time_the_same_model(tmp_path, data_dir):
    config = albert_tf.load_config("albert_tiny").replace(vocab_size=8000)
    builder = _builder(config, tmp_path, data_dir)
    shapes = [(1, 16), (2, 32)]
    for runtime in ("tflite_dynamic", "onnx"):
        worker_runtime, artifact = builder.artifact(runtime, shapes)
        timed = time_in_worker(worker_runtime, artifact, shapes, config.vocab_size, threads=1,
                               min_seconds=0.2)
        assert not timed["imported_tensorflow"], runtime
        assert 20 < timed["peak_rss_mib"] < 1500, timed["peak_rss_mib"]
        rows = {(r["batch"], r["seq"]): r for r in timed["results"]}
        assert set(rows) == set(shapes)
        for (batch, _), r in rows.items():
            assert 0 < r["median_ms"] <= r["p90_ms"]
            assert abs(r["sequences_per_s"] - batch * 1e3 / r["median_ms"]) < 1e-6


@pytest.mark.slow
def test_tf_worker_loads_the_saved_model_with_in_graph_tokenizer(tmp_path, data_dir):
    """The `tf` runtime times our SavedModel, which tokenizes in-graph: loading it in a
    fresh process needs the tf-text ops registered first."""
    config = albert_tf.load_config("albert_tiny").replace(vocab_size=8000)
    builder = _builder(config, tmp_path, data_dir)
    worker_runtime, artifact = builder.artifact("tf", [(1, 16)])
    timed = time_in_worker(worker_runtime, artifact, [(1, 16)], config.vocab_size, threads=1,
                           min_seconds=0.2)
    assert timed["imported_tensorflow"]
    assert [(r["batch"], r["seq"]) for r in timed["results"]] == [(1, 16)]
    assert 0 < timed["results"][0]["median_ms"]


def test_onnx_peer_of_a_bert_model(tmp_path, data_dir):
    """BERT-shaped models export to ONNX too (transformers 5's BertModel rejects the
    positional tracing inputs that AlbertModel accepts)."""
    config = albert_tf.load_config("bert_tiny").replace(vocab_size=8000)
    builder = _builder(config, tmp_path, data_dir)
    worker_runtime, artifact = builder.artifact("onnx", [(1, 16)])
    timed = time_in_worker(worker_runtime, artifact, [(1, 16)], config.vocab_size, threads=1,
                           min_seconds=0.2)
    assert not timed["imported_tensorflow"]
    assert 0 < timed["results"][0]["median_ms"]


def test_median_ms_times_exactly_the_runs_after_warmup_with_the_given_clock():
    from albert_tf.benchmark import timing, worker

    assert worker.median_ms is timing.median_ms and worker.time_call is timing.time_call
    calls = []
    ticks = iter(range(1000))
    fake_clock = lambda: next(ticks) / 1e3  # noqa: E731 (each call 1 ms apart, 1 ms per call)
    assert timing.median_ms(lambda: calls.append(1), runs=5, warmup=2, clock=fake_clock) == 1.0
    assert len(calls) == 7


def test_time_call_runs_until_the_measured_time_reaches_min_seconds():
    """``min_seconds`` counts the measured latencies, so their sum always reaches it
    (albert-tflite-benchmark reports that total)."""
    from albert_tf.benchmark.timing import time_call

    ticks = iter(range(10_000))
    fake_clock = lambda: next(ticks) * 0.5  # noqa: E731  (each call measures 500 ms)
    latencies = time_call(lambda: None, 2, 2.0, 0, clock=fake_clock)
    assert latencies == [500.0] * 4
    assert len(time_call(lambda: None, 6, 2.0, 0, clock=fake_clock)) == 6
