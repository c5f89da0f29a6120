"""DeepSparse's side of ``make figures NAME=deepsparse-anchor``: run *by path* with the
DeepSparse venv's interpreter (``.venv-deepsparse/bin/python``;
`albert_tf.benchmark.deepsparse.DeepSparseWorker` starts it), it imports neither albert_tf
nor TensorFlow (DeepSparse 1.8 needs onnx<1.15 and Python < 3.12), only the standard library
(numpy, onnx and deepsparse inside the requests). It lives in the package so that the client
finds it in a wheel install too (like ``albert_tflite/sdk_check.py`` for ``.venv-sdk``); it is
the one timing loop outside `albert_tf.benchmark.timing.time_call`, because that module cannot
be imported in this venv.

One JSON request per stdin line, one JSON reply per stdout line (DeepSparse's own chatter goes
to stderr):

- ``{"op": "load", "key": k, "path": onnx, "cores": n, "batch": b, "seq": s}``: compiles
  ``onnx`` with ``deepsparse.compile_model`` (``num_cores=n``, every input fixed to
  ``[b, s]``), replies ``{"ok": true, "seconds": compile time, "supported": the fraction of
  the graph DeepSparse's own kernels run (the rest runs on its bundled ONNX Runtime)}``;
- ``{"op": "time", "key": k, "inputs": npz, "runs": n, "warmup": w}``: the median ms of ``n``
  ``engine.run`` calls on the arrays of ``npz`` (fed in the model's input order, by name);
- ``{"op": "outputs", "key": k, "inputs": npz, "out": npz}``: writes the outputs to ``out``;
- ``{"op": "info"}``: DeepSparse's version and its view of the CPU.

A failure replies ``{"ok": false, "error": one line}`` and the worker carries on.
"""

from __future__ import annotations

import json
import os
import sys
import time

os.environ.setdefault("NM_DISABLE_ANALYTICS", "1")   # no usage reports from a benchmark


def _median(values):
    values = sorted(values)
    middle = len(values) // 2
    return values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2


class Worker:
    def __init__(self):
        self.engines = {}
        self.feeds = {}

    def feed(self, key, path):
        """The arrays of ``path`` in the engine's input order (cached per key and file)."""
        import numpy as np
        cache = (key, path)
        if cache not in self.feeds:
            engine = self.engines[key]
            arrays = np.load(path)
            names = list(engine.input_names)
            self.feeds[cache] = [np.ascontiguousarray(arrays[n], dtype=np.int64)
                                 for n in names]
        return self.feeds[cache]

    def load(self, key, path, cores, batch, seq):
        import onnx
        import deepsparse
        count = len(onnx.load(path, load_external_data=False).graph.input)
        start = time.perf_counter()
        self.engines[key] = deepsparse.compile_model(
            path, batch_size=batch, num_cores=cores, input_shapes=[[batch, seq]] * count)
        seconds = time.perf_counter() - start
        return {"seconds": seconds,
                "supported": float(self.engines[key].fraction_of_supported_ops)}

    def time(self, key, inputs, runs, warmup=3):
        engine, feed = self.engines[key], self.feed(key, inputs)
        for _ in range(warmup):
            engine.run(feed)
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            engine.run(feed)
            times.append((time.perf_counter() - start) * 1e3)
        return {"ms": _median(times)}

    def outputs(self, key, inputs, out):
        import numpy as np
        engine = self.engines[key]
        results = engine.run(self.feed(key, inputs))
        np.savez(out, **{name: np.asarray(a) for name, a in zip(engine.output_names, results)})
        return {"names": list(engine.output_names)}

    def info(self):
        import deepsparse
        from deepsparse.cpu import cpu_architecture
        arch = cpu_architecture()
        return {"version": deepsparse.__version__, "isa": arch.isa, "vnni": bool(arch.vnni),
                "vendor": arch.vendor, "cores": arch.available_cores_per_socket}


def main() -> int:
    # Replies on a private copy of stdout; anything else written to fd 1 (the engine's
    # native code too) goes to stderr, so it cannot break the protocol.
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    worker = Worker()
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        op = request.pop("op")
        try:
            reply = {"ok": True, **getattr(worker, op)(**request)}
        except Exception as error:   # noqa: BLE001  (reported to the driver, which decides)
            text = " ".join(str(error).split())[:500]
            reply = {"ok": False, "error": f"{type(error).__name__}: {text}"}
        replies.write(json.dumps(reply) + "\n")
        replies.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
