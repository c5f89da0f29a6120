"""What this CPU can do at most: instruction set, measured clock, peak FLOP/s and int8 ops/s.

The clock is *measured*, not read from a label: a C loop of dependent 64-bit ``imul``
(3 cycles latency on every x86 core since Core 2 and Zen 1) runs for a known number of
iterations, and cycles / thread CPU seconds (immune to preemption on a busy machine)
gives the frequency the core really runs at under load. (Dependent ``add $1`` is not
enough: Intel cores since Golden Cove fold immediate adds in the renamer and retire
several per cycle, which read as an 18 GHz clock.) ``/proc/cpuinfo`` MHz is the fallback
when no C compiler is present.

Peak per core and cycle (`peak_model`), for the instructions the kernels use:

* fp32 FMA: AVX2 + FMA, two 256-bit FMA pipes -> 2 x 8 x 2 = 32 FLOP (Zen 2/3, Intel
  client and Skylake-era servers); AVX-512 on Zen 4 runs as two 256-bit pipes -> 32;
  Intel server cores and Zen 5 with two 512-bit FMA pipes -> 64.
* int8 vector, AVX2 without VNNI: ``vpmaddubsw`` (32 u8 x s8 products summed in pairs
  to int16) then ``vpmaddwd`` (to int32) on the two multiply pipes -> 32 MAC = 64 ops.
* int8 vector with VNNI (``vpdpbusd``, 4 MACs per int32 lane in one instruction):
  AVX-VNNI 256-bit -> 2 x 32 MAC = 128 ops; AVX-512 VNNI on Zen 4 -> 128; on Intel server
  cores and Zen 5 -> 2 x 64 MAC = 256 ops.
* int8 matrix, AMX-INT8 (``tdpbusd`` on the tile unit, Sapphire Rapids and later):
  1024 MAC = 2048 ops; AMX-BF16 1024 FLOP. When the CPU has AMX, the int8 peak is the
  AMX one: what the machine can do, not what a vector kernel can.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
import tempfile
import time

_CLOCK_LOOP_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
int main(int argc, char** argv) {
  long n = atol(argv[1]);
  volatile long sink;
  long x = 1;
  struct timespec a, b;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
  for (long i = 0; i < n; ++i) {
    /* 8 dependent multiplies (3 cycles each) per iteration: the loop overhead hides
       in their latency. */
    __asm__ volatile("imul %0, %0\n\timul %0, %0\n\timul %0, %0\n\timul %0, %0\n\t"
                     "imul %0, %0\n\timul %0, %0\n\timul %0, %0\n\timul %0, %0" : "+r"(x));
  }
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
  sink = x;
  printf("%.6f\n", (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) * 1e-9);
  return 0;
}
"""


IMUL_LATENCY_CYCLES = 3


@dataclasses.dataclass(frozen=True)
class PeakModel:
    """Per core and cycle: what the best instructions of an ISA can do (see the module doc)."""

    isa: str                    # e.g. "AVX2+FMA, AVX-512 VNNI, AMX-INT8"
    fp32_flop_per_cycle: int
    int8_vector_ops_per_cycle: int
    int8_vector_instruction: str
    int8_amx_ops_per_cycle: int = 0   # 0: no AMX-INT8

    @property
    def int8_ops_per_cycle(self) -> int:
        return max(self.int8_vector_ops_per_cycle, self.int8_amx_ops_per_cycle)


_ISA_NAMES = (("avx2", "AVX2"), ("fma", "FMA"), ("avx512f", "AVX-512F"), ("avx512bw", "BW"),
              ("avx512vl", "VL"), ("avx_vnni", "AVX-VNNI"), ("avx512_vnni", "AVX-512 VNNI"),
              ("avx512_bf16", "AVX-512 BF16"), ("avx512_fp16", "AVX-512 FP16"),
              ("amx_int8", "AMX-INT8"), ("amx_bf16", "AMX-BF16"))


def peak_model(flags: tuple[str, ...] | set[str], vendor: str = "", family: int = 0) -> PeakModel:
    """The peak per core and cycle for a CPU's /proc/cpuinfo flags, vendor and family."""
    flags = set(flags)
    amd = vendor == "AuthenticAMD"
    wide_fma = "avx512f" in flags and (not amd or family >= 26)   # 512-bit FMA pipes
    if wide_fma:
        fp32 = 64
    elif "fma" in flags or "avx2" in flags:
        fp32 = 32
    else:
        fp32 = 16
    if "avx512_vnni" in flags:
        int8, instruction = (256 if wide_fma else 128), "vpdpbusd zmm (AVX-512 VNNI)"
    elif "avx_vnni" in flags:
        int8, instruction = 128, "vpdpbusd ymm (AVX-VNNI)"
    elif "avx2" in flags:
        int8, instruction = 64, "vpmaddubsw + vpmaddwd ymm (AVX2, no VNNI)"
    else:
        int8, instruction = 2 * fp32, "pmaddubsw xmm (SSSE3)"
    amx = 2048 if "amx_int8" in flags else 0
    isa = ", ".join(name for flag, name in _ISA_NAMES if flag in flags) or "no AVX2"
    return PeakModel(isa.replace("AVX-512F, BW, VL", "AVX-512F/BW/VL"), fp32, int8,
                     instruction, amx)


