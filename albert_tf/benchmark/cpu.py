"""What this CPU can do at most: instruction set, measured clock, peak FLOP/s.

The clock is *measured*, not read from a label: a C loop of dependent integer adds
(one cycle each on every x86 core since the Pentium Pro) runs for a known number of
iterations, and cycles / thread CPU seconds (immune to preemption on a busy machine)
gives the frequency the core really runs at under
load. ``/proc/cpuinfo`` MHz is the fallback when no C compiler is present.

Peak per core and cycle, for the kernels our runtimes use:

* fp32 FMA: AVX-512 on Zen 4 runs as two 256-bit FMA pipes -> 2 x 8 x 2 = 32 FLOP;
  AVX-512 on Intel server cores with two 512-bit FMA units -> 64; AVX2 + FMA -> 32.
* int8 dot products (VNNI ``vpdpbusd``): 4 x the fp32 rate -> 128 ops on Zen 4.
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
  long x = 0;
  struct timespec a, b;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
  for (long i = 0; i < n; ++i) {
    /* 8 dependent adds per iteration: the loop overhead hides in their latency. */
    __asm__ volatile("add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
                     "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0" : "+r"(x));
  }
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
  sink = x;
  printf("%.6f\n", (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) * 1e-9);
  return 0;
}
"""


@dataclasses.dataclass(frozen=True)
class CpuInfo:
    model_name: str
    cores: int
    flags: tuple[str, ...]
    clock_ghz: float
    clock_source: str
    fp32_flop_per_cycle: int
    int8_ops_per_cycle: int

    def peak_fp32_gflops(self, threads: int) -> float:
        return self.clock_ghz * self.fp32_flop_per_cycle * min(threads, self.cores)

    def peak_int8_gops(self, threads: int) -> float:
        return self.clock_ghz * self.int8_ops_per_cycle * min(threads, self.cores)

    def describe(self) -> str:
        return (f"{self.model_name}, {self.cores} cores, {self.clock_ghz:.2f} GHz "
                f"({self.clock_source}); peak/core {self.fp32_flop_per_cycle} fp32 FLOP/cycle, "
                f"{self.int8_ops_per_cycle} int8 ops/cycle "
                f"({'avx512_vnni' if 'avx512_vnni' in self.flags else 'no VNNI'})")


def _cpuinfo_text() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            return f.read()
    except OSError:
        return ""


def measure_clock_ghz(iterations: int = 200_000_000) -> tuple[float, str]:
    """Core clock from timing dependent adds; falls back to /proc/cpuinfo."""
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
                return 8 * iterations / best / 1e9, "measured: dependent-add loop, thread CPU time"
    match = re.search(r"cpu MHz\s*:\s*([\d.]+)", _cpuinfo_text())
    return (float(match.group(1)) / 1000 if match else float("nan")), "/proc/cpuinfo"


def cpu_info(measure_clock: bool = True) -> CpuInfo:
    text = _cpuinfo_text()
    name = re.search(r"model name\s*:\s*(.*)", text)
    flags_match = re.search(r"flags\s*:\s*(.*)", text)
    flags = tuple(sorted(set(flags_match.group(1).split()))) if flags_match else ()
    vendor_amd = "AuthenticAMD" in text
    if "avx512f" in flags and not vendor_amd:
        fp32 = 64
    elif "avx2" in flags and "fma" in flags or "avx512f" in flags:
        fp32 = 32
    else:
        fp32 = 16
    int8 = fp32 * 4 if ("avx512_vnni" in flags or "avx_vnni" in flags) else fp32 * 2
    clock, source = measure_clock_ghz() if measure_clock else (float("nan"), "not measured")
    return CpuInfo(name.group(1).strip() if name else "unknown", os.cpu_count() or 1, flags,
                   clock, source, fp32, int8)


if __name__ == "__main__":
    start = time.time()
    print(cpu_info().describe(), f"[{time.time() - start:.1f}s]")
