"""``albert-tf-benchmark --compressed`` (albert_tf/benchmark/compressed.py, issue #28): the
pruning gives the requested sparsity in the requested blocks, the sparse TFLite file is
smaller and computes what the pruned float model computes, the summary line and the table,
and bad input answered in one line before any work.

One real run of the binary on a tiny ALBERT (a few seconds: the dense baseline is TFLite
dynamic range, which needs no calibration; one pattern, one sparsity, one structured recipe:
tests/test_benchmark_compressed_structured.py tests the recipes)."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

import albert_tf
from albert_tf.benchmark import compressed
from tests.compression_fixtures import VOCAB, tiny_config
SPARSITY = 0.75   # every kernel's row count is a multiple of 16: exact for every pattern
SEQ = 16


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> str:
    """A random-weight albert_tiny encoder directory (shared block, E=16, H=32, I=64)."""
    from albert_tf.backend import keras
    keras.utils.set_random_seed(0)
    return albert_tf.save_model_dir(albert_tf.build_encoder(tiny_config()),
                                    str(tmp_path_factory.mktemp("compressed") / "albert_tiny"),
                                    vocab_file=VOCAB)


def _blocks(kernel: np.ndarray, length: int) -> np.ndarray:
    """The ``length`` x 1 blocks of a Keras ``[in, out]`` kernel (TFLite's 1 x length of
    ``[out, in]``) whose rows fill them: ``[blocks down, length, out]``."""
    rows, cols = kernel.shape
    return kernel[:rows // length * length].reshape(-1, length, cols)


def _blocks_whole(kernel: np.ndarray, length: int) -> bool:
    """Every block is all zero or all kept (random weights are never exactly 0), the rows
    that do not fill a last block too."""
    rows = kernel.shape[0] // length * length
    for zeros in ((_blocks(kernel, length) == 0), (kernel[None, rows:] == 0)):
        if not np.all(zeros.all(axis=1) | ~zeros.any(axis=1)):
            return False
    return True


@pytest.mark.slow
def test_pruning_gives_the_sparsity_in_the_blocks_and_prunes_the_shared_block_once(model_dir):
    from albert_tf.checkpoints import named_weights
    for pattern, length in compressed.PATTERNS.items():
        encoder = albert_tf.load_encoder(model_dir)
        before = {n: v.numpy() for n, v in named_weights(encoder).items()}
        pruned = compressed.prune_model(encoder, SPARSITY, pattern)
        after = {n: v.numpy() for n, v in named_weights(encoder).items()}
        # projection E->H, query, key, value, attention output, FFN in and out, pooler:
        # the shared block's kernels once, though it runs at 4 depths
        assert len(pruned) == 8, sorted(pruned)
        assert all(v.ndim == 2 and not n.startswith("embeddings/") for n, v in after.items()
                   if n in pruned)
        for name, value in after.items():
            if name not in pruned:     # embeddings, biases, LayerNorms: untouched
                np.testing.assert_array_equal(value, before[name], err_msg=name)
                continue
            assert pruned[name] == np.mean(value == 0) == SPARSITY, (pattern, name)
            assert _blocks_whole(value, length), (pattern, name)
            # the blocks of largest L1 magnitude are the ones kept
            scores = np.abs(_blocks(before[name], length)).sum(axis=1)
            kept = _blocks(value, length).any(axis=1)
            assert scores[kept].min() >= scores[~kept].max(), (pattern, name)
    # rows that do not fill the last block (70 = 4 x 16 + 6): exact count, whole blocks
    kernel = np.random.default_rng(0).standard_normal((70, 3)).astype(np.float32)
    out = compressed.prune_kernel(kernel, 0.6, "1x16")
    zero_blocks = (np.all(_blocks(out, 16) == 0, axis=1).sum()
                   + np.all(out[64:] == 0, axis=0).sum())
    assert zero_blocks == round(0.6 * 15)
    assert _blocks_whole(out, 16)


@pytest.fixture(scope="module")
def run(model_dir, tmp_path_factory):
    """One ``--compressed`` run: dense int8 baseline tflite_dynamic; tflite_sparse (1x4);
    half the heads and FFN neurons removed (``heads50_ffn50``) on tflite_dynamic."""
    out = tmp_path_factory.mktemp("compressed_run") / "bench"
    result = subprocess.run(
        [sys.executable, "-m", "albert_tf.bin.benchmark", "--compressed", "--models=",
         f"--model_dirs={model_dir}", "--runtimes=tflite_dynamic,tflite_sparse",
         "--patterns=1x4", f"--sparsities={SPARSITY}", f"--shapes=1x{SEQ}",
         "--structured=heads50_ffn50",
         "--min_seconds=0.1", f"--output_dir={out}"], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return out, result.stdout


@pytest.mark.slow
def test_the_summary_line_and_the_table(run):
    out, stdout = run
    lines = stdout.splitlines()
    summary = [s for s in lines if s.startswith(compressed.SUMMARY)]
    assert len(summary) == 1, stdout[-3000:]
    structured = "structured heads 2/4, ffn 32/64"   # albert_tiny: 4 heads, I=64
    match = re.fullmatch(r"compressed speedup over dense int8: albert_tiny 1 x 16 (\d+\.\d\d)x "
                         rf"\((tflite_sparse, 1x4 75% sparse|tflite_dynamic, {structured})\)",
                         summary[0])
    assert match, summary
    table = [s for s in lines if s.startswith("| albert_tiny |")]
    assert [s.split(" | ")[2:5] for s in table] == [
        ["tflite_dynamic", "dense int8 (baseline)", "-"], ["tflite_sparse", "1x4", "75%"],
        ["tflite_dynamic", structured, "-"]]
    assert table[0].endswith("| 1.00x |")
    # the summary names the faster of the two compressed rows, with its speed-up
    speedups = [float(s.split(" | ")[-1].rstrip("x |")) for s in table[1:]]
    best = table[1 + speedups.index(max(speedups))]
    assert best.endswith(f"| {match.group(1)}x |") and best.split(" | ")[3] in summary[0]
    assert any(s.startswith("1-minute load average during the run") for s in lines)
    report = (out / "compressed.md").read_text()
    assert summary[0] in report and table[1] in report and table[2] in report
    # the structured copy's TFLite file is physically smaller than the dense model's
    dense = list((out / "artifacts" / "albert_tiny" / "tflite_dynamic").rglob("*.tflite"))
    small = list((out / "artifacts" / "albert_tiny" / "structured" / "heads50_ffn50"
                  ).rglob("tflite_dynamic/**/*.tflite"))
    assert len(dense) == len(small) == 1, (dense, small)
    assert small[0].stat().st_size < dense[0].stat().st_size


@pytest.mark.slow
def test_the_sparse_tflite_file_is_smaller_and_computes_the_pruned_model(run):
    from ai_edge_litert import interpreter as lite

    from albert_tf.runtime.sessions import token_inputs
    out, _ = run
    where = out / "artifacts" / "albert_tiny" / "pruned" / "1x4_75"
    folder = where / "albert_tiny" / "tflite_none" / f"b1_s{SEQ}"
    dense, sparse = folder / "model.tflite", folder / "model_sparse.tflite"
    assert sparse.stat().st_size < dense.stat().st_size
    inputs = token_inputs(1, SEQ, 8000, seed=3)
    outputs = {}
    for path in (dense, sparse):
        interpreter = lite.Interpreter(
            model_path=str(path), num_threads=1,
            experimental_op_resolver_type=lite.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
        interpreter.allocate_tensors()
        for detail in interpreter.get_input_details():
            key = next(k for k in inputs if k in detail["name"])
            interpreter.set_tensor(detail["index"], inputs[key])
        interpreter.invoke()
        outputs[path] = [interpreter.get_tensor(d["index"])
                         for d in interpreter.get_output_details()]
        if path == sparse:   # the FULLY_CONNECTED weights are stored in 1x4 blocks
            blocked = [d for d in interpreter.get_tensor_details()
                       if d.get("sparsity_parameters", {}).get("block_map") is not None]
            assert len(blocked) >= 8, [d["name"] for d in interpreter.get_tensor_details()]
    keras_model = albert_tf.load_encoder(str(where / "model"))
    expected = keras_model(inputs, training=False)
    expected = expected["sequence_output"] if isinstance(expected, dict) else expected[0]
    expected = np.asarray(expected).ravel()
    for path, values in outputs.items():
        got = next(v for v in values if v.size == expected.size).ravel()
        cosine = got @ expected / np.linalg.norm(got) / np.linalg.norm(expected)
        assert cosine >= 0.99, (path, cosine)


@pytest.mark.parametrize("flags, message", [
    (["--sparsities=0.5,1.2"], "--sparsities: '1.2' is not a fraction in (0, 1)"),
    (["--patterns=1x4,2x2"], "--patterns: unknown pattern '2x2'; use unstructured, 1x4, "
                             "1x16."),
    (["--runtimes=tflite_dynamic,ort_q4", "--structured=none"], "--compressed: none of "
     "--runtimes=tflite_dynamic,ort_q4 runs a pruning pattern of "
     "--patterns=unstructured,1x4,1x16; the targets that do: tflite_sparse (1x4); "
     "tflite_sparse_int8 (1x16); ir_int8_sparse (unstructured); and --structured=none."),
])
def test_bad_input_is_one_line_before_any_work(flags, message, tmp_path):
    out = tmp_path / "bench"
    result = subprocess.run(
        [sys.executable, "-m", "albert_tf.bin.benchmark", "--compressed",
         f"--output_dir={out}", *flags], capture_output=True, text=True)
    assert result.returncode != 0
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert message in result.stderr, result.stderr
    assert not out.exists()
