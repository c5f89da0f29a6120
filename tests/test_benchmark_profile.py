"""The kernel-level profile of a benchmark worker (`albert_tf.benchmark.profile`): real
``perf`` sampling a real LiteRT interpreter running our TFLite exports."""

import os

import pytest

import albert_tf
from albert_tf.benchmark import profile
from albert_tf.benchmark.artifacts import ArtifactBuilder

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _perf_or_skip() -> None:
    try:
        profile.check_perf()
    except profile.PerfUnavailable as e:   # the kernel's, not ours: say why
        pytest.skip(str(e))


@pytest.fixture(scope="module")
def exports(tmp_path_factory, data_dir):
    tmp = tmp_path_factory.mktemp("profile")
    config = albert_tf.load_config("albert_tiny").replace(vocab_size=8000, hidden_size=256,
                                                          intermediate_size=1024,
                                                          num_attention_heads=4)
    model_dir = str(tmp / "model")
    albert_tf.save_model_dir(albert_tf.build_encoder(config), model_dir, vocab_file=os.path.join(
        ROOT, "official_configs", "vocab", "imdb_pydocs_8k.model"))
    # The work directory `albert-tf-benchmark --output_dir=<bench> --model_dirs=<model_dir>`
    # uses (<bench>/artifacts/<model_dir's name>): the benchmark test below times these
    # TFLite exports instead of converting the same model again.
    bench = tmp / "bench"
    builder = ArtifactBuilder(model_dir, str(bench / "artifacts" / "model"), data_dir,
                              echo=lambda s: None)
    return dict({q: builder.tflite(q, [(1, 128)]) for q in ("dynamic", "none")},
                model_dir=model_dir, bench=bench)


@pytest.mark.slow
def test_profile_names_the_gemm_kernels_xnnpack_chose(exports):
    _perf_or_skip()
    int8, timed = profile.profile_worker("tflite", exports["dynamic"], (1, 128), 8000,
                                         threads=1, seconds=1.5)
    assert timed["results"][0]["median_ms"] > 0
    assert int8.samples > 200
    # Sampling starts after the warm-up: model loading (TensorFlow-free) is not in it.
    assert not any("Py_Initialize" in s or "PyImport" in s for s, _ in int8.symbols[:5])
    # Every sampled symbol; perf rounds each symbol's share to 0.01%, hundreds of them.
    assert 0.98 < sum(int8.by_category.values()) <= 1.01
    int8_gemms = [c for c in int8.by_category if c.startswith("int8 GEMM")]
    assert int8_gemms and all(int8.top_symbol[c].startswith("xnn_q") for c in int8_gemms)
    assert max(int8.by_category, key=int8.by_category.get) in int8_gemms + ["fp32 GEMM"]

    floats, _ = profile.profile_worker("tflite", exports["none"], (1, 128), 8000,
                                       threads=1, seconds=1.5)
    assert not any(c.startswith("int8 GEMM") for c in floats.by_category)
    assert max(floats.by_category, key=floats.by_category.get) == "fp32 GEMM"
    assert floats.top_symbol["fp32 GEMM"].startswith("xnn_f32_")
    table = floats.table("float")
    assert "| fp32 GEMM |" in table and "xnn_f32_" in table


