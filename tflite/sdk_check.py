"""Runs a ``.tflite`` export through the mobile SDKs' own Python builds, as an app would.

    python -m albert_tflite.sdk_check --model=edge/sst2/model.tflite \\
        --sdk=mediapipe --task=classify --texts=texts.json > answers.json

The SDKs (TFLite Task Library from tflite-support 0.4.4, MediaPipe Tasks) read everything
from the metadata embedded in the file: tokenizer, tensor roles, labels. This script imports
neither TensorFlow nor albert_tf, because tflite-support needs ``protobuf<4``, which
TensorFlow cannot share: it runs in the SDK environment (``make sdk`` builds ``.venv-sdk``)
and prints JSON, one answer per input, in input order (each with ``ms``, the SDK call's
wall time: tokenization included):

==========  =====================  ===================================  =====================
task        SDK (``--sdk``)         input (``--texts``: a JSON list)     answer
==========  =====================  ===================================  =====================
classify    mediapipe              text                                 ``{"label", "scores"}``
            tflite_support                                              (BertNLClassifier)
answer      tflite_support         ``[question, context]``              ``{"answer"}``
                                                                        (BertQuestionAnswerer)
embed       mediapipe              text                                 ``{"embedding"}``
==========  =====================  ===================================  =====================

An SDK that cannot open the model prints one line (the SDK's own message) and exits 3.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

SDK_PYTHON_ENV = "ALBERT_TF_SDK_PYTHON"


def default_python(checkout: str) -> str:
    """The SDK environment's interpreter: ``$ALBERT_TF_SDK_PYTHON``, else
    ``<checkout>/.venv-sdk/bin/python`` (what ``make sdk`` builds in a checkout)."""
    import os
    return os.environ.get(SDK_PYTHON_ENV) or os.path.join(checkout, ".venv-sdk", "bin", "python")


SDKS = {"classify": ("mediapipe", "tflite_support"), "answer": ("tflite_support",),
        "embed": ("mediapipe",)}


def _scores(result) -> dict[str, float]:
    """label -> score of a classifier result (both SDKs' result types have this shape)."""
    return {c.category_name: float(c.score) for c in result.classifications[0].categories}


def _mediapipe_classifier(model: str):
    from mediapipe.tasks.python import text
    from mediapipe.tasks.python.core.base_options import BaseOptions
    classifier = text.TextClassifier.create_from_options(text.TextClassifierOptions(
        base_options=BaseOptions(model_asset_path=model)))
    return lambda item: _scores(classifier.classify(item))


def _task_library_classifier(model: str):
    from tflite_support.task import text
    classifier = text.BertNLClassifier.create_from_file(model)
    return lambda item: _scores(classifier.classify(item))


def _task_library_answerer(model: str):
    from tflite_support.task import text
    answerer = text.BertQuestionAnswerer.create_from_file(model)

    def run(item):
        question, context = item
        answers = answerer.answer(context, question).answers
        return {"answer": answers[0].text if answers else ""}
    return run


def _mediapipe_embedder(model: str):
    from mediapipe.tasks.python import text
    from mediapipe.tasks.python.core.base_options import BaseOptions
    embedder = text.TextEmbedder.create_from_options(text.TextEmbedderOptions(
        base_options=BaseOptions(model_asset_path=model)))

    def run(item):
        vector = embedder.embed(item).embeddings[0].embedding
        return {"embedding": [float(x) for x in vector]}
    return run


RUNNERS = {("classify", "mediapipe"): _mediapipe_classifier,
           ("classify", "tflite_support"): _task_library_classifier,
           ("answer", "tflite_support"): _task_library_answerer,
           ("embed", "mediapipe"): _mediapipe_embedder}


def run(model: str, task: str, sdk: str, items: list) -> list[dict]:
    """The SDK's answers for ``items`` (see the module docstring)."""
    run_one = RUNNERS[(task, sdk)](model)
    answers = []
    for item in items:
        start = time.perf_counter()
        answer = run_one(item)
        ms = (time.perf_counter() - start) * 1e3
        if task == "classify":
            answer = {"label": max(answer, key=answer.get), "scores": answer}
        answers.append(dict(answer, ms=ms))
    return answers


def call(python: str, model: str, task: str, sdk: str, items: list,
         timeout: float = 1800) -> list[dict]:
    """Runs this script under ``python`` (the SDK environment's interpreter) and returns its
    answers; a RuntimeError with the SDK's message when it cannot run the model."""
    import os
    import subprocess
    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=".json", encoding="utf-8",
                                     delete=False) as f:
        json.dump(items, f)
    try:
        proc = subprocess.run([python, os.path.abspath(__file__), f"--model={model}",
                               f"--task={task}", f"--sdk={sdk}", f"--texts={f.name}"],
                              capture_output=True, text=True, timeout=timeout)
    finally:
        os.unlink(f.name)
    if proc.returncode != 0:
        lines = [x for x in proc.stderr.splitlines() if x.startswith("sdk_check:")]
        raise RuntimeError(lines[-1] if lines else proc.stderr[-2000:])
    return json.loads(proc.stdout.splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="the .tflite file")
    parser.add_argument("--task", required=True, choices=sorted(SDKS))
    parser.add_argument("--sdk", required=True, choices=["mediapipe", "tflite_support"])
    parser.add_argument("--texts", required=True, help="JSON list of inputs")
    args = parser.parse_args(argv)
    if args.sdk not in SDKS[args.task]:
        print(f"sdk_check: --task={args.task} runs on {SDKS[args.task]}, not {args.sdk}.",
              file=sys.stderr)
        return 2
    with open(args.texts, encoding="utf-8") as f:
        items = json.load(f)
    try:
        answers = run(args.model, args.task, args.sdk, items)
    except (RuntimeError, ValueError) as e:
        print(f"sdk_check: {args.sdk} cannot run {args.model}: "
              f"{' '.join(str(e).split())}", file=sys.stderr)
        return 3
    json.dump(answers, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
