"""The benchmark's stronger peers on real runtimes: ONNX Runtime's transformer optimizer
(onnx_opt, onnx_opt_int8), OpenVINO (f32, bf16, NNCF int8), and the skip of a runtime whose
package is not installed. Tiny random-weight ALBERT and BERT model directories."""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import albert_tf
from albert_tf.runtime.sessions import OnnxSession, OpenVinoSession, token_inputs
from albert_tf.benchmark.artifacts import ArtifactBuilder
from albert_tf.benchmark.suite import time_in_worker

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOCAB = os.path.join(ROOT, "official_configs", "vocab", "imdb_pydocs_8k.model")


@pytest.fixture(scope="module")
def builders(tmp_path_factory, data_dir):
    """``{"albert_tiny": (config, builder), "bert_tiny": ...}``: random-weight encoders saved
    as model directories, with the SST-2 data directory for calibration."""
    from albert_tf.backend import keras
    out = {}
    for seed, name in enumerate(("albert_tiny", "bert_tiny")):
        keras.utils.set_random_seed(seed)
        config = albert_tf.load_config(name).replace(vocab_size=8000)
        root = tmp_path_factory.mktemp(name)
        model_dir = str(root / "model")
        albert_tf.save_model_dir(albert_tf.build_encoder(config), model_dir, vocab_file=VOCAB)
        out[name] = config, ArtifactBuilder(model_dir, str(root / "work"), data_dir,
                                            echo=lambda s: None)
    return out