def test_missing_perf_is_named_with_the_fix(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(profile.PerfUnavailable, match="apt-get install linux-perf"):
        profile.check_perf()


@pytest.mark.slow
def test_benchmark_reports_profiles_and_the_speedup_over_the_fastest_peer(exports, tmp_path):
    """`albert-tf-benchmark --profile`: a kernel table per runtime, and the peer table's
    speedups are the ratios of the medians in results.json. At the fixture's shape, in the
    output directory whose artifacts the fixture built: the TFLite exports are reused (the
    ONNX one is exported here)."""
    _perf_or_skip()
    import json
    import subprocess
    import sys
    model_dir = exports["model_dir"]
    out = exports["bench"]
    result = subprocess.run(
        [sys.executable, "-m", "albert_tf.bin.benchmark", "--models=",
         f"--model_dirs={model_dir}", "--runtimes=tflite_dynamic,tflite_none,onnx_int8",
         "--shapes=1x128", "--min_seconds=0.3", "--threads=1", "--profile",
         f"--output_dir={out}"], capture_output=True, text=True, cwd=str(tmp_path))
    assert result.returncode == 0, result.stderr[-3000:]
    report = (out / "report.md").read_text()
    assert report.count("| where | share | top kernel |") == 3
    with open(out / "results.json", encoding="utf-8") as f:
        ms = {m["runtime"]: m["median_ms"] for m in json.load(f)["measurements"]}
    ours = min(ms["tflite_dynamic"], ms["tflite_none"])
    fastest = min(("tflite_dynamic", "tflite_none"), key=ms.get)
    row = f"| model | 1 x 128 | any vs int8 peers | {fastest} | {ours:.1f} | onnx_int8 | " \
          f"{ms['onnx_int8']:.1f} | {ms['onnx_int8'] / ours:.2f}x |"
    assert row in report, report


def test_missing_artifact_is_named_in_one_line(tmp_path, capsys):
    missing = str(tmp_path / "b{batch}_s{seq}" / "model.tflite")
    assert profile.main([f"--artifact={missing}", "--vocab_size=8000", "--shape=1x16"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and str(tmp_path / "b1_s16" / "model.tflite") in err


def test_samples_of_libraries_without_symbols_are_named_by_library():
    """ONNX Runtime's wheel ships a stripped library and OpenVINO JIT-compiles its kernels:
    their addresses resolve to no symbol, so they are grouped and named by library."""
    report = "\n".join([
        "# Samples: 1K of event 'cpu-clock:ppp'",
        "    40.00%  libonnxruntime.so.1.31.1  [.] 0x000000000145f10f",
        "    30.00%  libonnxruntime.so.1.31.1  [.] 0x00000000014a0011",
        "    10.00%  [JIT] tid 4242            [.] 0x00007f0000001000",
        "    10.00%  libXNNPACK.so             [.] xnn_qd8_f32_qc8w_gemm_minmax_ukernel_4x8c8__avx2",
        "     6.00%  [kernel.kallsyms]         [k] finish_task_switch",
        "     4.00%  libpython3.11.so.1.0      [.] _PyEval_EvalFrameDefault",
    ])
    parsed = profile.parse_report(report, 1000)
    assert parsed.symbols[0] == ("libonnxruntime.so.1.31.1 (no symbols)", pytest.approx(0.7))
    assert parsed.by_category == pytest.approx({
        "ONNX Runtime library, no symbols (MLAS GEMMs, all its kernels)": 0.7,
        "OpenVINO plugin or JIT code, no symbols": 0.1,
        "int8 GEMM, AVX2/AVX-512 (no VNNI)": 0.1,
        "threads: wait / sync / kernel": 0.06,
        "Python / interpreter overhead": 0.04})
    assert parsed.top_symbol["OpenVINO plugin or JIT code, no symbols"] == "[JIT] (no symbols)"


@pytest.mark.parametrize("symbol, category", [
    # what perf named for a 90%-sparse 1x16 int8 file on LiteRT's builtin kernels (Zen 4)
    ("tflite::tensor_utils::NeonSparseMatrixBatchVectorMultiplyAccumulate1x16",
     "TFLite sparse FULLY_CONNECTED (1x4 / 1x16 blocks)"),
    ("tflite::tensor_utils::NeonSparseMatrixBatchVectorMultiplyAccumulate1x4",
     "TFLite sparse FULLY_CONNECTED (1x4 / 1x16 blocks)"),
    # the float file's attention matmuls on the builtin kernels: reference code
    ("tflite::reference_ops::BatchMatMul<float,", "TFLite reference matmuls (builtin kernels, "
                                                  "no XNNPACK)"),
    # tflite_q4's GEMM (AI Edge Quantizer INT4 weights), not an int8 one
    ("xnn_qd8_f32_qc4w_gemm_minmax_ukernel_8x16c8__avx512vnni_prfm", "4-bit GEMM (XNNPACK QC4W)"),
    ("xnn_qd8_f32_qc8w_gemm_minmax_ukernel_8x16c8__avx512vnni", "int8 GEMM, VNNI"),
])
def test_sparse_and_4bit_kernels_have_their_own_rows(symbol, category):
    assert profile.categorize(symbol) == category
