"""``make figures NAME=deepsparse-anchor`` (`albert_tf.benchmark.deepsparse`, driven by
studies/deepsparse_anchor/run.py): its table and argument errors, and, where
``.venv-deepsparse`` exists (the figure makes it; CI does not), DeepSparse's outputs against
ONNX Runtime's on a tiny ALBERT's standard-op ONNX."""

from __future__ import annotations

import os

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOCAB = os.path.join(ROOT, "official_configs", "vocab", "imdb_pydocs_8k.model")
VENV = os.path.join(ROOT, ".venv-deepsparse")   # where the figure's driver makes it


def _anchor():
    from albert_tf.benchmark import deepsparse
    return deepsparse


def test_table_measures_every_row_against_our_fastest_dense_int8():
    a = _anchor()
    rows = [a.Row("albert_base", 0.9, a.DS_FP32, 10.0),
            a.Row("albert_base", 0.0, "tflite_int8", 25.0),
            a.Row("albert_base", 0.0, "tflite_dynamic", 20.0),
            a.Row("albert_base", 0.0, a.DS_FP32, 40.0)]
    lines = a.markdown_table(rows).splitlines()
    assert lines[0] == "| model | sparsity | runtime | median ms | vs our dense int8 |"
    assert lines[2:] == ["| albert_base | 0% | tflite_int8 | 25.00 | 0.80x |",
                         "| albert_base | 0% | tflite_dynamic (baseline) | 20.00 | 1.00x |",
                         "| albert_base | 0% | deepsparse fp32 | 40.00 | 0.50x |",
                         "| albert_base | 90% | deepsparse fp32 | 10.00 | 2.00x |"]
    with pytest.raises(ValueError, match="no dense int8 row of ours"):
        a.markdown_table([a.Row("bert_base", 0.0, a.DS_FP32, 1.0)])


def test_argument_errors_are_one_line_before_anything_runs(capsys):
    a = _anchor()
    for argv, message in ((["--sparsities=0.9,1"], "1 is not in (0, 1)"),
                          (["--sparsities=0.9,x"], "'x' is not a number"),
                          (["--sparsities=0.9,0.9"], "0.9 twice"),
                          (["--models=albert_base,albert_huge"], "unknown albert_huge"),
                          (["--cores=0"], "--cores must be at least 1")):
        with pytest.raises(SystemExit) as exit_info:
            a.parse_args(argv)
        assert exit_info.value.code == 2
        assert message in capsys.readouterr().err
    args = a.parse_args(["--models=bert_base", "--sparsities=0.5"])
    assert (args.model_list, args.sparsity_list) == (["bert_base"], [0.5])


def test_checks_compare_fp32_by_difference_and_int8_by_cosine():
    a = _anchor()
    x = np.arange(1, 13, dtype=np.float32).reshape(1, 3, 4)
    diff, cosine = a.compare([x], [x + 1e-4])
    assert diff == pytest.approx(1e-4, rel=1e-2) and cosine > 0.999999
    lines = a.check_rows([("m", 0.9, a.DS_FP32, 1e-4, 1.0), ("m", 0.9, a.DS_FP32, 1e-1, 1.0),
                          ("m", 0.0, a.DS_INT8, 0.3, 0.999), ("m", 0.0, a.DS_INT8, 0.0, 0.9)])
    assert [line.rsplit(": ", 1)[1] for line in lines] == ["ok", "FAILED", "ok", "FAILED"]
    with pytest.raises(ValueError, match="shapes differ"):
        a.compare([x], [x[:, :2]])


def test_deepsparse_matches_onnx_runtime_on_a_tiny_albert(tmp_path, data_dir):
    a = _anchor()
    if not a.venv_ready(VENV):
        pytest.skip(f"the DeepSparse venv is missing ({a.deepsparse_python(VENV)}): `make figures "
                    "NAME=deepsparse-anchor` makes it (DeepSparse 1.8, end of life, Python < "
                    "3.12: not a dependency, not on CI)")
    import albert_tf
    from albert_tf.benchmark.artifacts import ArtifactBuilder
    from albert_tf.benchmark.compressed import prune_model
    from albert_tf.runtime.sessions import OnnxSession, peer_feed, token_inputs
    from albert_tf.backend import keras
    keras.utils.set_random_seed(0)
    config = albert_tf.load_config("albert_tiny").replace(vocab_size=8000)
    model = albert_tf.build_encoder(config)
    prune_model(model, 0.9, "unstructured")
    model_dir = str(tmp_path / "model")
    albert_tf.save_model_dir(model, model_dir, vocab_file=VOCAB)
    builder = ArtifactBuilder(model_dir, str(tmp_path / "work"), data_dir, echo=lambda s: None)
    path = a.fp32_onnx(builder)
    seq = 32
    inputs = token_inputs(1, seq, config.vocab_size, seed=1)
    inputs["input_mask"][:, seq - 8:] = 0          # padding: the mask path too
    npz, out = str(tmp_path / "inputs.npz"), str(tmp_path / "out.npz")
    np.savez(npz, **peer_feed(("input_ids", "attention_mask", "token_type_ids"), inputs))
    ort = OnnxSession(path, 1)
    with a.DeepSparseWorker(a.deepsparse_python(VENV)) as worker:
        worker.request("load", key="tiny", path=path, cores=1, batch=1, seq=seq)
        names = worker.request("outputs", key="tiny", inputs=npz, out=out)["names"]
        assert worker.request("time", key="tiny", inputs=npz, runs=3)["ms"] > 0
    got = np.load(out)
    expected = dict(zip([o.name for o in ort.session.get_outputs()], ort.outputs(inputs)))
    assert sorted(names) == sorted(expected)
    diff, cosine = a.compare([expected[n] for n in names], [got[n] for n in names])
    assert diff <= a.FP32_TOLERANCE and cosine > 0.99999, (diff, cosine)
