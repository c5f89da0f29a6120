"""TF Serving gRPC client for an exported ALBERT model (``PredictRequest``).

    pip install tensorflow-serving-api==2.21.0
    python examples/serving/grpc_client.py --target=localhost:8500 --model=sst2 \\
        --text="a gorgeous, witty film" --text="flat and lifeless"

The request carries one DT_STRING tensor of shape ``[batch]`` per text input of the
``serving_default`` signature (``text``; ``text_a``/``text_b`` for pair tasks;
``question``/``context`` for span models); any bytes are allowed (invalid UTF-8 included).
The response holds the signature's outputs, e.g. ``probabilities`` float ``[batch, C]``,
``label`` string ``[batch]``, ``label_id`` int32 ``[batch]``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Sequence

import numpy as np


def make_request(model: str, columns: dict[str, Sequence[str | bytes]],
                 signature_name: str = "serving_default", version: int | None = None):
    """A ``PredictRequest`` with one DT_STRING ``[batch]`` tensor per input name."""
    from tensorflow.core.framework import tensor_pb2, tensor_shape_pb2, types_pb2
    from tensorflow_serving.apis import predict_pb2

    request = predict_pb2.PredictRequest()
    request.model_spec.name = model
    request.model_spec.signature_name = signature_name
    if version is not None:
        request.model_spec.version.value = version
    sizes = {len(v) for v in columns.values()}
    if len(sizes) != 1:
        raise ValueError(f"every input needs the same number of texts, got {sizes}")
    for name, texts in columns.items():
        values = [t.encode("utf-8") if isinstance(t, str) else bytes(t) for t in texts]
        request.inputs[name].CopyFrom(tensor_pb2.TensorProto(
            dtype=types_pb2.DT_STRING, string_val=values,
            tensor_shape=tensor_shape_pb2.TensorShapeProto(
                dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=len(values))])))
    return request


def decode_response(response) -> dict[str, np.ndarray]:
    """``{output name: numpy array}`` of a ``PredictResponse``."""
    from tensorflow.core.framework import types_pb2
    out = {}
    for name, proto in response.outputs.items():
        shape = [d.size for d in proto.tensor_shape.dim]
        if proto.dtype == types_pb2.DT_STRING:
            value = np.array(list(proto.string_val), dtype=object)
        elif proto.dtype == types_pb2.DT_FLOAT:
            value = (np.frombuffer(proto.tensor_content, np.float32) if proto.tensor_content
                     else np.array(proto.float_val, np.float32))
        elif proto.dtype == types_pb2.DT_INT32:
            value = (np.frombuffer(proto.tensor_content, np.int32) if proto.tensor_content
                     else np.array(proto.int_val, np.int32))
        else:
            raise ValueError(f"output {name}: unexpected dtype {proto.dtype}")
        out[name] = value.reshape(shape)
    return out


def predict(target: str, model: str, columns: dict[str, Sequence[str | bytes]],
            version: int | None = None, timeout: float = 30.0) -> dict[str, np.ndarray]:
    import grpc
    from tensorflow_serving.apis import prediction_service_pb2_grpc

    with grpc.insecure_channel(target) as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        response = stub.Predict(make_request(model, columns, version=version), timeout)
    return decode_response(response)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="localhost:8500")
    parser.add_argument("--model", required=True)
    parser.add_argument("--version", type=int, default=None)
    parser.add_argument("--text", action="append", required=True)
    parser.add_argument("--text_b", action="append")
    parser.add_argument("--print_request", action="store_true", help="print, send nothing")
    args = parser.parse_args(argv)
    columns = {"text_a": args.text, "text_b": args.text_b} if args.text_b else {"text": args.text}
    if args.print_request:
        print(make_request(args.model, columns, version=args.version))
        return 0
    outputs = predict(args.target, args.model, columns, args.version)
    for i, text in enumerate(args.text):
        row = {k: (v[i].decode() if isinstance(v[i], bytes) else np.asarray(v[i]).tolist())
               for k, v in outputs.items()}
        print(json.dumps({"text": text, **row}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
