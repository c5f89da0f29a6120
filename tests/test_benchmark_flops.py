"""FLOPs per sequence from the config agree with TensorFlow's own count of the graph."""

import pytest

import albert_tf
from albert_tf.backend import tf
from albert_tf.benchmark.flops import flops_per_sequence


def profiler_flops(model, seq_length: int) -> int:
    """TF's profiler count of float ops in the model's graph, batch 1."""
    spec = {name: tf.TensorSpec([1, seq_length], tf.int32, name=name)
            for name in albert_tf.INPUT_NAMES}
    graph = tf.function(lambda x: model(x)).get_concrete_function(spec).graph
    options = tf.compat.v1.profiler.ProfileOptionBuilder.float_operation()
    options["output"] = "none"
    return tf.compat.v1.profiler.profile(graph=graph, options=options).total_float_ops


@pytest.mark.slow
@pytest.mark.parametrize("name, sharing", [("albert_tiny_groups", "all"), ("bert_tiny", "none"),
                                           ("albert_tiny", "ffn")])
def test_formula_matches_the_profiler(name, sharing):
    config = albert_tf.load_config(name).replace(sharing=sharing, hidden_size=64,
                                                 intermediate_size=256)
    model = albert_tf.build_encoder(config)
    counted = profiler_flops(model, 32)
    formula = flops_per_sequence(config, 32)
    # The profiler also counts softmax, LayerNorm, GELU and adds, which the formula
    # leaves out; they are a few percent at this small width.
    assert formula <= counted <= formula * 1.10, (formula, counted)


def test_sharing_changes_parameters_not_flops():
    base = albert_tf.load_config("albert_base")
    assert flops_per_sequence(base, 128) == flops_per_sequence(base.replace(sharing="none"), 128)
    bert = albert_tf.load_config("bert_base")
    # Same H, L, I: ALBERT-base differs only by its E -> H projection.
    assert flops_per_sequence(base, 128) - flops_per_sequence(bert, 128) == 2 * 128 * 128 * 768
