"""One runner per inference runtime; each imports only its own runtime, lazily.

A runner loads one artifact and runs it on int32 token ids of a given ``[batch, seq]``
shape. `albert_tf.benchmark.worker` runs one runner in a fresh process, so the peak
RSS it reports is what that runtime alone costs (TensorFlow is never imported to run
a TFLite, ONNX or OpenVINO model).

Worker runtimes (`SESSIONS`): ``tflite``, ``tflite_builtin`` (LiteRT's builtin kernels, no
XNNPACK: the sparse FULLY_CONNECTED kernels, which XNNPACK densifies or refuses), ``tf``,
``torch``, ``torch_int8``, ``onnx`` (any ONNX file: the plain, optimized and int8 peers of
`albert_tf.benchmark.peers`, and our own ONNX export, `albert_tf.export.onnx`, whose inputs
are int32), and
``openvino`` (IR at float32 precision), ``openvino_bf16`` (the same IR at bfloat16, OpenVINO's
default on CPUs with AVX-512 BF16 / AMX), ``openvino_int8`` (an NNCF int8 IR at OpenVINO's
default precision), ``openvino_int8_sparse`` (the same with
``CPU_SPARSE_WEIGHTS_DECOMPRESSION_RATE`` `SPARSE_WEIGHTS_RATE`: weights with more zeros than
that are kept sparse and decompressed on the fly).
"""

from __future__ import annotations

import os
from typing import Callable

import numpy as np

from albert_tf.benchmark.peers import ONNX_INPUTS
from albert_tf.export.sparsity import OPENVINO_SPARSE_RATE

Inputs = dict[str, np.ndarray]

# The Python package that runs each family of worker runtimes (the name before the first
# ``_``: ``openvino_int8`` -> ``openvino``): (distribution on PyPI, module it imports).
RUNTIME_PACKAGES = {"tflite": ("ai-edge-litert", "ai_edge_litert"),
                    "onnx": ("onnxruntime", "onnxruntime"),
                    "openvino": ("openvino", "openvino"),
                    "tf": ("tensorflow", "tensorflow"),
                    "torch": ("torch", "torch")}


def runtime_package(worker: str) -> tuple[str, str] | None:
    """``(distribution, module)`` of the package that runs worker runtime ``worker``."""
    return RUNTIME_PACKAGES.get(worker.split("_")[0])


def token_inputs(batch: int, seq: int, vocab_size: int, seed: int = 0) -> Inputs:
    """Random ids (no padding), all three model inputs, int32 ``[batch, seq]``."""
    rng = np.random.default_rng(seed)
    return {"input_word_ids": rng.integers(5, vocab_size, (batch, seq)).astype(np.int32),
            "input_mask": np.ones((batch, seq), np.int32),
            "input_type_ids": np.zeros((batch, seq), np.int32)}


class Session:
    """Loads an artifact once; ``prepare(inputs)`` returns a zero-argument call to time."""

    def prepare(self, inputs: Inputs) -> Callable[[], object]:
        raise NotImplementedError


class TFLiteSession(Session):
    """`ai_edge_litert` with XNNPACK (the default delegate) and ``threads`` threads;
    ``xnnpack=False``: the builtin kernels only (``BUILTIN_WITHOUT_DEFAULT_DELEGATES``).

    The model must have a static ``[batch, seq]`` signature; a model file per shape
    is expected (``artifact`` may contain ``{batch}`` and ``{seq}`` placeholders).
    """

    def __init__(self, artifact: str, threads: int, xnnpack: bool = True):
        self.artifact = artifact
        self.threads = threads
        self.xnnpack = xnnpack

    def prepare(self, inputs: Inputs) -> Callable[[], object]:
        from albert_tf.runtime.tflite import make_interpreter   # LiteRT, start-up quiet
        batch, seq = inputs["input_word_ids"].shape
        path = self.artifact.format(batch=batch, seq=seq)
        interpreter = make_interpreter(path, self.threads, self.xnnpack)
        interpreter.allocate_tensors()
        details = {d["name"]: d for d in interpreter.get_input_details()}
        for name, value in inputs.items():
            key = next(k for k in details if name in k)
            interpreter.set_tensor(details[key]["index"], value.astype(details[key]["dtype"]))
        return interpreter.invoke


