"""Functional-graph surgery shared by the compression methods.

Our models are flat functional graphs in which a shared block is one layer with L
inbound nodes (one per depth). ``keras.models.clone_model`` calls its
``clone_function`` once per *layer*, so a wrapper put around a shared block serves
all depths with one set of variables. `split_shared_nodes` instead rebuilds the
graph with a different layer object per *node*, which is how QAT gives every depth
its own activation ranges while the wrapped block (and its weights) stays shared.
"""

from __future__ import annotations

from typing import Callable

from albert_tf.backend import keras
from albert_tf.checkpoints import named_weights
from albert_tf.networks.encoder import AlbertFunctionalModel


def rewrap(new: keras.Model, like: keras.Model, albert_config=None) -> keras.Model:
    """``new``'s graph as an `AlbertFunctionalModel` carrying ``like``'s config and name
    (``clone_model`` returns a plain ``Functional``)."""
    config = albert_config or getattr(like, "albert_config", None)
    return AlbertFunctionalModel(new._nested_inputs, new._nested_outputs,  # noqa: SLF001
                                 albert_config=config, name=like.name)


def fresh_copy(model: keras.Model) -> keras.Model:
    """A copy with new layer objects (from their configs) and the same weight values.

    Weight names stay canonical, so name-keyed checkpoints still match.
    """
    copy = keras.models.clone_model(model)
    source = named_weights(model)
    target = named_weights(copy)
    if sorted(source) != sorted(target):
        raise ValueError("fresh_copy: the copy's weights differ from the model's: "
                         f"{sorted(set(source) ^ set(target))[:5]}")
    for name, variable in target.items():
        variable.assign(source[name])
    return rewrap(copy, model)


def _is_node_ref(value) -> bool:
    return (isinstance(value, list) and len(value) in (3, 4) and isinstance(value[0], str)
            and isinstance(value[1], int) and isinstance(value[2], int))


def _rename_refs(value, mapping: dict[tuple[str, int], str]):
    """Replaces ``[layer, node, tensor(, kwargs)]`` references to split layers."""
    if _is_node_ref(value):
        key = (value[0], value[1])
        out = list(value)
        if key in mapping:
            out[0], out[1] = mapping[key], 0
        if len(out) == 4:
            out[3] = _rename_refs(out[3], mapping)
        return out
    if isinstance(value, list):
        return [_rename_refs(v, mapping) for v in value]
    if isinstance(value, dict):
        return {k: _rename_refs(v, mapping) for k, v in value.items()}
    return value


def split_shared_nodes(model: keras.Model,
                       node_fn: Callable[[keras.layers.Layer, int, int], keras.layers.Layer],
                       select: Callable[[keras.layers.Layer], bool]) -> keras.Model:
    """Rebuilds ``model`` calling ``node_fn(layer, i, n)`` for the i-th of the n calls of
    each selected layer (i = depth for a shared block) and reusing every other layer.

    ``node_fn`` typically returns a wrapper around ``layer``: the wrappers share the
    wrapped layer's weights and each owns its own extra variables.
    """
    from tf_keras.src.engine import functional  # private: node-level graph config

    created: dict[str, keras.layers.Layer] = {}
    model_input_layers = set(model._input_layers)  # noqa: SLF001

    def serialize(layer):
        if layer in model_input_layers:
            created[layer.name] = keras.layers.InputLayer(**layer.get_config())
        else:
            created[layer.name] = layer
        return {}

    config = functional.get_network_config(model, serialize_layer_fn=serialize)
    mapping: dict[tuple[str, int], str] = {}
    new_layers = []
    for entry in config["layers"]:
        layer = created[entry["name"]]
        nodes = entry["inbound_nodes"]
        if isinstance(layer, keras.layers.InputLayer) or not select(layer) or not nodes:
            new_layers.append(entry)
            continue
        for i, node in enumerate(nodes):
            new = node_fn(layer, i, len(nodes))
            name = new.name
            if name in created and created[name] is not new:
                raise ValueError(f"split_shared_nodes: node_fn returned a layer named {name!r} "
                                 "that already exists.")
            created[name] = new
            mapping[(entry["name"], i)] = name
            new_layers.append(dict(entry, name=name, inbound_nodes=[node]))
    for entry in new_layers:
        entry["inbound_nodes"] = _rename_refs(entry["inbound_nodes"], mapping)
    config = dict(config, layers=new_layers,
                  input_layers=_rename_refs(config["input_layers"], mapping),
                  output_layers=_rename_refs(config["output_layers"], mapping))
    inputs, outputs, _ = functional.reconstruct_from_config(config, created_layers=created)
    return rewrap(keras.Model(inputs, outputs), model)
