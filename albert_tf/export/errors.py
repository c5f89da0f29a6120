"""What every export shares before TensorFlow loads: its error and its inputs.

`ExportError` (the model directory or the requested export is unusable) and
`export_inputs` (the paths an export's output may not equal, contain or lie inside) are
here, not in `albert_tf.export.common`, so that a request is checked and refused in one
line before any exporter imports TensorFlow (`albert_tf.export.formats`)."""

from __future__ import annotations

import contextlib


class ExportError(ValueError):
    """The model directory or the requested export is unusable; the message says why."""


@contextlib.contextmanager
def unreadable_model(path: str, runtime: str):
    """Turns ``runtime``'s failure to load the model file ``path`` (truncated, damaged, not
    a model: ONNX Runtime's ``InvalidProtobuf``, OpenVINO's ``RuntimeError``, LiteRT's
    ``ValueError``...) into one `ExportError` naming the file, the runtime's first line
    and the fix."""
    try:
        yield
    except ExportError:
        raise
    except Exception as e:  # noqa: BLE001  (a runtime's own classes, e.g. pybind11's)
        lines = [line.strip() for line in str(e).splitlines() if line.strip()]
        cause = lines[-1] if lines else type(e).__name__     # runtimes: the cause comes last
        cause = cause if len(cause) <= 240 else cause[:237] + "..."
        raise ExportError(f"{path}: {runtime} cannot load it ({cause}); a truncated or "
                          "damaged file reads like this: copy it again, or export it again "
                          "with albert-tf-export.") from None


def export_inputs(model_dir: str, vocab_file: str | None = None,
                  calibration_file: str | None = None,
                  qat_model_dir: str | None = None) -> list[tuple[str, str | None]]:
    """The ``(flag, path)`` inputs of an export, which its ``--output`` may not equal,
    contain or lie inside (`albert_tf.outputs.check_output`)."""
    return [("--model_dir", model_dir), ("--vocab_file", vocab_file),
            ("--calibration_file", calibration_file), ("--qat_model_dir", qat_model_dir)]
