"""How many parameters an encoder has, computed from its `AlbertConfig` alone.

No model is built and TensorFlow is not imported, so this is instant for any config
(``albert-tf-info`` prints it for every official config). The result equals
``albert_tf.build_encoder(config).count_params()`` exactly (``tests/test_info.py``
checks it against built encoders for every sharing mode, hidden groups and E == H).

With V ``vocab_size``, E ``embedding_size``, H ``hidden_size``, L ``num_hidden_layers``,
G ``num_hidden_groups``, K ``inner_group_num``, I ``intermediate_size``, P
``max_position_embeddings``, T ``type_vocab_size`` and A = N * D the attention width
(``num_attention_heads * head_size``, H unless heads were pruned)::

    embeddings  = (V + P + T) * E + 2E            word, position, type tables; LayerNorm
    projection  = E * H + H      if E != H, else 0  Dense E -> H
    attention   = 3 * (H * A + A) + A * H + H + 2H  query, key, value, output; LayerNorm
    ffn         = H * I + I + I * H + H + 2H        intermediate, output; LayerNorm
    pooler      = H * H + H                         Dense on [CLS]

    total = embeddings + projection + n_attention * attention + n_ffn * ffn + pooler

where n_attention (n_ffn) is the number of distinct attention (feed-forward) sublayers:
K per hidden group that some layer uses when ``sharing`` shares that sublayer (``all``,
or ``attention`` / ``ffn``), else K per layer, L * K. Layer i uses group
``int(i / L * G)`` (`AlbertConfig.group_of_layer`, the original's float expression), and
that expression can skip a group (L = G = 22 uses 21 groups), so the used groups are
counted, not assumed to be G. The rule of which layer owns which weights is
`albert_tf.networks.encoder.sublayer_name`; this module mirrors it without TensorFlow.
"""

from __future__ import annotations

from albert_tf.config import AlbertConfig

PARTS = ("embeddings", "projection", "attention", "ffn", "pooler")
BYTES_PER_FLOAT32 = 4


def sublayer_count(config: AlbertConfig, kind: str) -> int:
    """Distinct ``kind`` (``attention`` or ``ffn``) sublayers the encoder creates."""
    if kind not in ("attention", "ffn"):
        raise ValueError(f"kind must be 'attention' or 'ffn', got {kind!r}.")
    if config.sharing in ("all", kind):
        owners = len({config.group_of_layer(i) for i in range(config.num_hidden_layers)})
    else:
        owners = config.num_hidden_layers
    return owners * config.inner_group_num


def encoder_parameter_breakdown(config: AlbertConfig) -> dict[str, int]:
    """Parameters of each part of the encoder, keyed by `PARTS` (formulas: module doc).

    ``attention`` and ``ffn`` are totals over all distinct sublayers of that kind.
    """
    V, E, H = config.vocab_size, config.embedding_size, config.hidden_size
    P, T, I = config.max_position_embeddings, config.type_vocab_size, config.intermediate_size
    A = config.num_attention_heads * config.head_size
    one_attention = 3 * (H * A + A) + (A * H + H) + 2 * H
    one_ffn = (H * I + I) + (I * H + H) + 2 * H
    return {
        "embeddings": (V + P + T) * E + 2 * E,
        "projection": E * H + H if E != H else 0,
        "attention": sublayer_count(config, "attention") * one_attention,
        "ffn": sublayer_count(config, "ffn") * one_ffn,
        "pooler": H * H + H,
    }


def encoder_parameter_count(config: AlbertConfig) -> int:
    """Parameters of ``build_encoder(config)`` (encoder + pooler), without building it."""
    return sum(encoder_parameter_breakdown(config).values())


def float32_mib(parameters: int) -> float:
    """Size of ``parameters`` float32 weights in MiB (2**20 bytes)."""
    return parameters * BYTES_PER_FLOAT32 / 2**20
