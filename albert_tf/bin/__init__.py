"""Thin command-line binaries (absl flags); each parses flags and calls the library."""
