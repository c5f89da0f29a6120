"""Keras 2 layers of ALBERT; every layer with weights implements ``get_prunable_weights``."""

from albert_tf.layers.activations import gelu_exact, gelu_tanh, get_activation
from albert_tf.layers.attention import AttentionMask, SelfAttentionBlock
from albert_tf.layers.embeddings import AlbertEmbeddings
from albert_tf.layers.feed_forward import FeedForwardBlock
from albert_tf.layers.output_layers import (ClsPooler, FoldChoices, GatherPositions,
                                            MaskedLMHead, SpanLogits, UnfoldChoices)

__all__ = ["AlbertEmbeddings", "AttentionMask", "ClsPooler", "FeedForwardBlock", "FoldChoices",
           "GatherPositions", "MaskedLMHead", "SelfAttentionBlock",
           "SpanLogits", "UnfoldChoices", "gelu_exact", "gelu_tanh", "get_activation"]