class SavedModelSession(Session):
    """A TF SavedModel's ``encode`` signature (token ids in); float32 or bfloat16."""

    def __init__(self, artifact: str, threads: int, signature: str = "encode"):
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        import tensorflow as tf
        import tensorflow_text  # noqa: F401  (the SavedModel tokenizes in-graph: its ops)
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(1)
        self.tf = tf
        self.function = tf.saved_model.load(artifact).signatures[signature]

    def prepare(self, inputs: Inputs) -> Callable[[], object]:
        tensors = {k: self.tf.constant(v) for k, v in inputs.items()}
        return lambda: self.function(**tensors)


class TorchSession(Session):
    """Hugging Face `transformers` model from a directory; float32 or dynamic int8."""

    def __init__(self, artifact: str, threads: int, dynamic_int8: bool = False):
        import torch
        import transformers
        torch.set_num_threads(threads)
        self.torch = torch
        model = transformers.AutoModel.from_pretrained(artifact).eval()
        if dynamic_int8:
            model = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear},
                                                           dtype=torch.qint8)
        self.model = model

    def prepare(self, inputs: Inputs) -> Callable[[], object]:
        torch = self.torch
        feed = {"input_ids": torch.from_numpy(inputs["input_word_ids"].astype(np.int64)),
                "attention_mask": torch.from_numpy(inputs["input_mask"].astype(np.int64)),
                "token_type_ids": torch.from_numpy(inputs["input_type_ids"].astype(np.int64))}

        def run():
            with torch.inference_mode():
                return self.model(**feed)
        return run


# The ONNX / OpenVINO peers' input names -> ours.
PEER_INPUT_NAMES = dict(ONNX_INPUTS)


def peer_feed(names, inputs: Inputs, dtypes=None) -> dict[str, np.ndarray]:
    """``inputs`` (ours or already peer-named) keyed by the model's ``names``, as int64 (the
    peers' exports) or as ``dtypes[name]`` (our ONNX export takes int32)."""
    dtypes = dtypes or {}
    return {n: np.asarray(inputs[n] if n in inputs else inputs[PEER_INPUT_NAMES[n]],
                          dtypes.get(n, np.int64)) for n in names}


_ONNX_TYPES = {"tensor(int32)": np.int32, "tensor(int64)": np.int64}


class OnnxSession(Session):
    """ONNX Runtime CPU execution provider with ``threads`` intra-op threads."""

    def __init__(self, artifact: str, threads: int):
        import onnxruntime as ort

        from albert_tf.runtime.onnx import session_options
        self.session = ort.InferenceSession(artifact, session_options(threads),
                                            providers=["CPUExecutionProvider"])
        self.input_names = [i.name for i in self.session.get_inputs()]
        self.input_types = {i.name: _ONNX_TYPES.get(i.type, np.int64)
                            for i in self.session.get_inputs()}

    def prepare(self, inputs: Inputs) -> Callable[[], object]:
        feed = peer_feed(self.input_names, inputs, self.input_types)
        return lambda: self.session.run(None, feed)

    def outputs(self, inputs: Inputs) -> list[np.ndarray]:
        """The model's outputs (``last_hidden_state``, ``pooler_output``) for ``inputs``."""
        return [np.asarray(o) for o in self.prepare(inputs)()]


