"""albert-tf: ALBERT in Keras 2 (tf_keras) for training, compression and deployment.

The repository keeps three top-level folders; the wheel ships all of them:

- ``albert_tf/``          -> the ``albert_tf`` package
- ``official_configs/``   -> ``albert_tf.official_configs`` (model JSONs, experiment
  YAMLs, vocabularies; read with `importlib.resources`, see `albert_tf.resources`)
- ``tflite/``             -> ``albert_tflite`` (the edge tools: runner, evaluator,
  benchmark, metadata; not ``tflite``, an unrelated PyPI project)

Dependencies are declared as compatible ranges, as a library should; the exact
versions that CI and ``make`` install are in ``constraints.txt`` (``pip install -c``).
"""

import os
import re

from setuptools import find_packages, setup

# The version is albert_tf/version.py's (read, not imported: it needs no dependency here).
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "albert_tf", "version.py"),
          encoding="utf-8") as _f:
    VERSION = re.search(r'^__version__ = "([^"]+)"', _f.read(), re.M).group(1)

INSTALL_REQUIRES = [
    "tensorflow>=2.21,<2.22",
    "tf-keras>=2.21,<2.22",            # Keras 2: TF-MOT needs it
    "tensorflow-model-optimization>=0.8.1,<0.9",
    "tensorflow-text>=2.21,<2.22",
    "tensorflow-datasets>=4.9.10,<5",
    "keras-hub>=0.32,<0.33",            # interop only (Keras 3): read and compare presets
    "absl-py>=1.4,<3",
    "sentencepiece>=0.2.0,<0.3",
    "tokenizers>=0.23,<0.24",          # WordPiece vocabulary training (albert-tf-train-vocab)
    "safetensors>=0.4,<1",
    "numpy>=1.26,<3",
    "pyyaml>=6.0,<7",
    "ai-edge-litert>=2.3,<3",
    "flatbuffers>=25.9,<27",           # the mobile SDK metadata in TFLite exports
    "tensorflow-serving-api>=2.21,<2.22",
    "matplotlib>=3.8,<4",
]

OPENVINO = ["openvino>=2026.4,<2027", "openvino-tokenizers>=2026.4,<2027", "nncf>=3.4,<4"]
ONNX = ["onnx>=1.23,<2", "onnxruntime>=1.31,<2"]
# AI Edge Quantizer: 4-bit weights for our TFLite export (albert-tf-benchmark's tflite_q4,
# XNNPACK's QD8 x QC4W kernels). 0.10 requires ai-edge-litert==2.3.0 exactly: a LiteRT bump
# moves it too.
QUANTIZER = ["ai-edge-quantizer>=0.10,<0.11"]
# albert-tf-create-pretraining-data --runner=beam (albert_tf/data/pretraining_beam.py).
# Beam needs protobuf<7 (TensorFlow takes >=6.31.1,<8: constraints.txt pins a 6.33.x), and
# sentencepiece 0.2.3's generated model proto refuses a protobuf runtime older than 7.36
# (`pad_sentencepiece`, vocabulary training): with Beam, sentencepiece stays below 0.2.3.
BEAM = ["apache-beam>=2.70,<3", "sentencepiece>=0.2.0,<0.2.3"]
# The peers of the CPU benchmark (albert-tf-benchmark: PyTorch, ONNX Runtime and OpenVINO on
# the Hugging Face graph of the same weights), also the tests' reference implementations.
PEERS = [
    # Linux wheels are CUDA builds with Triton, which segfaults when loaded after TensorFlow:
    # the benchmark never loads a peer beside it (child processes; docs/setup.md), no cap.
    "torch>=2.13,<3",
    "transformers>=5.23,<6",
    *ONNX,                              # onnx*, and the ONNX export the peers start from
    "onnxscript>=0.7,<1",
    "sympy>=1.13,<2",                   # ONNX Runtime's transformer optimizer (onnx_opt*)
    *OPENVINO,                          # openvino*
]

EXTRAS_REQUIRE = {
    "test": [
        "pytest>=9.0,<10",
        "pytest-xdist>=3.8,<4",         # make test runs the suite on 2 workers
        "hypothesis>=6.170,<7",         # property-based fuzzing of the entry points
        # Independent reference implementations for numerical parity tests, and the
        # benchmark's peers; tests check the ONNX and OpenVINO exports too.
        *PEERS,
        *BEAM,                          # tests/test_data_beam.py
        *QUANTIZER,                     # tests/test_benchmark_q4_tflite.py
    ],
    # albert-tf-benchmark's peers (pip install 'albert-tf[peers]'): without them it times
    # only our artifacts and names each skipped peer.
    "peers": PEERS,
    # The OpenVINO export (albert-tf-export --format=openvino): the runtime, its tokenizer
    # ops (raw text in) and NNCF post-training int8.
    "openvino": OPENVINO,
    # The ONNX export (albert-tf-export --format=onnx) and its runner (OnnxClassifier).
    "onnx": ONNX,
    # 4-bit TFLite weights (albert-tf-benchmark --runtimes=tflite_q4).
    "quantizer": QUANTIZER,
    # The Apache Beam runner of albert-tf-create-pretraining-data (--runner=beam).
    "beam": BEAM,
}

CONSOLE_SCRIPTS = [
    "albert-tf-info=albert_tf.bin.info:run",
    "albert-tf-run=albert_tf.bin.run:run",
    "albert-tf-benchmark=albert_tf.bin.benchmark:run",
    "albert-tf-export=albert_tf.bin.export:run",
    "albert-tf-saved-model-cli=albert_tf.bin.saved_model_cli:main",
    "albert-tf-pretrain=albert_tf.bin.pretrain:run",
    "albert-tf-finetune=albert_tf.bin.finetune:run",
    "albert-tf-convert=albert_tf.bin.convert:run",
    "albert-tf-train-vocab=albert_tf.bin.train_vocab:run",
    "albert-tf-train-spm=albert_tf.bin.train_spm:run",   # = train-vocab --type=sentencepiece
    "albert-tf-create-pretraining-data=albert_tf.bin.create_pretraining_data:run",
    "albert-tf-compress=albert_tf.bin.compress:run",
    # The edge tools (the repository's tflite/ folder).
    "albert-tflite-run=albert_tflite.runner:main",
    "albert-tflite-evaluate=albert_tflite.evaluate:main",
    "albert-tflite-benchmark=albert_tflite.benchmark:main",
    "albert-tflite-metadata=albert_tflite.metadata:main",
]

CONFIGS_PACKAGE = "albert_tf.official_configs"

setup(
    name="albert-tf",
    version=VERSION,
    description="ALBERT (A Lite BERT) in Keras 2 / TensorFlow: train, compress, export.",
    packages=find_packages(include=["albert_tf", "albert_tf.*"]) + [
        CONFIGS_PACKAGE, "albert_tflite"],
    package_dir={CONFIGS_PACKAGE: "official_configs", "albert_tflite": "tflite"},
    package_data={CONFIGS_PACKAGE: ["models/*.json", "experiments/*.yaml", "vocab/*"],
                  "albert_tflite": ["README.md"]},
    python_requires=">=3.10",
    install_requires=INSTALL_REQUIRES,
    extras_require=EXTRAS_REQUIRE,
    entry_points={"console_scripts": CONSOLE_SCRIPTS},
)
