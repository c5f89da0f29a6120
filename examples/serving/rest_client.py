"""TF Serving REST client for an exported ALBERT model (``:predict`` JSON body).

Serve the export (``albert-tf-export --format=saved_model --output=/models``)::

    docker run -p 8501:8501 -p 8500:8500 -v /models/sst2:/models/sst2 -e MODEL_NAME=sst2 \
        tensorflow/serving:2.21.0
    # The graph uses tensorflow-text ops (SentencepieceOp, ...). If the model server
    # answers "Op type not registered", it was built without them: build it with the
    # tensorflow-text ops linked in (TF Serving's custom-op guide).

then::

    python examples/serving/rest_client.py --url=http://localhost:8501 --model=sst2 \\
        --text="a gorgeous, witty film" --text="flat and lifeless"

Request body (row format, one instance per text)::

    {"signature_name": "serving_default",
     "instances": [{"text": "a gorgeous, witty film"}, {"text": "flat and lifeless"}]}

Pair tasks send ``{"text_a": ..., "text_b": ...}`` per instance, span models
``{"question": ..., "context": ...}``. Text that is not valid UTF-8 is sent as
``{"b64": "<base64>"}`` (TF Serving's encoding of binary strings). The response is
``{"predictions": [{"probabilities": [p0, p1], "label": "1", "label_id": 1}, ...]}``.
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
import urllib.request
from typing import Sequence


def _value(text: str | bytes):
    if isinstance(text, bytes):
        try:
            return text.decode("utf-8")
        except UnicodeDecodeError:
            return {"b64": base64.b64encode(text).decode("ascii")}
    return text


def predict_body(columns: dict[str, Sequence[str | bytes]],
                 signature_name: str = "serving_default", row_format: bool = True) -> dict:
    """The ``:predict`` JSON body for string inputs ``{input name: [texts]}``.

    Row format gives ``instances`` (one dict per example), columnar format ``inputs``
    (one list per input name).
    """
    sizes = {len(v) for v in columns.values()}
    if len(sizes) != 1:
        raise ValueError(f"every input needs the same number of texts, got {sizes}")
    if row_format:
        n = sizes.pop()
        instances = [{name: _value(values[i]) for name, values in columns.items()}
                     for i in range(n)]
        return {"signature_name": signature_name, "instances": instances}
    return {"signature_name": signature_name,
            "inputs": {name: [_value(v) for v in values] for name, values in columns.items()}}


def predict_url(base_url: str, model: str, version: int | None = None) -> str:
    url = f"{base_url.rstrip('/')}/v1/models/{model}"
    if version is not None:
        url += f"/versions/{version}"
    return url + ":predict"


def predict(base_url: str, model: str, columns: dict[str, Sequence[str | bytes]],
            version: int | None = None, signature_name: str = "serving_default",
            timeout: float = 30.0) -> list[dict]:
    """POSTs the body and returns ``predictions`` (one dict per text)."""
    body = json.dumps(predict_body(columns, signature_name)).encode("utf-8")
    request = urllib.request.Request(predict_url(base_url, model, version), data=body,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read())["predictions"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://localhost:8501")
    parser.add_argument("--model", required=True)
    parser.add_argument("--version", type=int, default=None)
    parser.add_argument("--text", action="append", required=True)
    parser.add_argument("--text_b", action="append", help="second texts for pair tasks")
    parser.add_argument("--print_body", action="store_true", help="print the body, send nothing")
    args = parser.parse_args(argv)
    columns = {"text_a": args.text, "text_b": args.text_b} if args.text_b else {"text": args.text}
    if args.print_body:
        print(json.dumps(predict_body(columns), indent=2))
        return 0
    for text, prediction in zip(args.text, predict(args.url, args.model, columns, args.version)):
        print(json.dumps({"text": text, **prediction}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