class OpenVinoSession(Session):
    """OpenVINO on CPU: an IR (``.xml`` + ``.bin``) compiled per static ``[batch, seq]``.

    `prepare` reshapes the model to the shape of its inputs and compiles it for that shape
    (static shapes, as our TFLite files are), with ``PERFORMANCE_HINT`` LATENCY and
    ``INFERENCE_NUM_THREADS`` ``threads``, and makes one infer request.

    ``precision`` (``INFERENCE_PRECISION_HINT``): ``"f32"`` is forced for the fp32 peer,
    because on CPUs with AVX-512 BF16 / AMX-BF16 OpenVINO's default is ``bf16``, which is
    not an fp32 peer; ``"bf16"`` is that default made explicit (`openvino_bf16`: a 16-bit
    float peer). ``None`` sets no hint, i.e. OpenVINO's default: the choice for the NNCF int8
    model (`openvino_int8`), whose quantized MatMuls run int8 and whose other operators
    (LayerNorm, Softmax, GELU, ...) run at the CPU's default precision: bf16 on AVX-512
    BF16 / AMX CPUs, f32 elsewhere. That is what an OpenVINO user deploying NNCF int8 gets.

    ``sparse_rate`` (``CPU_SPARSE_WEIGHTS_DECOMPRESSION_RATE``): int8 MatMul weights with a
    larger zero fraction are stored sparse and decompressed on the fly (the CPU plugin does
    so on CPUs with AMX); None: dense kernels.
    """

    def __init__(self, artifact: str, threads: int, precision: str | None = "f32",
                 sparse_rate: float | None = None):
        import openvino as ov

        from albert_tf.runtime.openvino import compile_config
        self.core = ov.Core()
        self.model = self.core.read_model(artifact)
        self.config = compile_config(threads, precision)
        if sparse_rate is not None:
            self.config["CPU_SPARSE_WEIGHTS_DECOMPRESSION_RATE"] = sparse_rate
        self.input_names = [i.get_any_name() for i in self.model.inputs]
        self.compiled = None

    def prepare(self, inputs: Inputs) -> Callable[[], object]:
        feed = peer_feed(self.input_names, inputs)
        self.model.reshape({name: list(value.shape) for name, value in feed.items()})
        compiled = self.core.compile_model(self.model, "CPU", self.config)
        request = compiled.create_infer_request()
        self.compiled = compiled

        def run(_compiled=compiled):   # holds this shape's compiled model with its request
            return request.infer(feed)
        return run

    def outputs(self, inputs: Inputs) -> list[np.ndarray]:
        """The model's outputs, in the model's output order, for ``inputs``."""
        results = self.prepare(inputs)()
        return [np.array(results[output]) for output in self.compiled.outputs]


# `openvino_int8_sparse`: any int8 weight with more zeros than this is kept sparse (the
# rate a sparse OpenVINO export records and OpenVinoClassifier sets).
SPARSE_WEIGHTS_RATE = OPENVINO_SPARSE_RATE

SESSIONS = {
    "tflite": lambda artifact, threads: TFLiteSession(artifact, threads),
    "tflite_builtin": lambda artifact, threads: TFLiteSession(artifact, threads, xnnpack=False),
    "tf": lambda artifact, threads: SavedModelSession(artifact, threads),
    "torch": lambda artifact, threads: TorchSession(artifact, threads),
    "torch_int8": lambda artifact, threads: TorchSession(artifact, threads, dynamic_int8=True),
    "onnx": lambda artifact, threads: OnnxSession(artifact, threads),
}
# The OpenVINO worker runtimes and the precision hint each sets (None: OpenVINO's default).
OPENVINO_PRECISIONS = {"openvino": "f32", "openvino_bf16": "bf16", "openvino_int8": None}
SESSIONS.update({name: (lambda artifact, threads, precision=precision:
                       OpenVinoSession(artifact, threads, precision))
                for name, precision in OPENVINO_PRECISIONS.items()})
SESSIONS["openvino_int8_sparse"] = lambda artifact, threads: OpenVinoSession(
    artifact, threads, None, sparse_rate=SPARSE_WEIGHTS_RATE)
