"""albert-tf: ALBERT in Keras 2 (tf_keras) for training, compression and deployment."""

from setuptools import find_packages, setup

INSTALL_REQUIRES = [
    "tensorflow==2.21.0",
    "tf-keras==2.21.0",
    "tensorflow-model-optimization==0.8.1",
    "tensorflow-text==2.21.1",
    "tensorflow-datasets==4.9.10",
    "keras-nlp==0.32.0",
    "keras-hub==0.32.0",
    "absl-py==1.4.0",
    "sentencepiece==0.2.3",
    "safetensors==0.8.0",
    "numpy==2.4.6",
    "pyyaml==6.0.4",
    "ai-edge-litert==2.3.0",
    "tensorflow-serving-api==2.21.0",
    "matplotlib==3.11.2",
]

EXTRAS_REQUIRE = {
    # Independent reference implementations for numerical parity tests.
    "test": [
        "pytest==9.2.0",
        "torch==2.13.0",
        "transformers==5.23.0",
        # Peers of the CPU benchmark (albert-tf-benchmark); tests check the ONNX path.
        "onnx==1.23.2",
        "onnxruntime==1.31.1",
        "onnxscript==0.7.2",
    ],
}

CONSOLE_SCRIPTS = [
    "albert-tf-info=albert_tf.bin.info:run",
    "albert-tf-run=albert_tf.bin.run:run",
    "albert-tf-benchmark=albert_tf.bin.benchmark:run",
    "albert-tf-export=albert_tf.bin.export:run",
    "albert-tf-saved-model-cli=albert_tf.export.saved_model_cli:main",
    "albert-tf-pretrain=albert_tf.bin.pretrain:run",
    "albert-tf-finetune=albert_tf.bin.finetune:run",
    "albert-tf-convert=albert_tf.bin.convert:run",
    "albert-tf-train-spm=albert_tf.bin.train_spm:run",
    "albert-tf-create-pretraining-data=albert_tf.bin.create_pretraining_data:run",
    "albert-tf-compress=albert_tf.bin.compress:run",
]

setup(
    name="albert-tf",
    version="0.1.0",
    description="ALBERT (A Lite BERT) in Keras 2 / TensorFlow: train, compress, export.",
    packages=find_packages(include=["albert_tf", "albert_tf.*"]),
    python_requires=">=3.10",
    install_requires=INSTALL_REQUIRES,
    extras_require=EXTRAS_REQUIRE,
    entry_points={"console_scripts": CONSOLE_SCRIPTS},
)
