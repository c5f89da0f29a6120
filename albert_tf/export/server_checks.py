"""Request checks shared by the x86-server exports (`albert_tf.export.openvino`,
`albert_tf.export.onnx`): each problem is a one-line `ExportError` naming the fix.
Importing this module imports no TensorFlow (the error class does, when raised)."""

from __future__ import annotations

import importlib


def export_error(message: str) -> Exception:
    from albert_tf.export.common import ExportError   # imports TensorFlow: only on errors
    return ExportError(message)


def require(export_name: str, pip_fix: str, *packages: str) -> None:
    """Imports ``packages``; names the missing one and ``pip_fix`` otherwise."""
    for package in packages:
        try:
            importlib.import_module(package)
        except ImportError as e:
            raise export_error(f"the {export_name} export needs the Python package "
                               f"'{package}', which is not installed "
                               f"({e.__class__.__name__}: {e}): {pip_fix}.") from None


def check_request(what: str, quantization: str, quantizations, int8: str,
                  batch_size: int | None) -> None:
    """The quantization and static batch size of a server export
    (``what``: "an OpenVINO export"; ``int8``: how its int8 is made)."""
    if quantization not in quantizations:
        raise export_error(f"--quantization={quantization!r}: {what} is one of "
                           f"{tuple(quantizations)} (int8: {int8}).")
    if batch_size is not None and batch_size < 1:
        raise export_error(f"--batch_size must be >= 1, got {batch_size}.")


def check_seq_length(seq_length: int | None, max_position_embeddings: int) -> None:
    if seq_length is not None and not 3 <= seq_length <= max_position_embeddings:
        raise export_error(f"--seq_lengths={seq_length}: must be in "
                           f"[3, {max_position_embeddings}] (max_position_embeddings).")
