"""What a ``.tflite`` file computes in: op counts per type and dtype, custom ops, float ops.

Reads the flatbuffer with LiteRT's generated schema (no TensorFlow import), so the edge
tools use it too. An op's *compute type* is FLOAT32 when any of its non-constant inputs or outputs is
float (a dynamic-range op: float activations, int8 weights), else the integer type of its
activations (INT8, INT16), else INT32 for pure index ops. In a full-integer model only the
boundary conversions (`BOUNDARY_OPS`: the int32 attention mask cast and quantized, the
float outputs dequantized) may touch float; `float_ops` lists every op that does.
"""

from __future__ import annotations

import collections
from typing import Any


_INDEX_TYPES = {"INT32", "INT64", "BOOL", "STRING"}
_FLOAT_TYPES = {"FLOAT32", "FLOAT16", "BFLOAT16", "FLOAT64"}
# Ops that only convert at the edges of an integer graph (int32 mask -> float -> int8, int8
# logits -> float outputs); they are reported but do not make a model "not integer-only".
BOUNDARY_OPS = ("QUANTIZE", "DEQUANTIZE", "CAST")


def _names(cls) -> dict[int, str]:
    return {v: k for k, v in vars(cls).items() if not k.startswith("_") and isinstance(v, int)}


def op_report(model: bytes | str) -> dict[str, Any]:
    """Op statistics of a TFLite model (bytes or path), over all subgraphs.

    Returns ``{"subgraphs": [...], "ops": {op: {compute_type: count}}, "custom_ops": [...],
    "float_ops": {op: count}, "num_ops": n, "op_versions": {op: version}}``; ``float_ops``
    counts ops whose compute type is FLOAT32/FLOAT16 (the float output ``DEQUANTIZE`` of an
    integer model included: compare with `integer_only`).
    """
    from ai_edge_litert import schema_py_generated as schema

    if isinstance(model, str):
        with open(model, "rb") as f:
            model = f.read()
    ops_by_code = _names(schema.BuiltinOperator)
    type_names = _names(schema.TensorType)
    m = schema.Model.GetRootAs(model, 0)
    codes = []
    for i in range(m.OperatorCodesLength()):
        code = m.OperatorCodes(i)
        builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
        if builtin == schema.BuiltinOperator.CUSTOM:
            codes.append(code.CustomCode().decode())
        else:
            codes.append(ops_by_code.get(builtin, str(builtin)))
    custom = sorted({codes[i] for i in range(len(codes))
                     if max(m.OperatorCodes(i).BuiltinCode(),
                            m.OperatorCodes(i).DeprecatedBuiltinCode())
                     == schema.BuiltinOperator.CUSTOM})
    ops: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    subgraphs = []
    for s in range(m.SubgraphsLength()):
        g = m.Subgraphs(s)

        def is_const(t: int) -> bool:
            if t < 0:
                return True
            buffer = m.Buffers(g.Tensors(t).Buffer())
            return buffer is not None and (buffer.DataLength() > 0 or buffer.Size() > 0)

        for k in range(g.OperatorsLength()):
            op = g.Operators(k)
            name = codes[op.OpcodeIndex()]
            tensors = [op.Inputs(i) for i in range(op.InputsLength()) if not is_const(op.Inputs(i))]
            tensors += [op.Outputs(i) for i in range(op.OutputsLength())]
            types = {type_names.get(g.Tensors(t).Type(), "?") for t in tensors if t >= 0}
            activations = types - _INDEX_TYPES
            if not activations:
                dtype = "INT32" if "INT32" in types or not types else sorted(types)[0]
            elif activations & _FLOAT_TYPES:
                dtype = "FLOAT32" if "FLOAT32" in activations else sorted(activations & _FLOAT_TYPES)[0]
            else:
                dtype = sorted(activations)[0]
            ops[name][dtype] += 1
        subgraphs.append({"name": (g.Name() or b"").decode(), "num_ops": g.OperatorsLength()})
    float_ops = {name: sum(n for t, n in types.items() if t in ("FLOAT32", "FLOAT16"))
                 for name, types in ops.items()}
    versions: dict[str, int] = {}
    for i, name in enumerate(codes):
        versions[name] = max(versions.get(name, 0), int(m.OperatorCodes(i).Version()))
    return {
        "subgraphs": subgraphs,
        "num_ops": sum(s["num_ops"] for s in subgraphs),
        "ops": {name: dict(types) for name, types in sorted(ops.items())},
        "custom_ops": custom,
        "float_ops": {k: v for k, v in sorted(float_ops.items()) if v},
        # the newest version of each op: a runtime must have it (older runtimes refuse
        # "Didn't find op for builtin opcode 'X' version 'N'")
        "op_versions": dict(sorted(versions.items())),
    }


def integer_only(report: dict[str, Any]) -> bool:
    """True when only boundary conversions (`BOUNDARY_OPS`) touch float."""
    return not [k for k in report["float_ops"] if k not in BOUNDARY_OPS]


def summary(report: dict[str, Any]) -> str:
    """One line per op type: ``OP  type x n, ...``."""
    lines = []
    for name, types in report["ops"].items():
        parts = ", ".join(f"{t.lower()} x{n}" for t, n in sorted(types.items()))
        lines.append(f"{name:24s} {parts}")
    return "\n".join(lines)


def signatures(model: bytes | str) -> dict[str, dict[str, Any]]:
    """``{signature: {"inputs": {name: {"dtype", "shape"}}, "outputs": {...}}}`` of a model,
    read from the flatbuffer (works without registering the model's custom ops)."""
    from ai_edge_litert import schema_py_generated as schema

    if isinstance(model, str):
        with open(model, "rb") as f:
            model = f.read()
    type_names = _names(schema.TensorType)
    m = schema.Model.GetRootAs(model, 0)
    result: dict[str, dict[str, Any]] = {}
    for i in range(m.SignatureDefsLength()):
        sig = m.SignatureDefs(i)
        g = m.Subgraphs(sig.SubgraphIndex())

        def describe(tensor_map) -> dict[str, Any]:
            t = g.Tensors(tensor_map.TensorIndex())
            shape = [int(t.Shape(d)) for d in range(t.ShapeLength())]
            if t.ShapeSignatureLength():
                shape = [int(t.ShapeSignature(d)) for d in range(t.ShapeSignatureLength())]
            return {"dtype": type_names.get(t.Type(), "?").lower(), "shape": shape}

        result[sig.SignatureKey().decode()] = {
            "inputs": {sig.Inputs(k).Name().decode(): describe(sig.Inputs(k))
                       for k in range(sig.InputsLength())},
            "outputs": {sig.Outputs(k).Name().decode(): describe(sig.Outputs(k))
                        for k in range(sig.OutputsLength())},
        }
    return result