@dataclasses.dataclass(frozen=True)
class CpuInfo:
    model_name: str
    cores: int
    flags: tuple[str, ...]
    clock_ghz: float
    clock_source: str
    peaks: PeakModel
    vendor: str = ""
    family: int = 0
    model: int = 0

    @property
    def fp32_flop_per_cycle(self) -> int:
        return self.peaks.fp32_flop_per_cycle

    @property
    def int8_ops_per_cycle(self) -> int:
        return self.peaks.int8_ops_per_cycle

    def peak_fp32_gflops(self, threads: int) -> float:
        return self.clock_ghz * self.fp32_flop_per_cycle * min(threads, self.cores)

    def peak_int8_gops(self, threads: int) -> float:
        """The machine's int8 peak: AMX where it has AMX-INT8, else the vector ISA's."""
        return self.clock_ghz * self.int8_ops_per_cycle * min(threads, self.cores)

    def peak_int8_vector_gops(self, threads: int) -> float:
        """The vector (AVX2 / VNNI) int8 peak: what a kernel without AMX can reach."""
        return (self.clock_ghz * self.peaks.int8_vector_ops_per_cycle
                * min(threads, self.cores))

    def summary(self) -> str:
        """One line naming the CPU, its cores and ISA, without the measured clock and
        peaks: what a benchmark prints beside its figures, e.g.
        ``AMD EPYC 9B45 (AuthenticAMD family 26 model 2), 2 cores; ISA: AVX2+FMA, ...``."""
        cpuid = f" ({self.vendor} family {self.family} model {self.model})" if self.vendor else ""
        return f"{self.model_name}{cpuid}, {self.cores} cores; ISA: {self.peaks.isa}"

    def describe(self) -> str:
        p = self.peaks
        amx = (f", {p.int8_amx_ops_per_cycle} AMX (tdpbusd)" if p.int8_amx_ops_per_cycle
               else "")
        cpuid = f" ({self.vendor} family {self.family} model {self.model})" if self.vendor else ""
        return (f"{self.model_name}{cpuid}, {self.cores} cores, {self.clock_ghz:.2f} GHz "
                f"({self.clock_source}); ISA: {p.isa}; peak/core: {p.fp32_flop_per_cycle} fp32 "
                f"FLOP/cycle, int8 ops/cycle {p.int8_vector_ops_per_cycle} vector "
                f"({p.int8_vector_instruction}){amx}")


def _cpuinfo_text() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            return f.read()
    except OSError:
        return ""


def measure_clock_ghz(iterations: int = 70_000_000) -> tuple[float, str]:
    """Core clock from timing dependent multiplies; falls back to /proc/cpuinfo."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler:
        with tempfile.TemporaryDirectory() as tmp:
            src, exe = os.path.join(tmp, "clock.c"), os.path.join(tmp, "clock")
            with open(src, "w") as f:
                f.write(_CLOCK_LOOP_C)
            if subprocess.run([compiler, "-O1", src, "-o", exe],
                              capture_output=True).returncode == 0:
                best = min(float(subprocess.run([exe, str(iterations)], capture_output=True,
                                                text=True, check=True).stdout)
                           for _ in range(3))
                return (IMUL_LATENCY_CYCLES * 8 * iterations / best / 1e9,
                        "measured: dependent-imul loop, thread CPU time")
    match = re.search(r"cpu MHz\s*:\s*([\d.]+)", _cpuinfo_text())
    return (float(match.group(1)) / 1000 if match else float("nan")), "/proc/cpuinfo"


def _field(text: str, name: str) -> str:
    match = re.search(rf"^{name}\s*:\s*(.*)$", text, re.MULTILINE)
    return match.group(1).strip() if match else ""


def cpu_info(measure_clock: bool = True) -> CpuInfo:
    text = _cpuinfo_text()
    flags = tuple(sorted(set(_field(text, "flags").split())))
    vendor = _field(text, "vendor_id")
    family = int(_field(text, "cpu family") or 0)
    model = int(_field(text, "model") or 0)
    clock, source = measure_clock_ghz() if measure_clock else (float("nan"), "not measured")
    return CpuInfo(_field(text, "model name") or "unknown", os.cpu_count() or 1, flags, clock,
                   source, peak_model(flags, vendor, family), vendor, family, model)


if __name__ == "__main__":
    start = time.time()
    print(cpu_info().describe(), f"[{time.time() - start:.1f}s]")
