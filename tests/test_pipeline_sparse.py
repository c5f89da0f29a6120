"""The pipeline's sparse-weight exports (issue #28): ``compress.sparse_weights`` adds, for
each block-pruned candidate, a TFLite export with its weights stored sparse at every
quantization whose sparse kernel runs its blocks, labelled ``<quantization>_sparse`` and
reported under the sparse target's runtime name. Planning only: no stage runs here (the
export itself is tests/test_export_sparse.py)."""

import json

import pytest

from albert_tf.hyperparams import ConfigValueError
from albert_tf.export import sparsity
from albert_tf.pipeline.pipeline_config import load_pipeline_config


def _stages(tmp_path, *overrides):
    from albert_tf.pipeline.driver import Paths, all_stages
    config = load_pipeline_config("run_quick", [f"output_dir={tmp_path}", *overrides])
    return {s.name: s for s in all_stages(config, Paths(config.output_dir))}


@pytest.mark.parametrize("block, quantizations, expected", [
    ((16, 1), ["none", "dynamic", "int8"], {"none": "1x4", "int8": "1x16"}),
    ((4, 1), ["none", "dynamic", "int8"], {"none": "1x4"}),     # 4 rows: not 1x16 blocks
    ((32, 1), ["int8"], {"int8": "1x16"}),                      # a multiple of 16
    ((1, 1), ["none", "int8"], {}),                             # unstructured: OpenVINO only
    ((1, 16), ["none", "int8"], {}),                            # across outputs: no kernel
    ((16, 1), ["dynamic"], {}),                                 # no sparse dynamic-range kernel
])
def test_sparse_exports_follow_the_kernels_blocks(block, quantizations, expected):
    assert sparsity.kernels_for_block("tflite", block, quantizations) == expected
    # OpenVINO's sparse int8 weights take any zeros
    assert sparsity.kernels_for_block("openvino", block, ["none", "int8"]) == \
        {"int8": "unstructured"}


def test_block_pruned_candidates_get_sparse_exports(tmp_path):
    stages = _stages(tmp_path, "compress.prune_block_size=16x1", "compress.sparse_weights=true",
                     "compress.quantizations=[none,dynamic,int8]")
    candidate = "albert_small+prune0.5_16x1"
    for label, pattern in (("none_sparse", "1x4"), ("int8_sparse", "1x16")):
        argv = stages[f"export_{candidate}__{label}"].argv()
        assert f"--sparse_weights={pattern}" in argv
        assert f"--quantization={label[:-len('_sparse')]}" in argv
        assert f"score_{candidate}__{label}" in stages and f"time_{candidate}__{label}" in stages
    assert f"export_{candidate}__dynamic_sparse" not in stages
    dense = stages[f"export_{candidate}__int8"].argv()
    assert not any(a.startswith("--sparse_weights") for a in dense)
    # finetuned (uncompressed) models are never exported sparse
    assert not any(name.endswith("_sparse") for name in stages if "+" not in name)


def test_without_the_setting_nothing_is_exported_sparse(tmp_path):
    stages = _stages(tmp_path, "compress.prune_block_size=16x1")
    assert not any(name.endswith("_sparse") for name in stages)


@pytest.mark.parametrize("overrides", [
    ["compress.sparse_weights=true"],                                   # unstructured
    ["compress.sparse_weights=true", "compress.prune_block_size=16x1",
     "compress.quantizations=[dynamic]"],                               # no sparse kernel
    ["compress.sparse_weights=true", "compress.prune_block_size=16x1",
     "compress.prune_sparsities=[]"],                                   # nothing pruned
])
def test_sparse_weights_that_nothing_runs_fail_in_one_line(overrides):
    with pytest.raises(ConfigValueError) as e:
        load_pipeline_config("run_quick", overrides)
    message = str(e.value)
    assert "\n" not in message and message.startswith("compress.sparse_weights:")
    assert "tflite none (1x4)" in message and "tflite int8 (1x16)" in message


def test_sparse_artifacts_are_reported_on_the_sparse_target(tmp_path):
    """collect_artifacts names a sparse export's runtime by the target that times sparse
    weights, and a dense one by the dense target, from what the export stage recorded."""
    from albert_tf.pipeline.driver import collect_artifacts
    from albert_tf.pipeline.stages import StageRunner
    config = load_pipeline_config("run_quick", [f"output_dir={tmp_path}"])
    runner = StageRunner(str(tmp_path), echo=lambda s: None)
    stages_dir = tmp_path / "stages"
    stages_dir.mkdir(parents=True, exist_ok=True)
    for label, quantization, pattern in (("int8", "int8", None),
                                         ("int8_sparse", "int8", "1x16"),
                                         ("none_sparse", "none", "1x4")):
        export_dir = tmp_path / "export" / label
        export_dir.mkdir(parents=True)
        (export_dir / "model.tflite").write_bytes(b"\0" * 2048)
        key = f"albert_small+prune0.9_16x1__{label}"
        records = {f"export_{key}": {"export_dir": str(export_dir), "quantization": quantization,
                                     "sparse_weights": pattern},
                   f"score_{key}": {"accuracy": 0.8},
                   f"time_{key}": {"median_ms": 3.0}}
        for name, result in records.items():
            (stages_dir / f"{name}.json").write_text(json.dumps(dict(result, seconds=0)))
    runtimes = {a.name: a.runtime for a in collect_artifacts(config, runner)}
    assert runtimes == {"albert_small+prune0.9_16x1/int8": "tflite_int8",
                        "albert_small+prune0.9_16x1/int8_sparse": "tflite_sparse_int8",
                        "albert_small+prune0.9_16x1/none_sparse": "tflite_sparse"}
