"""albert-tf's official configurations, shipped in the wheel as package data.

``models/*.json`` (model shapes), ``experiments/*.yaml`` (training, compression and
pipeline experiments) and ``vocab/`` (the SentencePiece vocabulary the examples use).
Look them up with `albert_tf.resources`, never by path from a source checkout.
"""
