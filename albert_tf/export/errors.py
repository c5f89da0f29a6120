"""What every export shares before TensorFlow loads: its error and its inputs.

`ExportError` (the model directory or the requested export is unusable) and
`export_inputs` (the paths an export's output may not equal, contain or lie inside) are
here, not in `albert_tf.export.common`, so that a request is checked and refused in one
line before any exporter imports TensorFlow (`albert_tf.export.formats`)."""

from __future__ import annotations


class ExportError(ValueError):
    """The model directory or the requested export is unusable; the message says why."""


def export_inputs(model_dir: str, vocab_file: str | None = None,
                  calibration_file: str | None = None,
                  qat_model_dir: str | None = None) -> list[tuple[str, str | None]]:
    """The ``(flag, path)`` inputs of an export, which its ``--output`` may not equal,
    contain or lie inside (`albert_tf.outputs.check_output`)."""
    return [("--model_dir", model_dir), ("--vocab_file", vocab_file),
            ("--calibration_file", calibration_file), ("--qat_model_dir", qat_model_dir)]
