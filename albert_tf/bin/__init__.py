"""Thin command-line binaries (absl flags); each parses flags and calls the library.

Importing this package (which every binary does first) quiets TensorFlow's start-up
unless ``--verbose`` is given: see `albert_tf.cli`.
"""

from albert_tf import cli as _cli

_cli.quiet_startup()
