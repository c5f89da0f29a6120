"""Modules that moved keep working under their old names, with a DeprecationWarning (#45:
one name per concept; the public API and the console scripts stay stable)."""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings

import pytest

MOVED = {
    "albert_tf.export.runner": "albert_tf.runtime.runner",
    "albert_tf.export.tflite_runner": "albert_tf.runtime.tflite",
    "albert_tf.export.onnx_runner": "albert_tf.runtime.onnx",
    "albert_tf.export.openvino_runner": "albert_tf.runtime.openvino",
    "albert_tf.text.preprocessor": "albert_tf.runtime.preprocessor",
    "albert_tf.export.evaluate": "albert_tf.runtime.evaluate",
    "albert_tf.export.tflite_metadata": "albert_tf.export.metadata_schema",
    "albert_tf.export.saved_model_cli": "albert_tf.bin.saved_model_cli",
}


@pytest.mark.parametrize("old,new", sorted(MOVED.items()))
def test_old_module_name_is_the_new_module_and_warns(old, new):
    sys.modules.pop(old, None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    assert any(issubclass(w.category, DeprecationWarning) and new in str(w.message)
               for w in caught), [str(w.message) for w in caught]


def test_old_session_names_are_the_renamed_classes():
    sys.modules.pop("albert_tf.benchmark.runtimes", None)
    with pytest.warns(DeprecationWarning, match="albert_tf.runtime.sessions"):
        from albert_tf.benchmark import runtimes
    from albert_tf.runtime import sessions

    assert runtimes.TFLiteRunner is sessions.TFLiteSession
    assert runtimes.OnnxRunner is sessions.OnnxSession
    assert runtimes.RUNNERS is sessions.SESSIONS
    assert runtimes.token_inputs is sessions.token_inputs


def test_runners_stay_importable_from_albert_tf_export_and_runtime():
    import albert_tf.export as export
    import albert_tf.runtime as runtime
    from albert_tf.runtime.tflite import TFLiteRunner

    assert export.TFLiteRunner is runtime.TFLiteRunner is TFLiteRunner
    assert export.open_runner is runtime.open_runner


def test_old_evaluate_module_still_runs_as_a_command():
    result = subprocess.run([sys.executable, "-m", "albert_tf.export.evaluate", "--help"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "--model" in result.stdout
