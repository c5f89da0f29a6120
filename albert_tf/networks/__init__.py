"""Networks: the encoder graph shared by every model."""

from albert_tf.networks.encoder import (INPUT_NAMES, AlbertFunctionalModel, InputError,
                                        build_encoder, encoder_graph)

__all__ = ["INPUT_NAMES", "AlbertFunctionalModel", "InputError", "build_encoder", "encoder_graph"]
