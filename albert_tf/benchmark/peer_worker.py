"""Builds one peer's artifact in this (fresh) process, which never imports TensorFlow.

    python -m albert_tf.benchmark.peer_worker --runtime=onnx_opt_int8 --model_dir=M \
        --work_dir=W --shapes=1x128 [--data_dir=D] [--no-do_lower_case]

`albert_tf.benchmark.suite.build_peer` runs it for each peer (`albert_tf.benchmark.targets`) after
exporting the model directory's Hugging Face layout (``W/hf``) itself; here
the target's builder does the rest: the PyTorch ONNX export, ONNX Runtime's optimizer
and quantizer, OpenVINO's conversion and NNCF. Apart from the driver, because

* a crash in those libraries (a segmentation fault, an abort, the out-of-memory killer)
  then costs that peer's rows, not the whole run;
* PyTorch and TensorFlow must not share a process: PyTorch's CUDA wheels (what pip installs
  on Linux) bring Triton, whose bundled LLVM segfaults when loaded into a process that
  already holds TensorFlow's (docs/setup.md).

Prints the builder's progress lines as they come, then one JSON object: ``runtime``,
``worker_runtime`` and ``artifact`` (what `albert_tf.benchmark.worker` times) and
``imported_tensorflow``. When a package is not installed, the worker's missing-package JSON
and exit status (`albert_tf.benchmark.worker.MISSING_PACKAGE_EXIT`).
"""

from __future__ import annotations

import argparse
import json
import sys

from albert_tf.benchmark import targets
from albert_tf.benchmark.artifacts import ArtifactBuilder
from albert_tf.benchmark.worker import report_missing_package


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runtime", required=True, choices=[t.name for t in targets.every_target() if t.peer])
    parser.add_argument("--model_dir", required=True, help="our model directory")
    parser.add_argument("--work_dir", required=True, help="the model's artifact directory "
                        "(holding hf/, its Hugging Face layout)")
    parser.add_argument("--shapes", required=True, help="comma list of BATCHxSEQ")
    parser.add_argument("--data_dir", default=None, help="SST-2 train text (NNCF int8)")
    parser.add_argument("--do_lower_case", action=argparse.BooleanOptionalAction,
                        default=True, help="the tokenizer's casing (NNCF calibration text)")
    parser.add_argument("--fusions_shown", action="store_true",
                        help="the onnx_opt fusion counts were printed already")
    args = parser.parse_args(argv)
    shapes = [tuple(int(v) for v in shape.lower().split("x")) for shape in args.shapes.split(",")]
    builder = ArtifactBuilder(args.model_dir, args.work_dir, args.data_dir,
                              echo=lambda line: print(line, flush=True),
                              do_lower_case=args.do_lower_case)
    builder.fusions_shown = args.fusions_shown
    try:
        worker_runtime, artifact = builder.artifact(args.runtime, shapes)
    except ModuleNotFoundError as e:
        return report_missing_package(args.runtime, e)
    json.dump({"runtime": args.runtime, "worker_runtime": worker_runtime, "artifact": artifact,
               "imported_tensorflow": "tensorflow" in sys.modules}, sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
