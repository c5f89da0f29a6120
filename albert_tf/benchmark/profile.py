"""Where a runtime's time goes: a sampling profile of one benchmark worker, by kernel.

    python -m albert_tf.benchmark.profile --runtime=tflite \
        --artifact=runs/benchmark/artifacts/albert_base/tflite_dynamic/b1_s128/model.tflite \
        --shape=1x128 --vocab_size=30000
    albert-tf-benchmark --quick --profile     # the same for every timed runtime

LiteRT runs the whole encoder as one XNNPACK delegate node, so the interpreter's own
op profiler sees a single op. The kernels XNNPACK picked are what matters (AMX, VNNI or
AVX2 int8 GEMMs; which fp32 GEMM; what is packed or quantized per call), and Linux
``perf`` sees them by name: the worker (`albert_tf.benchmark.worker`) runs under
``perf record`` for the timing loop, and each sampled symbol is put in a category
(`CATEGORIES`). Sampling uses the kernel's software clock when the VM exposes no
hardware counters. Needs ``perf`` (Debian/Ubuntu: ``apt-get install linux-perf``) and
``kernel.perf_event_paranoid`` <= 1 or root; without it, `PerfUnavailable` names the fix.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from albert_tf import cli

# (category, regular expression on the symbol), first match wins; order matters.
CATEGORIES: tuple[tuple[str, str], ...] = (
    # LiteRT's builtin sparse FULLY_CONNECTED (weights stored sparse, no XNNPACK): NEON
    # kernels, on x86 through the NEON_2_SSE header
    ("TFLite sparse FULLY_CONNECTED (1x4 / 1x16 blocks)", r"Sparse\w*Multiply|SparseWeight"),
    ("TFLite reference matmuls (builtin kernels, no XNNPACK)",
     r"^tflite::reference_ops::(BatchMatMul|FullyConnected)"),
    ("4-bit GEMM (XNNPACK QC4W)", r"^xnn_\w*qc4w\w*gemm"),
    ("int8 GEMM, AMX", r"^xnn_q\w*gemm\w*amx"),
    ("int8 GEMM, VNNI", r"^xnn_q\w*gemm\w*vnni"),
    ("int8 GEMM, AVX2/AVX-512 (no VNNI)", r"^xnn_q\w*gemm"),
    ("fp16/bf16 GEMM", r"^xnn_(f16|bf16)\w*gemm"),
    ("fp32 GEMM", r"^xnn_f32_(i)?gemm"),
    ("packing (weights / per-call operands)", r"pack"),
    ("activation (de)quantization", r"^xnn_f32_(qs8|qu8|qd8)|^xnn_(qs8|qu8)_f32_vcvt|"
                                    r"rminmax|quantiz"),
    ("GELU", r"gelu"),
    ("softmax", r"expminusmax|^xnn_f32_rmax|softmax"),
    ("layer norm (mean, variance)", r"vsqrdiff|^xnn_f32_rsum|rsqrt"),
    ("elementwise add/mul/sub/div", r"^xnn_f32_v(add|mul|sub|div|max|min)"),
    ("transpose / copy", r"transpose|memmove|memcpy|memset|copy"),
    ("ONNX Runtime / MLAS GEMM", r"Mlas\w*Gemm|MlasSgemm|MlasQgemm|MlasGemm"),
    ("threads: wait / sync / kernel", r"thread|pthreadpool|parallelize|futex|spin|"
                                      r"syscall|schedule|^\[k\]"),
    ("Python / interpreter overhead", r"^_Py|^Py|PyEval"),
    # Libraries shipped without symbols: their samples are named by library (`parse_report`).
    ("ONNX Runtime library, no symbols (MLAS GEMMs, all its kernels)",
     r"^libonnxruntime\S* \(no symbols\)"),
    ("OpenVINO plugin or JIT code, no symbols", r"^(libopenvino\S*|\[JIT\]\S*|perf-\d+\.map|"
                                                 r"\[unknown\]) \(no symbols\)"),
)
OTHER = "other"


class PerfUnavailable(RuntimeError):
    """``perf`` is missing or not allowed to sample; the message says how to fix it."""


@dataclasses.dataclass
class KernelProfile:
    """Shares of the sampled time (0..1) by category and by symbol."""

    samples: int
    by_category: dict[str, float]
    top_symbol: dict[str, str]          # category -> its most sampled symbol
    symbols: list[tuple[str, float]]    # the most sampled symbols, highest first

    def table(self, title: str = "") -> str:
        lines = ([f"### {title}", ""] if title else []) + [
            f"{self.samples} samples.", "",
            "| where | share | top kernel |", "|---|---:|---|"]
        for category, share in sorted(self.by_category.items(), key=lambda kv: -kv[1]):
            if share >= 0.005:
                lines.append(f"| {category} | {100 * share:.1f}% | "
                             f"`{self.top_symbol[category][:80]}` |")
        return "\n".join(lines)


def categorize(symbol: str) -> str:
    for category, pattern in CATEGORIES:
        if re.search(pattern, symbol):
            return category
    return OTHER


# "  12.34%  libfoo.so.1   [.] symbol" (perf report --sort dso,symbol).
_REPORT_LINE = re.compile(r"^\s*([\d.]+)%\s+(\S+(?: tid \d+)?)\s+(\[[.k]\])\s+(\S+)")


def _symbol_name(dso: str, kind: str, symbol: str) -> str:
    """A sample's name: its symbol; ``[k] symbol`` in the kernel; ``LIBRARY (no symbols)``
    for an unresolved address (a stripped library such as ONNX Runtime's, or JIT code)."""
    if kind != "[.]":
        return f"[k] {symbol}"
    if re.fullmatch(r"0x[0-9a-f]+", symbol):
        return f"{dso.split()[0]} (no symbols)"
    return symbol


def parse_report(text: str, samples: int) -> KernelProfile:
    """``perf report --no-children --sort dso,symbol -g none --stdio`` text -> a profile."""
    shares: dict[str, float] = {}
    for line in text.splitlines():
        match = _REPORT_LINE.match(line)
        if match:
            name = _symbol_name(match.group(2), match.group(3), match.group(4))
            shares[name] = shares.get(name, 0.0) + float(match.group(1)) / 100
    if not shares:
        raise PerfUnavailable("perf recorded no samples (is the worker too short, or "
                              "sampling denied?).")
    by_category: dict[str, float] = {}
    top: dict[str, tuple[float, str]] = {}
    for symbol, share in shares.items():
        category = categorize(symbol)
        by_category[category] = by_category.get(category, 0.0) + share
        if share > top.get(category, (-1.0, ""))[0]:
            top[category] = (share, symbol)
    symbols = sorted(shares.items(), key=lambda kv: -kv[1])
    return KernelProfile(samples, by_category, {k: v[1] for k, v in top.items()}, symbols[:25])


def check_perf() -> str:
    perf = shutil.which("perf")
    if perf is None:
        raise PerfUnavailable("`perf` is not installed: apt-get install linux-perf "
                              "(Debian/Ubuntu; Fedora: dnf install perf), then rerun.")
    probe = subprocess.run([perf, "record", "-q", "-o", os.devnull, "--", "true"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        raise PerfUnavailable("perf cannot sample here (" + probe.stderr.strip()[-200:]
                              + "); run as root or `sysctl kernel.perf_event_paranoid=1`.")
    return perf


def profile_command(command: list[str], frequency: int = 999,
                    control_flag: str | None = None) -> tuple[KernelProfile, str]:
    """Runs ``command`` under ``perf record``; returns its profile and its stdout.

    ``control_flag``: the command's flag taking a FIFO path; perf then starts with sampling
    off and the command turns it on (writes ``enable``) when its steady state begins."""
    perf = check_perf()
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "perf.data")
        control = []
        if control_flag:
            fifo = os.path.join(tmp, "control")
            os.mkfifo(fifo)
            control = ["-D", "-1", f"--control=fifo:{fifo}"]
            command = [*command, f"{control_flag}={fifo}"]
        run = subprocess.run([perf, "record", "-q", "-F", str(frequency), *control, "-o", data,
                              "--", *command], capture_output=True, text=True)
        if run.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed under perf:\n{run.stderr[-2000:]}")
        report = subprocess.run([perf, "report", "-i", data, "--no-children", "--sort",
                                 "dso,symbol", "-g", "none", "--stdio", "--percent-limit", "0"],
                                capture_output=True, text=True, check=True).stdout
        # "# Samples: 999  of event ..." below a thousand, "# Samples: 9K of event ..." above.
        count = re.search(r"Samples:\s*([\d.]+)([KM]?)\s+of event", report)
        samples = 0
        if count:
            samples = int(float(count.group(1)) * {"": 1, "K": 1e3, "M": 1e6}[count.group(2)])
        return parse_report(report, samples), run.stdout


def profile_worker(runtime: str, artifact: str, shape: tuple[int, int], vocab_size: int,
                   threads: int = 2, seconds: float = 5.0) -> tuple[KernelProfile, dict]:
    """Profiles `albert_tf.benchmark.worker` timing ``runtime`` at one shape; returns the
    profile and the worker's JSON (its latency under the profiler)."""
    command = [sys.executable, "-m", "albert_tf.benchmark.worker", f"--runtime={runtime}",
               f"--artifact={artifact}", f"--shapes={shape[0]}x{shape[1]}",
               f"--vocab_size={vocab_size}", f"--threads={threads}",
               f"--min_seconds={seconds}"]
    profile, stdout = profile_command(command, control_flag="--perf_control")
    return profile, json.loads(stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runtime", default="tflite")
    parser.add_argument("--artifact", required=True)
    parser.add_argument("--shape", default="1x128", help="BATCHxSEQ")
    parser.add_argument("--vocab_size", type=int, required=True)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args(argv)
    batch, seq = (int(v) for v in args.shape.lower().split("x"))
    artifact = args.artifact.format(batch=batch, seq=seq)
    if not os.path.exists(artifact):
        cli.error(f"--artifact={artifact} does not exist; pass a model file (or, for "
                  "tflite, a path with {batch} and {seq}) that albert-tf-benchmark or "
                  "albert-tf-export wrote.")
        return 2
    try:
        profile, timed = profile_worker(args.runtime, args.artifact, (batch, seq),
                                        args.vocab_size, args.threads, args.seconds)
    except PerfUnavailable as e:
        cli.error(e)
        return 2
    print(f"median {timed['results'][0]['median_ms']:.1f} ms under the profiler")
    print(profile.table(f"{args.runtime} {args.artifact} {batch}x{seq}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