def _padded_inputs(batch: int, seq: int, vocab_size: int) -> dict[str, np.ndarray]:
    """Random ids with the last quarter of each row padded (mask 0), type ids 0 then 1."""
    inputs = token_inputs(batch, seq, vocab_size, seed=3)
    inputs["input_mask"][:, seq - seq // 4:] = 0
    inputs["input_type_ids"][:, seq // 2:] = 1
    return inputs


def _cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = a.reshape(-1, a.shape[-1]), b.reshape(-1, b.shape[-1])
    return (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)


def _onnx_ops(path: str) -> collections.Counter:
    import onnx
    return collections.Counter(n.op_type for n in onnx.load(path).graph.node)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["albert_tiny", "bert_tiny"])
def test_optimized_onnx_fuses_and_matches_the_plain_export(builders, name):
    config, shared = builders[name]
    layers = config.num_hidden_layers
    lines = []
    builder = ArtifactBuilder(shared.model_dir, shared.work_dir, shared.data_dir,
                              echo=lines.append)
    optimized = builder.onnx_opt(int8=False)
    ops = _onnx_ops(optimized)
    # Two residual LayerNorms per layer fuse with their Add; every layer's gelu_new.
    assert ops["SkipLayerNormalization"] == 2 * layers, ops
    assert ops["FastGelu"] == layers, ops
    with open(os.path.splitext(optimized)[0] + ".fusions.json", encoding="utf-8") as f:
        fusions = json.load(f)["fused_operators"]
    assert fusions["SkipLayerNormalization"] == ops["SkipLayerNormalization"]
    assert fusions["Attention"] == ops["Attention"]
    if config.is_bert:
        assert ops["Attention"] == layers and ops["EmbedLayerNormalization"] == 1, ops
    else:
        # ALBERT: every layer but the first (fed by the embedding projection, not a
        # LayerNorm) fuses; the printed line says so rather than hiding it.
        assert ops["Attention"] == layers - 1, ops
    [line] = [s for s in lines if "onnx_opt fusions" in s]
    assert f"Attention {ops['Attention']}," in line
    assert ("NOT fused in 1 of" in line) == (not config.is_bert), line
    builder.onnx_opt(int8=False)   # cached: the counts are printed once per model
    assert sum("onnx_opt fusions" in s for s in lines) == 1

    plain = OnnxSession(builder.onnx(int8=False), threads=1)
    fused = OnnxSession(optimized, threads=1)
    inputs = _padded_inputs(2, 24, config.vocab_size)
    for want, got in zip(plain.outputs(inputs), fused.outputs(inputs)):
        np.testing.assert_allclose(got, want, atol=1e-4, rtol=0)

    int8 = builder.onnx_opt(int8=True)
    int8_ops = _onnx_ops(int8)
    assert int8_ops["MatMulInteger"] + int8_ops["QAttention"] > 0, int8_ops
    if config.is_bert:
        assert int8_ops["QAttention"] == layers, int8_ops
    float_out = fused.outputs(inputs)[0]
    int8_out = OnnxSession(int8, threads=1).outputs(inputs)[0]
    assert _cosine(float_out, int8_out).min() > 0.98


@pytest.mark.slow
@pytest.mark.parametrize("name", ["albert_tiny", "bert_tiny"])
def test_openvino_f32_matches_onnx_runtime_and_nncf_int8_stays_close(builders, name):
    config, builder = builders[name]
    xml = builder.openvino()
    assert os.path.isfile(os.path.splitext(xml)[0] + ".bin")
    onnx_runner = OnnxSession(builder.onnx(int8=False), threads=1)
    f32 = OpenVinoSession(xml, threads=1, precision="f32")
    for shape in ((1, 16), (2, 24)):   # one IR reshaped and compiled per static shape
        inputs = _padded_inputs(*shape, config.vocab_size)
        want = onnx_runner.outputs(inputs)
        got = f32.outputs(inputs)
        assert [g.shape for g in got] == [w.shape for w in want]
        for w, g in zip(want, got):
            np.testing.assert_allclose(g, w, atol=1e-4, rtol=0)

    int8_xml = builder.openvino_int8([(1, 16), (1, 32)])   # calibrated at the longest
    assert int8_xml.endswith("model_int8_s32.xml")
    import openvino as ov
    ops = collections.Counter(op.get_type_name()
                              for op in ov.Core().read_model(int8_xml).get_ops())
    assert ops["FakeQuantize"] >= 6 * config.num_hidden_layers, ops   # >= 6 MatMuls a layer
    inputs = _padded_inputs(2, 32, config.vocab_size)
    float_out = f32.outputs(inputs)[0]
    int8_out = OpenVinoSession(int8_xml, threads=1, precision=None).outputs(inputs)[0]
    cosine = _cosine(float_out, int8_out)
    # Measured on tiny random models: min 0.995 (ALBERT), 0.99998 (BERT); on a Zen 3 (AVX2,
    # no VNNI) 0.960 for ALBERT before NNCF's overflow fix (export.openvino.quantize_int8),
    # 0.9997 with it.
    assert cosine.min() > 0.98, cosine.min()
    assert np.abs(float_out - int8_out).max() > 0   # it is a different (quantized) model


@pytest.mark.slow
def test_new_runtimes_time_in_fresh_workers_without_tensorflow(builders):
    config, builder = builders["albert_tiny"]
    shapes = [(1, 16), (2, 16)]
    for runtime in ("onnx_opt", "onnx_opt_int8", "openvino", "openvino_bf16", "openvino_int8"):
        worker_runtime, artifact = builder.artifact(runtime, shapes)
        timed = time_in_worker(worker_runtime, artifact, shapes, config.vocab_size, threads=1,
                               min_seconds=0.05)
        assert not timed["imported_tensorflow"], runtime
        assert [(r["batch"], r["seq"]) for r in timed["results"]] == shapes, runtime
        assert all(0 < r["median_ms"] <= r["p90_ms"] for r in timed["results"]), runtime


_NO_OPENVINO = '''
import sys


class _NoOpenVINO:
    """Makes `openvino` look uninstalled, the way Python reports a missing package."""

    def find_spec(self, name, path=None, target=None):
        if name == "openvino" or name.startswith("openvino."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _NoOpenVINO())
'''


@pytest.fixture(scope="module")
def two_rounds_without_openvino(builders, tmp_path_factory):
    """One ``albert-tf-benchmark --rounds=2`` run of two of our runtimes and the OpenVINO
    peer, with `openvino` made to look uninstalled: ``(result, output_dir)`` (one run for
    the skip's test and the rounds' test: each run costs ~15 CPU-s of fresh processes)."""
    _, builder = builders["albert_tiny"]
    tmp_path = tmp_path_factory.mktemp("two_rounds")
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(_NO_OPENVINO)
    env = dict(os.environ, PYTHONPATH=str(site))   # ALBERT_TF_DATA_DIR: from conftest
    out = tmp_path / "bench"
    result = subprocess.run(
        [sys.executable, "-m", "albert_tf.bin.benchmark", "--models=",
         f"--model_dirs={builder.model_dir}", "--runtimes=openvino,ort_int8,tflite_none",
         "--shapes=1x16", "--min_seconds=0.1", "--rounds=2", f"--output_dir={out}"],
        capture_output=True, text=True, env=env, cwd=str(tmp_path))
    assert result.returncode == 0, result.stderr[-3000:]
    return result, out


@pytest.mark.slow
def test_a_runtime_whose_package_is_missing_is_skipped_with_one_line(
        two_rounds_without_openvino):
    result, out = two_rounds_without_openvino
    lines = (result.stdout + result.stderr).splitlines()
    named = [s for s in lines if "openvino" in s and "pip install" in s and "skipped" in s]
    assert named == ["  openvino: skipped: the Python package 'openvino' is not installed "
                     "(pip install 'albert-tf[peers]' or pip install openvino)"], named
    assert "Traceback" not in result.stderr
    with open(out / "results.json", encoding="utf-8") as f:
        report = json.load(f)
    assert [(m["runtime"], m["batch"], m["seq"]) for m in report["measurements"]] == [
        ("ort_int8", 1, 16), ("tflite_none", 1, 16)]
    assert report["meta"]["skipped"] == {
        "openvino": "the Python package 'openvino' is not installed"}
    assert "skipped" in (out / "report.md").read_text()
    # the one peer asked for did not run: one line says so and names the extra
    assert "no peer ran (openvino: the Python package 'openvino' is not installed)" in \
        result.stdout and "'albert-tf[peers]'" in report["meta"]["peers"]


def test_the_pip_fix_names_the_extra_of_the_runtime():
    """Our exports name their own extra; every peer the `peers` extra, which holds all the
    peers' packages (setup.py; tests/test_tour.py checks that `test` includes it)."""
    from albert_tf.benchmark import targets
    from albert_tf.benchmark.suite import pip_fix
    assert pip_fix("onnxruntime", "ort_int8") == \
        "pip install 'albert-tf[onnx]' or pip install onnxruntime"
    assert pip_fix("nncf", "ir_int8") == "pip install 'albert-tf[openvino]' or pip install nncf"
    for runtime in (t.name for t in targets.every_target() if t.peer):
        for package in ("torch", "sympy", "onnxruntime", "openvino"):
            assert f"'albert-tf[peers]' or pip install {package}" in pip_fix(package, runtime)
    assert pip_fix("ai_edge_litert", "tflite_int8") == "pip install ai-edge-litert"


def test_a_run_where_no_peer_ran_says_so_once():
    from albert_tf.benchmark.suite import peers_note
    from albert_tf.benchmark.tables import Measurement

    def row(runtime):
        return Measurement("m", runtime, 1, 64, 1.0, 1.0, 1e3, 50, 1, 0.1, 0.01)

    skipped = {"torch_int8": "the Python package 'torch' is not installed",
               "onnx_opt_int8": "the Python package 'sympy' is not installed"}
    note = peers_note(["tflite_int8", "torch_int8", "onnx_opt_int8"], [row("tflite_int8")],
                      skipped)
    assert note.startswith("no peer ran (torch_int8: the Python package 'torch' is not "
                           "installed; onnx_opt_int8: the Python package 'sympy' is not ")
    assert note.endswith("pip install 'albert-tf[peers]' adds every peer")
    assert peers_note(["tflite_int8", "torch_int8"], [row("tflite_int8"), row("torch_int8")],
                      {}) == ""
    assert peers_note(["tflite_int8", "ort_int8"], [row("tflite_int8")], {}) == ""


@pytest.mark.slow
def test_worker_reports_a_missing_package_as_json(builders, tmp_path, monkeypatch):
    """The artifact exists but the worker cannot import its runtime: JSON naming the
    package and a distinct exit code, which `time_in_worker` turns into ModuleNotFoundError."""
    from albert_tf.benchmark.worker import MISSING_PACKAGE_EXIT
    config, builder = builders["albert_tiny"]
    xml = builder.openvino()
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(_NO_OPENVINO)
    monkeypatch.setenv("PYTHONPATH", str(site))
    result = subprocess.run(
        [sys.executable, "-m", "albert_tf.benchmark.worker", "--runtime=openvino",
         f"--artifact={xml}", "--shapes=1x16", f"--vocab_size={config.vocab_size}"],
        capture_output=True, text=True)
    assert result.returncode == MISSING_PACKAGE_EXIT, result.stderr[-2000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert (report["error"], report["package"]) == ("missing_package", "openvino")
    with pytest.raises(ModuleNotFoundError) as raised:
        time_in_worker("openvino", xml, [(1, 16)], config.vocab_size, threads=1,
                       min_seconds=0.05)
    assert raised.value.name == "openvino"


def test_merge_rounds_takes_medians_over_the_rounds():
    from albert_tf.benchmark.suite import merge_rounds
    runs = [{"runtime": "onnx", "peak_rss_mib": rss, "results": [
        {"batch": 2, "seq": 16, "median_ms": m, "p90_ms": m + 1, "sequences_per_s": 0},
        {"batch": 1, "seq": 32, "median_ms": 10 * m, "p90_ms": 10 * m, "sequences_per_s": 0}]}
        for m, rss in ((4.0, 100.0), (9.0, 120.0), (5.0, 90.0))]
    merged = merge_rounds(runs)
    assert merged["peak_rss_mib"] == 120.0
    first, second = merged["results"]
    assert (first["median_ms"], first["p90_ms"], first["round_medians_ms"]) == (
        5.0, 6.0, [4.0, 9.0, 5.0])
    assert first["sequences_per_s"] == pytest.approx(2 / 5.0 * 1e3)
    assert (second["seq"], second["median_ms"]) == (32, 50.0)


@pytest.mark.slow
def test_rounds_time_every_runtime_in_turn(builders, two_rounds_without_openvino):
    """albert-tf-benchmark --rounds=2: a fresh worker per runtime per round, round-robin, and
    the reported median is the median of the rounds' medians (a skipped runtime has none)."""
    _, builder = builders["albert_tiny"]
    result, out = two_rounds_without_openvino
    timing = [s.split("timing ")[1].split(" [")[0] + s[s.index("(round"):]
              for s in result.stdout.splitlines() if "timing " in s]
    name = os.path.basename(builder.model_dir)
    assert timing == [f"{name} ort_int8(round 1/2)", f"{name} tflite_none(round 1/2)",
                      f"{name} ort_int8(round 2/2)", f"{name} tflite_none(round 2/2)"]
    with open(out / "results.json", encoding="utf-8") as f:
        measurements = json.load(f)["measurements"]
    assert [(m["runtime"], m["rounds"]) for m in measurements] == [("ort_int8", 2),
                                                                   ("tflite_none", 2)]
    for m in measurements:
        line = next(s for s in result.stdout.splitlines()
                    if f" {m['runtime']} " in s and "rounds:" in s)
        rounds = [float(v) for v in line.split("rounds: ")[1].rstrip(")").split(", ")]
        assert len(rounds) == 2
        assert m["median_ms"] == pytest.approx(sum(rounds) / 2, abs=0.06)   # printed .1f
