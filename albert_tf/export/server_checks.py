"""Request checks shared by the x86-server exports (`albert_tf.export.openvino`,
`albert_tf.export.onnx`): each problem is a one-line `ExportError` naming the fix.
Importing this module imports no TensorFlow (the error class does, when raised)."""

from __future__ import annotations

import importlib


def export_error(message: str) -> Exception:
    from albert_tf.export.errors import ExportError
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


def check_request(format_name: str, quantization: str, batch_size: int | None) -> None:
    """The quantization and static batch size of a server export (``format_name``: its
    `albert_tf.export.formats` record names the choices and how its int8 is made)."""
    from albert_tf.export import formats
    export_format = formats.get(format_name)
    if quantization not in export_format.quantizations():
        raise export_error(f"--quantization={quantization!r}: {export_format.title[0].lower()}"
                           f"{export_format.title[1:]} is one of "
                           f"{export_format.quantizations()} (int8: "
                           f"{export_format.int8_method}).")
    if batch_size is not None and batch_size < 1:
        raise export_error(f"--batch_size must be >= 1, got {batch_size}.")


def check_seq_length(seq_length: int | None, max_position_embeddings: int) -> None:
    if seq_length is not None and not 3 <= seq_length <= max_position_embeddings:
        raise export_error(f"--seq_lengths={seq_length}: must be in "
                           f"[3, {max_position_embeddings}] (max_position_embeddings).")
