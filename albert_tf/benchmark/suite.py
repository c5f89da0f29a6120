"""The benchmark driver: build every artifact once, time each in its own process, report.

Per model (official configs with random weights, or given model directories):

* ``tf``: our SavedModel's ``encode`` signature (float32);
* ``tflite_none`` / ``tflite_dynamic`` / ``tflite_int8``: our TFLite export, one file
  per static ``[batch, seq]``, on ``ai_edge_litert`` with XNNPACK;
* ``torch`` / ``torch_int8``: Hugging Face ``transformers`` on the same weights
  (exported by `albert_tf.interop.converter.export_hf`), float32 and dynamic int8;
* ``onnx`` / ``onnx_int8``: ONNX Runtime on the same weights, float32 and dynamic int8.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Callable

from albert_tf.benchmark.tables import Measurement

RUNTIMES = ("tf", "tflite_none", "tflite_dynamic", "tflite_int8", "torch", "torch_int8",
            "onnx", "onnx_int8")
INT8_RUNTIMES = ("tflite_dynamic", "tflite_int8", "torch_int8", "onnx_int8")



def _size_mib(path: str) -> float:
    if os.path.isfile(path):
        return os.path.getsize(path) / 2**20
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path)
               for f in files) / 2**20


def random_model_dir(name: str, work_dir: str, seed: int = 0) -> str:
    """An encoder with seeded random weights, saved as a model directory with a vocabulary."""
    import albert_tf
    from albert_tf.backend import keras
    from albert_tf import resources
    path = os.path.join(work_dir, name, "model")
    if os.path.exists(os.path.join(path, "config.json")):
        return path
    keras.utils.set_random_seed(seed)
    config = albert_tf.load_config(name)
    vocab = resources.resolve(resources.DEFAULT_VOCAB)
    albert_tf.save_model_dir(albert_tf.build_encoder(config), path, vocab_file=vocab)
    return path


class ArtifactBuilder:
    """Builds (once, cached on disk) the artifact each runtime needs for one model."""

    def __init__(self, model_dir: str, work_dir: str, data_dir: str,
                 echo: Callable[[str], None] = print):
        self.model_dir, self.work_dir, self.data_dir, self.echo = \
            model_dir, work_dir, data_dir, echo

    def path(self, *parts: str) -> str:
        return os.path.join(self.work_dir, *parts)

    def hf_dir(self) -> str:
        from albert_tf.interop.converter import export_hf
        out = self.path("hf")
        if not os.path.exists(out):
            self.echo(f"  exporting {out}")
            export_hf(self.model_dir, out)
        return out

    def onnx(self, int8: bool) -> str:
        from albert_tf.benchmark.peers import export_onnx, quantize_onnx_dynamic
        float_path = self.path("model.onnx")
        if not os.path.exists(float_path):
            self.echo(f"  exporting {float_path}")
            export_onnx(self.hf_dir(), float_path)
        if not int8:
            return float_path
        int8_path = self.path("model_int8.onnx")
        if not os.path.exists(int8_path):
            quantize_onnx_dynamic(float_path, int8_path)
        return int8_path

    def saved_model(self) -> str:
        from albert_tf.export.saved_model import export_saved_model
        out = self.path("saved_model", "encoder", "1")
        if not os.path.exists(out):
            self.echo(f"  exporting {out}")
            export_saved_model(self.model_dir, self.path("saved_model"), name="encoder",
                               version=1)
        return out

    def _export_tflite(self, out: str, quantization: str, seq_lengths: list[int],
                       batch: int) -> None:
        from albert_tf.export.tflite import export_tflite
        if os.path.exists(out):
            return
        self.echo(f"  converting {out}")
        # Calibrate on real text: SST-2 *train* sentences, enough for at least two
        # batches per signature (the calibration texts are spread over the buckets).
        export_tflite(self.model_dir, out, quantization, seq_lengths=seq_lengths,
                      batch_size=batch, num_calibration=max(64, 2 * batch * len(seq_lengths)),
                      calibration_file=os.path.join(self.data_dir, "glue", "SST-2", "train.tsv"))

    def tflite(self, quantization: str, shapes: list[tuple[int, int]]) -> str:
        """A path template ``.../b{batch}_s{seq}/model.tflite``, one export per shape."""
        template = self.path(f"tflite_{quantization}", "b{batch}_s{seq}")
        for batch, seq in shapes:
            self._export_tflite(template.format(batch=batch, seq=seq), quantization, [seq], batch)
        return os.path.join(template, "model.tflite")

    def tflite_buckets(self, quantization: str, batch: int, seq_lengths: list[int]) -> str:
        """One export directory with a static ``[batch, seq]`` signature ``seq_<n>`` per
        sequence-length bucket (a single bucket is named ``serving_default``)."""
        seq_lengths = sorted(set(seq_lengths))
        out = self.path(f"tflite_{quantization}",
                        f"b{batch}_buckets_" + "-".join(str(s) for s in seq_lengths))
        self._export_tflite(out, quantization, seq_lengths, batch)
        return out

    def artifact(self, runtime: str, shapes: list[tuple[int, int]]) -> tuple[str, str]:
        """``(worker runtime, artifact path or template)`` for ``runtime``."""
        if runtime == "tf":
            return "tf", self.saved_model()
        if runtime.startswith("tflite_"):
            return "tflite", self.tflite(runtime[len("tflite_"):], shapes)
        if runtime in ("torch", "torch_int8"):
            return runtime, self.hf_dir()
        if runtime in ("onnx", "onnx_int8"):
            return "onnx", self.onnx(int8=runtime == "onnx_int8")
        raise ValueError(f"unknown runtime {runtime!r}; use one of {RUNTIMES}.")


def time_in_worker(runtime: str, artifact: str, shapes: list[tuple[int, int]], vocab_size: int,
                   threads: int, min_seconds: float) -> dict:
    """Runs `albert_tf.benchmark.worker` in a fresh process; returns its JSON."""
    command = [sys.executable, "-m", "albert_tf.benchmark.worker", f"--runtime={runtime}",
               f"--artifact={artifact}", "--shapes=" + ",".join(f"{b}x{s}" for b, s in shapes),
               f"--vocab_size={vocab_size}", f"--threads={threads}",
               f"--min_seconds={min_seconds}"]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{runtime} on {artifact} failed:\n{result.stderr[-2000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def file_size(runtime: str, artifact: str, batch: int, seq: int) -> float:
    if runtime.startswith("tflite_"):
        return _size_mib(artifact.format(batch=batch, seq=seq))
    if runtime in ("torch", "torch_int8"):
        return _size_mib(os.path.join(artifact, "model.safetensors"))
    return _size_mib(artifact)


def benchmark_model(name: str, model_dir: str, runtimes, shapes, work_dir: str, data_dir: str,
                    threads: int, min_seconds: float, cpu, echo=print) -> list[Measurement]:
    import albert_tf
    from albert_tf.benchmark.flops import flops_per_sequence
    from albert_tf.checkpoints import load_config_from_dir
    config = load_config_from_dir(model_dir)
    builder = ArtifactBuilder(model_dir, os.path.join(work_dir, name), data_dir, echo)
    rows = []
    for runtime in runtimes:
        if runtime.startswith("torch") or runtime.startswith("onnx"):
            if config.sharing != "all" and not config.is_bert:
                echo(f"  {name}: {runtime} skipped (no Hugging Face layout for "
                     f"sharing={config.sharing})")
                continue
        worker_runtime, artifact = builder.artifact(runtime, shapes)
        echo(f"  timing {name} {runtime} {shapes}")
        timed = time_in_worker(worker_runtime, artifact, shapes, config.vocab_size, threads,
                               min_seconds)
        for r in timed["results"]:
            gflops = flops_per_sequence(config, r["seq"]) / 1e9
            peak = cpu.peak_int8_gops(threads) if runtime in INT8_RUNTIMES else \
                cpu.peak_fp32_gflops(threads)
            achieved = gflops * r["batch"] / (r["median_ms"] / 1e3)
            rows.append(Measurement(
                model=name, runtime=runtime, batch=r["batch"], seq=r["seq"],
                median_ms=r["median_ms"], p90_ms=r["p90_ms"],
                sequences_per_s=r["sequences_per_s"], peak_rss_mib=timed["peak_rss_mib"],
                file_mib=file_size(runtime, artifact, r["batch"], r["seq"]),
                gflops_per_sequence=gflops, peak_fraction=achieved / peak))
            echo(f"    {name:16s} {runtime:15s} {r['batch']:3d} x {r['seq']:4d}: "
                 f"median {r['median_ms']:8.1f} ms, p90 {r['p90_ms']:8.1f} ms, "
                 f"{100 * achieved / peak:5.1f}% of peak")
    del albert_tf
    return rows
