#!/usr/bin/env python3
"""The README's five-minute tour as a test (``make tour``; CI runs it).

    python3 tools/tour.py dist/albert_tf-0.1.0-py3-none-any.whl   # make tour
    python3 tools/tour.py --list                                   # the tour's commands
    python3 tools/tour.py WHEEL --venv=/tmp/tour-venv --keep       # reuse a venv, keep the dir
    python3 tools/tour.py WHEEL --venv=/tmp/tour-venv --install-only   # step 1 alone (.ci/run)
    python3 tools/tour.py WHEEL --newest     # CI: then the newest-in-range smoke (step 6)
    python3 tools/tour.py WHEEL --help-examples   # .ci/run full: then every --help example (7)
    python3 tools/tour.py --venv=V --examples-in=KEPT/tour [--examples-of=albert-tf-export]

1. Installs the wheel into a fresh virtualenv with plain pip, at the versions of
   constraints.txt, with the extras the tour needs (`EXTRAS`), as the README installs it.
   Timed on its own: it is not part of the tour.
2. Runs the wheel checks that are not tour commands (`CHECKS`): the Python API and the
   edge tools import from site-packages; a command without task data stops with one line
   naming ``--data_dir`` and ``ALBERT_TF_DATA_DIR``.
3. Runs the tour: every command of every ``bash`` block in the README's
   "## A five-minute tour" section (`extract`), in README order, as written, with bash,
   in an empty temporary directory outside the checkout, with ``ALBERT_TF_DATA_DIR`` set
   and nothing else of the checkout in reach, without network (a network namespace of its
   own, ``unshare --net``, where the kernel allows it; the offline switches of Hugging Face
   and pip in any case). Blocks of any other language (``text``, ``python``) are not run:
   that is where commands that need the network go (published weights), with a sentence
   saying how to get their files. Any failing command fails the tour.
4. Checks what each command printed (`check_step`): no line a library printed
   (`LIBRARY_LINE`: TensorFlow/absl/LiteRT logs, converter dumps, Python warnings,
   tracebacks, progress bars) on stdout or stderr (the tools are quiet by default;
   tests/test_quiet.py checks the console scripts the tour does not run), the config table, the SDK
   metadata of a single-length TFLite export, the runner's JSON lines, the SST-2 dev
   accuracy of the evaluator (>= `MIN_ACCURACY`), one line per skipped benchmark runtime
   naming the pip extra that adds it.
5. Prints every command with its wall time, the tour's total, the install time, and the
   CPU (model name and the ISA flags that decide which artifact is fastest).
6. With ``--newest`` (CI), the newest-in-range smoke (`newest_smoke`): constraints.txt pins
   what the tour tested, setup.py's ranges admit newer releases, which is what a user's
   ``pip install`` gets. The tour's venv is upgraded to the newest versions the ranges allow
   (no constraints.txt; pip's eager upgrade, as a fresh install would resolve them) with the
   benchmark's peers (`NEWEST_EXTRAS`); the versions that differ from constraints.txt are
   printed; then the wheel checks and the tour's benchmark commands (`NEWEST_PROGRAMS`: our
   exports and PyTorch's, ONNX Runtime's and OpenVINO's, each built and timed) run again,
   offline, in fresh directories holding copies of what they read, and no runtime may be
   skipped. A failure there means a range admits a version that breaks: fix it or cap the
   range in setup.py, with the reason in a comment.

7. With ``--help-examples`` (`.ci/run full`), after the tour and before step 6: every
   example of every console script's ``--help`` runs in a copy of the tour's directory
   (`run_help_examples`; what an example is, what it must do, how it is capped or skipped:
   the comment above `HELP_ORDER`). ``--examples-in=DIR`` runs them alone, on a tour
   directory kept with ``--keep``, with ``--venv``'s commands (an editable install's
   too); ``--examples-of`` picks console scripts. About 13 min on 2 cores (docs/setup.md).

`lint` checks the extraction without running anything (tests/test_tour.py): every
command starts with an installed console script (or ``python``), names shipped configs,
and reads only paths that an earlier tour command writes. Standard library only.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")
TOUR_HEADING = "## A five-minute tour"
TOUR_LANGUAGE = "bash"               # the fenced blocks that are the tour
EXTRAS = "onnx,openvino"             # pip install 'albert_tf-*.whl[EXTRAS]'
TOUR_BUDGET_S = 300                  # the README promises five minutes (2 CPU cores)
# --newest: the extras of the newest-in-range smoke (the peers: PyTorch, transformers, ...),
# and the tour commands it runs again (by program) after the wheel checks.
NEWEST_EXTRAS = "onnx,openvino,peers"
NEWEST_PROGRAMS = ("albert-tf-benchmark",)
MIN_ACCURACY = 0.70                  # the tour model's SST-2 dev accuracy, any export
ISA_FLAGS = ("avx2", "avx512f", "avx512_vnni", "amx_int8")
# Flags whose value is a path a command writes (per console script); every other
# path-like flag value is read and must lie in something an earlier command wrote.
OUTPUT_FLAGS = {
    "albert-tf-finetune": ("model_dir", "predict_output"),
    "albert-tf-pretrain": ("model_dir",),
    "albert-tf-compress": ("model_dir",),
    "albert-tf-convert": ("output_dir",),
    "albert-tf-export": ("output",),
    "albert-tf-benchmark": ("output_dir",),
    "albert-tf-create-pretraining-data": ("output_file", "summary_file"),
    "albert-tf-train-vocab": ("output", "model_prefix"),
    "albert-tf-train-spm": ("output", "model_prefix"),
    "albert-tf-run": ("output_dir",),
    "albert-tflite-evaluate": ("json",),
    "albert-tflite-benchmark": ("json",),
    "albert-tflite-run": ("output_file",),
}
# A command may also start with the venv's Python (the API, the ONNX / OpenVINO runners).
PYTHON = "python"
_TF_LOG_LINE = re.compile(r"^[IWE]\d{4} \d\d:\d\d:\d\d")
# A line a library printed, not albert-tf (the tools are quiet unless --verbose): absl / TF
# C++ and Python log lines, LiteRT's and TF's "INFO: ..." / "WARNING:tensorflow:...",
# converter and runtime dumps, Python warnings, tracebacks, progress bars of NNCF (rich) and
# tqdm. The tour checks every command's stdout and stderr with it; tests/test_quiet.py, the
# console scripts the tour does not run.
LIBRARY_LINE = re.compile(
    r"^[IWEF]\d{4} \d\d:\d\d:\d\d|^(INFO|WARNING|ERROR)(:|\s)|^\S+\.py:\d+: \w*Warning|"
    r"fully_quantize|inference_type|XNNPACK delegate|oneDNN|cuInit|cudart|CUDA|"
    r"absl::InitializeLog|is deprecated|Instructions for updating|Traceback|"
    r"\[[IWE]:onnxruntime|nncf:|━|it/s\]")


@dataclasses.dataclass
class Command:
    """One tour command: a logical line of a ``bash`` block (``\\`` continuations joined)."""

    step: str       # the bold step title before its block, e.g. "1. A model"
    text: str       # the command as bash runs it
    line: int       # its first line in the README (1-based)
    source: str = "README.md"   # where it is written (a --help example: "PROGRAM --help")

    @property
    def words(self) -> list[str]:
        return shlex.split(self.text, comments=True)

    @property
    def program(self) -> str:
        return self.words[0] if self.words else ""

    def flags(self) -> dict[str, str]:
        """``--name=value`` (and ``--name value``) flags; bare ``--name`` -> ``"true"``."""
        values, words = {}, self.words[1:]
        for i, word in enumerate(words):
            if not word.startswith("--"):
                continue
            name, eq, value = word[2:].partition("=")
            if not eq:
                nxt = words[i + 1] if i + 1 < len(words) else ""
                value = nxt if nxt and not nxt.startswith("-") and self.program != PYTHON \
                    else "true"
            values[name] = value
        return values


# ------------------------------------------------------------------------------- extract
def tour_section(text: str) -> tuple[list[str], int]:
    """The lines of the tour section (after its heading, up to the next ``## ``) and the
    README line number of the first."""
    lines = text.splitlines()
    try:
        start = lines.index(TOUR_HEADING) + 1
    except ValueError:
        raise SystemExit(f"README.md: no {TOUR_HEADING!r} section") from None
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
    return lines[start:end], start + 1


_STEP = re.compile(r"^\*\*(\d+\.[^*:]*?)[:*]")
_FENCE = re.compile(r"^```\s*([\w+-]*)\s*$")


def extract(text: str) -> list[Command]:
    """Every command of every ``bash`` block of the tour section, in order."""
    lines, first = tour_section(text)
    commands: list[Command] = []
    step, language, pending, pending_line = "", None, "", 0
    for offset, line in enumerate(lines):
        number = first + offset
        fence = _FENCE.match(line.strip()) if line.lstrip().startswith("```") else None
        if language is None:
            if fence:
                language = fence.group(1) or "text"
            elif _STEP.match(line):
                step = _STEP.match(line).group(1).strip()
            continue
        if fence and not fence.group(1):            # the closing fence
            if pending:
                raise SystemExit(f"README.md:{pending_line}: a command ends with '\\' "
                                 "at the end of its block")
            language = None
            continue
        if language != TOUR_LANGUAGE:
            continue
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if not pending:
            pending_line = number
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1].rstrip() + " "
            continue
        commands.append(Command(step, (pending + line.strip()).strip(), pending_line))
        pending = ""
    return commands


# ---------------------------------------------------------------------------------- lint
def console_scripts(setup_py: str = os.path.join(ROOT, "setup.py")) -> set[str]:
    """The console-script names of setup.py's ``CONSOLE_SCRIPTS`` (read, not run)."""
    with open(setup_py, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                getattr(t, "id", None) == "CONSOLE_SCRIPTS" for t in node.targets):
            return {entry.split("=")[0].strip() for entry in ast.literal_eval(node.value)}
    raise ValueError(f"{setup_py}: no CONSOLE_SCRIPTS")


def _is_relative_path(value: str) -> bool:
    """A relative path (not a ``key=value`` override, a variable, a URL or an option)."""
    return ("/" in value and not value.startswith(("/", "$", "~", "-", "http:", "https:"))
            and " " not in value and "=" not in value)


def _written_before(path: str, written: list[str]) -> bool:
    """``path`` is, or lies in, a path written earlier; a glob pattern, when a written path
    and the pattern's fixed start extend one another (``out.tfrecord`` is written as
    ``out.tfrecord-00000-of-00002``)."""
    stem = path.split("*", 1)[0]
    return any(path == w or path.startswith(w + os.sep)
               or ("*" in path and (w.startswith(stem) or stem.startswith(w))) for w in written)


def written_paths(command: Command) -> list[str]:
    return [os.path.normpath(v) for name, v in command.flags().items()
            if name in OUTPUT_FLAGS.get(command.program, ()) and v]


def read_paths(command: Command) -> list[str]:
    """Relative paths a command reads: path-like values of its other flags, and the
    path-like string literals of a ``python -c`` program."""
    outputs = set(OUTPUT_FLAGS.get(command.program, ()))
    paths = []
    if command.program == PYTHON:
        paths += re.findall(r"""['"]([\w.-]+/[\w./-]*)['"]""", " ".join(command.words[1:]))
    else:
        for name, value in command.flags().items():
            if name not in outputs:
                paths += [v for v in value.split(",") if _is_relative_path(v)]
    return [os.path.normpath(p) for p in paths]


def lint(commands: list[Command], scripts: set[str], experiments: set[str]) -> list[str]:
    """Problems of the extracted tour, one line each (none: it can run as written)."""
    problems, written = [], []
    if not commands:
        return [f"no {TOUR_LANGUAGE} block in the {TOUR_HEADING!r} section"]
    for c in commands:
        where = f"{c.source}:{c.line}: {c.program}"
        if c.program != PYTHON and c.program not in scripts:
            problems.append(f"{where}: not a console script of setup.py (nor {PYTHON})")
        if "--overwrite" in c.text:
            problems.append(f"{where}: --overwrite (the tour runs once, in an empty directory)")
        for name in ("config_file",):
            value = c.flags().get(name)
            if value and "/" not in value and value.removesuffix(".yaml") not in experiments:
                problems.append(f"{where}: --{name}={value} is not a shipped experiment")
        for path in read_paths(c):
            if not _written_before(path, written):
                problems.append(f"{where}: reads {path}, which no earlier tour command writes")
        written += written_paths(c)
    return problems


def experiment_names() -> set[str]:
    folder = os.path.join(ROOT, "official_configs", "experiments")
    return {f[:-len(".yaml")] for f in os.listdir(folder) if f.endswith(".yaml")}


# ---------------------------------------------------------------------------------- run
def cpu_description() -> str:
    model, flags = "unknown CPU", set()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and model == "unknown CPU":
                    model = value.strip()
                elif key.strip() == "flags" and not flags:
                    flags = set(value.split())
    except OSError:
        pass
    isa = ", ".join(f"{flag} {'yes' if flag in flags else 'no'}" for flag in ISA_FLAGS)
    return f"{model}, {os.cpu_count()} logical CPUs; {isa}"


def _minutes(seconds: float) -> str:
    return f"{int(seconds // 60)} min {seconds % 60:04.1f} s" if seconds >= 60 else \
        f"{seconds:.1f} s"


def _say(message: str) -> None:
    print(f"[tour {time.strftime('%H:%M:%S')}] {message}", flush=True)


def _offline_prefix() -> list[str]:
    """``unshare --net`` (``-rn`` when not root) when it works here: no network at all."""
    unshare = shutil.which("unshare")
    if not unshare:
        return []
    prefix = [unshare, "--net"] if os.geteuid() == 0 else [unshare, "-rn"]
    ok = subprocess.run(prefix + ["true"], capture_output=True).returncode == 0
    return prefix if ok else []


@dataclasses.dataclass
class Result:
    command: Command
    seconds: float
    stdout: str
    stderr: str
    returncode: int


def run_command(command: Command, cwd: str, env: dict, prefix: list[str]) -> Result:
    """Runs one command with bash; echoes its output as it comes and keeps it."""
    process = subprocess.Popen(prefix + ["bash", "-o", "errexit", "-o", "pipefail", "-c",
                                         command.text], cwd=cwd, env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    kept = {"out": [], "err": []}

    def pump(stream, key, sink):
        for line in stream:
            kept[key].append(line)
            sink.write("    " + line)
            sink.flush()

    start = time.monotonic()
    threads = [threading.Thread(target=pump, args=(process.stdout, "out", sys.stdout)),
               threading.Thread(target=pump, args=(process.stderr, "err", sys.stdout))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    returncode = process.wait()
    return Result(command, time.monotonic() - start, "".join(kept["out"]),
                  "".join(kept["err"]), returncode)


def check_step(result: Result, cwd: str, notes: dict, peers: bool = False) -> list[str]:
    """What the output of one tour command must show; problems, one line each. ``peers``:
    the benchmark's peers are installed, so no benchmark runtime may be skipped."""
    c, out, err = result.command, result.stdout, result.stderr
    flags = c.flags()
    problems = []
    if peers:       # the newest-in-range smoke: new releases may warn; C++ logs may not
        noisy = [line for line in err.splitlines() if _TF_LOG_LINE.match(line)]
    else:
        noisy = [line for line in (out + "\n" + err).splitlines() if LIBRARY_LINE.search(line)]
    if noisy:
        problems.append(f"library lines without --verbose ({len(noisy)}): {noisy[0]!r}")
    if "Traceback (most recent call last)" in err + out:
        problems.append("a Python traceback")
    if c.program == "albert-tf-info":
        if not re.search(r"^\| albert_base \| 30000 \| 128 \| 768 \|", out, re.MULTILINE):
            problems.append("no '| albert_base | 30000 | 128 | 768 |' row in the config table")
    elif c.program == "albert-tf-finetune":
        best = re.findall(r"new best \w+ ([\d.]+)", out)
        if best:
            notes["finetune dev accuracy (Keras)"] = float(best[-1])
    elif c.program == "albert-tf-export" and flags.get("format") == "tflite" \
            and "," not in flags.get("seq_lengths", ","):
        # one sequence length: the mobile SDKs' metadata is embedded
        with open(os.path.join(cwd, flags["output"], "metadata.json"), encoding="utf-8") as f:
            sdk = json.load(f).get("sdk") or {}
        if "MediaPipe TextClassifier" not in sdk.get("runners", []):
            problems.append(f"{flags['output']}/metadata.json: no MediaPipe TextClassifier "
                            f"among the SDK runners ({sdk})")
    elif c.program == "albert-tflite-run":
        rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        if not rows or any(r.get("label") not in ("0", "1") for r in rows) or \
                rows[0].get("text") != flags.get("text"):
            problems.append(f"albert-tflite-run: expected JSON lines with the text and a label "
                            f"'0' or '1', got {rows}")
    elif c.program == "albert-tflite-evaluate":
        scores = [float(s) for s in re.findall(r"accuracy ([\d.]+)", out)]
        if not scores:
            problems.append("albert-tflite-evaluate printed no accuracy")
        else:
            notes[f"{flags.get('model')} dev accuracy"] = scores[0]
            if min(scores) < MIN_ACCURACY:
                problems.append(f"SST-2 dev accuracy {min(scores):.4f} < {MIN_ACCURACY}: the "
                                "tour model learned too little")
    elif c.program == PYTHON and "predict" in c.text:
        if not re.search(r"'label': '[01]'", out):
            problems.append("the runner printed no prediction with a label '0' or '1'")
    elif c.program == "albert-tf-benchmark":
        for runtime in filter(None, flags.get("runtimes", "").split(",")):
            timed = re.search(rf"^\s+\S+\s+{runtime}\s+\d+ x\s+\d+: median", out, re.MULTILINE)
            skipped = re.search(rf"^\s+{runtime}: skipped: .*pip install 'albert-tf\[\w+\]'",
                                out, re.MULTILINE)
            if skipped:
                notes.setdefault("benchmark runtimes skipped", []).append(runtime)
                if peers:
                    problems.append(f"benchmark runtime {runtime}: skipped with the peers "
                                    f"installed: {skipped.group(0).strip()}")
            if not timed and not skipped:
                problems.append(f"benchmark runtime {runtime}: neither timed nor skipped with "
                                "a line naming the pip extra that adds it")
    return problems


# pip's --no-compile: no .pyc for all of TensorFlow, PyTorch and transformers at install
# (measured: 58 -> 33 CPU-s for the tour's venv); the commands compile what they import, once.
NO_COMPILE = ("--no-compile",)


def install(wheel: str, venv: str, python: str) -> None:
    constraints = os.path.join(ROOT, "constraints.txt")
    pip = [os.path.join(venv, "bin", "python"), "-m", "pip", "install", "-q", *NO_COMPILE]
    steps = [[python, "-m", "venv", venv], pip + ["--upgrade", "pip"],
             pip + ["-c", constraints, f"{wheel}[{EXTRAS}]"]]
    for step in steps:
        _say(" ".join(shlex.quote(os.path.basename(w) if w == wheel else w) for w in step))
        subprocess.run(step, check=True)


def _pins(text: str) -> dict[str, str]:
    """``name==version`` lines (constraints.txt, ``pip freeze``) by normalized name."""
    pins = {}
    for line in text.splitlines():
        name, eq, version = line.split("#")[0].strip().partition("==")
        if eq:
            pins[re.sub(r"[-_.]+", "-", name.strip()).lower()] = version.strip()
    return pins


def version_changes(constraints: str, freeze: str) -> tuple[list[str], list[str]]:
    """What a venv's ``pip freeze`` holds against constraints.txt: ``name old -> new`` for
    each pinned package at another version, ``name==version`` for each package not pinned
    (a local ``+cpu`` label counts as the pinned version: constraints.txt drops it)."""
    pinned, installed = _pins(constraints), _pins(freeze)
    changed = [f"{name} {pinned[name]} -> {version}" for name, version in sorted(installed.items())
               if name in pinned and version.split("+")[0] != pinned[name]]
    added = [f"{name}=={version}" for name, version in sorted(installed.items())
             if name not in pinned and not name.startswith("albert-tf")]
    return changed, added


def upgrade_to_newest(wheel: str, venv: str) -> str:
    """Upgrades ``venv`` to the newest versions setup.py's ranges allow, with `NEWEST_EXTRAS`,
    without constraints.txt; returns its ``pip freeze``."""
    python = os.path.join(venv, "bin", "python")
    step = [python, "-m", "pip", "install", "-q", *NO_COMPILE, "--upgrade",
            "--upgrade-strategy", "eager",
            f"{wheel}[{NEWEST_EXTRAS}]"]
    _say(" ".join(os.path.basename(w) if w == step[-1] else w for w in step))
    subprocess.run(step, check=True)
    return subprocess.run([python, "-m", "pip", "freeze"], check=True, capture_output=True,
                          text=True).stdout


def newest_smoke(wheel: str, venv: str, commands: list[Command], tour_dir: str, work: str,
                 env: dict, prefix: list[str]) -> tuple[bool, dict[str, float]]:
    """Step 6 of the module docstring, after the tour (which wrote what the commands read,
    in ``tour_dir``); ``(passed, seconds per part)``."""
    seconds, start = {}, time.monotonic()
    freeze = upgrade_to_newest(wheel, venv)
    seconds["upgrade"] = time.monotonic() - start
    with open(os.path.join(ROOT, "constraints.txt"), encoding="utf-8") as f:
        changed, added = version_changes(f.read(), freeze)
    _say("newest in range, against constraints.txt: "
         + (", ".join(changed) or "every pinned package at its pinned version"))
    _say(f"added with [{NEWEST_EXTRAS}]: " + (", ".join(added) or "nothing"))
    start = time.monotonic()
    smoke = [(f"check: {title}", Command("check", script, 0)) for title, script in CHECKS]
    smoke += [(f"README.md:{c.line} $ {c.text}", c) for c in commands
              if c.program in NEWEST_PROGRAMS]
    for index, (title, command) in enumerate(smoke, 1):
        cwd = os.path.join(work, "newest", str(index))
        for path in read_paths(command):
            shutil.copytree(os.path.join(tour_dir, path), os.path.join(cwd, path))
        os.makedirs(cwd, exist_ok=True)
        _say(f"newest {index}/{len(smoke)} {title}")
        result = run_command(command, cwd, env, prefix)
        problems = ([f"exit {result.returncode}"] if result.returncode else
                    check_step(result, cwd, {}, peers=True))
        if problems:
            for p in problems:
                _say(f"FAILED: newest-in-range {title}: {p}")
            return False, seconds
    seconds["smoke"] = time.monotonic() - start
    return True, seconds


# ------------------------------------------------------------------------ help examples
# `--help-examples` (`.ci/run full`; `--examples-in=DIR` on a kept tour): every example of
# every console script's ``--help`` runs after the tour, in a copy of the tour's directory
# (its layout: runs/sst2, runs/sst2/best, hf/, models/, runs/sst2_pruned, serving/, edge/,
# server/), offline, as the tour's commands do. An example is a line of the help text that
# starts (after its indentation) with the command's name and a space, with its ``\``
# continuations joined as bash joins them; the examples run command by command in
# `HELP_ORDER` (so one command's examples may read what an earlier one's wrote: the pretrain
# example reads create-pretraining-data's records), each in the order of its help text.
# Each must exit 0 without a traceback, and the commands of `WROTE` must end with the line
# that says where they wrote. An example that needs the network or data not in the tour's
# layout carries `NOT_RUN` (``[not run: REASON]`` in its comment): it is skipped with the
# reason printed; at most `MAX_NOT_RUN` of them (tests/test_help_examples.py). Commands that
# train or time get `HELP_CAPS` appended (absl and argparse: the last value wins), which
# bounds them: about 13 min on 2 cores for the 46 examples run (docs/setup.md), most of it
# compress, albert-tf-benchmark, the two albert-tf-run smokes and finetune.
HELP_ORDER = (
    "albert-tf-info", "albert-tf-train-vocab", "albert-tf-train-spm",
    "albert-tf-create-pretraining-data", "albert-tf-pretrain", "albert-tf-finetune",
    "albert-tf-convert", "albert-tf-compress", "albert-tf-export", "albert-tf-saved-model-cli",
    "albert-tflite-run", "albert-tflite-evaluate", "albert-tflite-benchmark",
    "albert-tflite-metadata", "albert-tf-benchmark", "albert-tf-run")
NOT_RUN = re.compile(r"\[not run: ([^\]]+)\]")
MAX_NOT_RUN = 4
# albert-tf-run's pipelines as a smoke (~1 min each): 500 reviews, one model, a few steps,
# no compression (the compress examples run it), one export.
RUN_SMOKE = ("vocabulary.input=[],corpus.max_documents=500,corpus.heldout_documents=20,"
             "pretrain.models=[albert_mini],pretrain.learning_rates={},"
             "pretrain.max_steps_per_model={},pretrain.max_steps=5,"
             "pretrain.validation_interval=5,pretrain.warmup_steps=1,finetune.max_steps=10,"
             "finetune.validation_interval=10,finetune.warmup_steps=1,"
             "compress.models=[],compress.prune_sparsities=[],compress.structured=false,"
             "compress.distill=false,compress.qat=false,compress.latency_of=[],"
             "export.quantizations=[dynamic],"
             "export.timing_seconds=0.1")
HELP_CAPS = {
    "albert-tf-pretrain": ("--num_train_steps=20",),
    "albert-tf-finetune": ("--num_train_steps=20",),
    "albert-tf-compress": ("--num_train_steps=5",),
    "albert-tf-train-vocab": ("--input_sentence_size=20000",),
    "albert-tf-train-spm": ("--input_sentence_size=20000",),
    "albert-tf-benchmark": ("--min_seconds=0.2",),
    "albert-tflite-benchmark": ("--min_seconds=0.2", "--runs=5"),
    "albert-tf-run": (f"--params_override={RUN_SMOKE}",),
}
# The long commands end by saying where they wrote (the last line of stdout).
WROTE = {program: re.compile(r"\bwrote ") for program in (
    "albert-tf-benchmark", "albert-tf-compress", "albert-tf-export", "albert-tf-convert",
    "albert-tf-finetune", "albert-tf-pretrain", "albert-tf-create-pretraining-data")}
WROTE["albert-tf-run"] = re.compile(r"^report: ")


def help_examples(program: str, help_text: str) -> list[Command]:
    """The examples of ``program``'s ``--help`` text (see `HELP_ORDER`'s comment), as
    commands (``step``: the program; ``line``: the example's line in the help text)."""
    lines, examples, i = help_text.splitlines(), [], 0
    while i < len(lines):
        line, number = lines[i], i + 1
        i += 1
        words = line.split(None, 1)
        if not line[:1].isspace() or not words or words[0] != program:
            continue
        text = line.strip()
        while text.endswith("\\") and i < len(lines):
            text, i = text[:-1] + lines[i], i + 1      # bash: backslash-newline vanishes
        examples.append(Command(program, text.strip(), number, f"{program} --help"))
    return examples


def without_comment(text: str) -> str:
    """``text`` up to its comment: a ``#`` starting a word outside quotes."""
    quote = None
    for i, char in enumerate(text):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or text[i - 1].isspace()):
            return text[:i].rstrip()
    return text


def not_run(command: Command) -> str | None:
    """Why the harness skips an example (its `NOT_RUN` marker), or None."""
    found = NOT_RUN.search(command.text)
    return found.group(1) if found else None


def capped(command: Command) -> Command:
    """The example as the harness runs it: without its comment, `HELP_CAPS` appended."""
    text = " ".join([without_comment(command.text), *HELP_CAPS.get(command.program, ())])
    return Command(command.step, text, command.line, command.source)


def entry_points(setup_py: str = os.path.join(ROOT, "setup.py")) -> dict[str, str]:
    """``{console script: the file of its module}`` from setup.py's ``CONSOLE_SCRIPTS``."""
    with open(setup_py, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    scripts = next(ast.literal_eval(node.value) for node in tree.body
                   if isinstance(node, ast.Assign)
                   and any(getattr(t, "id", None) == "CONSOLE_SCRIPTS" for t in node.targets))
    files = {}
    for entry in scripts:
        name, target = (part.strip() for part in entry.split("="))
        parts = target.split(":")[0].split(".")
        parts = ["tflite", *parts[1:]] if parts[0] == "albert_tflite" else parts
        files[name] = os.path.join(ROOT, *parts) + ".py"
    return files


def documented_examples() -> dict[str, list[Command]]:
    """Every console script's examples, read from its module docstring (what its ``--help``
    prints above the flags: `albert_tf.cli.run_app`, ``user_inputs.ArgumentParser(doc=)``)
    without running anything."""
    examples = {}
    for program, path in entry_points().items():
        with open(path, encoding="utf-8") as f:
            examples[program] = help_examples(program, ast.get_docstring(ast.parse(f.read()),
                                                                          clean=False) or "")
    return examples


def lint_examples(tour: list[Command], examples: dict[str, list[Command]]) -> list[str]:
    """Problems of the help examples, one line each: every console script has examples and
    a place in `HELP_ORDER`; the examples to run, after the tour, in that order, pass
    `lint` (shipped configs, reading only what the tour or an earlier example wrote) and
    use relative paths; at most `MAX_NOT_RUN` are skipped."""
    problems = [f"{p}: no example in its --help" for p, found in examples.items() if not found]
    problems += [f"{p}: not in HELP_ORDER" for p in examples if p not in HELP_ORDER]
    ordered = [c for p in HELP_ORDER for c in examples.get(p, [])]
    skipped = [c for c in ordered if not_run(c)]
    if len(skipped) > MAX_NOT_RUN:
        problems.append(f"{len(skipped)} examples are marked [not run: ...] (at most "
                        f"{MAX_NOT_RUN}): " + "; ".join(c.text for c in skipped))
    to_run = [capped(c) for c in ordered if not not_run(c)]
    problems += [f"{c.program} --help: {c.text}: an absolute path (/tmp/...); use the tour's "
                 "layout" for c in to_run if re.search(r"(^|[\s=])/tmp/", c.text)]
    problems += lint(tour + to_run, console_scripts(), experiment_names())
    return problems


def run_help_examples(tour_dir: str, work: str, env: dict, prefix: list[str],
                      programs: tuple[str, ...] = HELP_ORDER) -> bool:
    """The ``--help`` examples of ``programs`` (every console script), run in a copy of
    ``tour_dir`` (see `HELP_ORDER`'s comment); prints each with its time, the skipped ones
    with their reason, and the total; True when all passed."""
    cwd = os.path.join(work, "help-examples")
    shutil.copytree(tour_dir, cwd, symlinks=True)
    start, timed, failures = time.monotonic(), [], []
    for program in (p for p in HELP_ORDER if p in programs):
        shown = run_command(Command("help", f"{program} --help", 0), cwd, env, prefix)
        examples = help_examples(program, shown.stdout + shown.stderr)
        if shown.returncode or not examples:
            failures.append(f"{program} --help: exit {shown.returncode}, "
                            f"{len(examples)} examples")
        for example in examples:
            reason = not_run(example)
            if reason:
                _say(f"SKIPPED ({reason}): {example.text}")
                continue
            command = capped(example)
            _say(f"$ {command.text}")
            result = run_command(command, cwd, env, prefix)
            timed.append(result)
            failures += [f"{command.text}: {p}" for p in example_problems(result)]
    print("\nThe --help examples (wall seconds):")
    for r in timed:
        text = r.command.text if len(r.command.text) <= 110 else r.command.text[:107] + "..."
        print(f"  {r.seconds:6.1f}  {'ok  ' if not example_problems(r) else 'FAIL'}  {text}")
    _say(f"--help examples: {len(timed)} run in {_minutes(time.monotonic() - start)}; "
         f"{len(failures)} failed")
    for failure in failures:
        _say(f"FAILED: {failure}")
    return not failures


def example_problems(result: Result) -> list[str]:
    """What is wrong with one example's run: an exit status, a traceback, no last line
    saying where it wrote (`WROTE`)."""
    problems = [f"exit {result.returncode}"] if result.returncode else []
    if "Traceback (most recent call last)" in result.stdout + result.stderr:
        problems.append("a Python traceback")
    wrote = WROTE.get(result.command.program)
    last = ([line for line in result.stdout.splitlines() if line.strip()] or [""])[-1]
    if wrote and not result.returncode and not wrote.search(last):
        problems.append(f"the last line does not say where it wrote: {last!r}")
    return problems


# Checks of the installed wheel that are not tour commands (from the wheel smoke test).
CHECKS = [
    ("the Python API and the edge tools import from the installed wheel",
     "python - <<'EOF'\n"
     "import albert_tf, albert_tflite.runner\n"
     "config = albert_tf.load_config('albert_base')\n"
     "assert (config.hidden_size, config.embedding_size) == (768, 128), config\n"
     "assert 'site-packages' in albert_tf.__file__, albert_tf.__file__\n"
     "assert 'site-packages' in albert_tflite.runner.__file__, albert_tflite.runner.__file__\n"
     "print('albert_tf', albert_tf.__version__, 'from', albert_tf.__file__)\n"
     "EOF"),
    ("no data directory: one line naming --data_dir and ALBERT_TF_DATA_DIR",
     "if env -u ALBERT_TF_DATA_DIR albert-tf-finetune --task=sst2 --model_dir=ft "
     "--config_file=finetune_sst2_tour >nodata.txt 2>&1; then\n"
     "  echo 'finetune without data succeeded?'; exit 1; fi\n"
     "tail -3 nodata.txt; grep -q -- --data_dir nodata.txt; grep -q ALBERT_TF_DATA_DIR nodata.txt\n"
     "! grep -q Traceback nodata.txt"),
]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wheel", nargs="?", help="the wheel to install (make wheel: dist/)")
    parser.add_argument("--list", action="store_true", help="print the tour's commands, exit")
    parser.add_argument("--venv", help="use (and keep) this virtualenv; installed there "
                        "only when it does not exist yet")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    parser.add_argument("--install-only", action="store_true", help="install the wheel "
                        "into --venv (step 1) and stop: .ci/run builds the tour's venv beside "
                        ".venv's install, then runs the tour in it")
    parser.add_argument("--python", default=os.environ.get("PYTHON", "python3"),
                        help="the Python that creates the virtualenv")
    parser.add_argument("--newest", action="store_true", help="after the tour, upgrade its "
                        "virtualenv (--venv's too) to the newest versions setup.py's ranges "
                        f"allow, with [{NEWEST_EXTRAS}], and run the wheel checks and the "
                        "benchmark commands again (CI)")
    parser.add_argument("--help-examples", action="store_true", help="after the tour, run "
                        "every example of every console script's --help in a copy of the "
                        "tour's directory (HELP_ORDER; `.ci/run full`)")
    parser.add_argument("--examples-in", metavar="TOUR_DIR", help="skip the tour: run the "
                        "--help examples in a copy of TOUR_DIR, a tour directory kept with "
                        "--keep (tour/ in the printed directory), with --venv's commands")
    parser.add_argument("--examples-of", metavar="PROGRAMS", help="only these console "
                        "scripts' examples (comma-separated; they may read what the others "
                        "write)")
    args = parser.parse_args(argv)

    with open(README, encoding="utf-8") as f:
        commands = extract(f.read())
    problems = lint(commands, console_scripts(), experiment_names())
    if args.help_examples or args.examples_in:
        problems += lint_examples(commands, documented_examples())
    if args.list or problems:
        for c in commands:
            print(f"README.md:{c.line} [{c.step}] {c.text}")
        for p in problems:
            print(f"tour: {p}", file=sys.stderr)
        return 1 if problems else 0
    if args.examples_in and not (args.venv and os.path.isdir(args.examples_in)):
        parser.error("--examples-in needs a kept tour directory and the --venv it ran with")
    if not args.wheel and not args.examples_in:
        parser.error("the wheel to install is required (make tour builds it)")
    if args.install_only and not args.venv:
        parser.error("--install-only needs --venv (where the tour will find the venv)")
    data = os.environ.get("ALBERT_TF_DATA_DIR")
    if not args.install_only and (not data or not os.path.isdir(data)):
        parser.error("set ALBERT_TF_DATA_DIR to the task data (make sets ../shared/data)")

    work = tempfile.mkdtemp(prefix="albert-tf-tour-")
    try:
        _say(f"CPU: {cpu_description()}")
        venv = os.path.abspath(args.venv) if args.venv else os.path.join(work, "venv")
        start = time.monotonic()
        if not os.path.exists(os.path.join(venv, "bin", "python")):
            install(os.path.abspath(args.wheel), venv, args.python)
        install_s = time.monotonic() - start
        _say(f"virtualenv ready in {_minutes(install_s)} (not part of the tour)")
        if args.install_only:
            return 0

        tour_dir = os.path.join(work, "tour")
        os.makedirs(tour_dir)
        # PYTHONDONTWRITEBYTECODE (some CI images): a user's pip install writes bytecode;
        # ours (--no-compile) leaves it to the first command, which must be allowed to.
        # TF_CPP_MIN_LOG_LEVEL: the quiet check is of what a user sees without it.
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "ALBERT_TF_VERBOSE",
                            "PYTHONDONTWRITEBYTECODE", "TF_CPP_MIN_LOG_LEVEL")}
        env.update(PATH=os.path.join(venv, "bin") + os.pathsep + env.get("PATH", ""),
                   VIRTUAL_ENV=venv, ALBERT_TF_DATA_DIR=os.path.abspath(data),
                   HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PIP_NO_INDEX="1",
                   ALBERT_TF_CACHE_DIR=os.path.join(work, "cache"))   # not the user's ~/.cache
        prefix = _offline_prefix()
        _say("offline: " + ("a network namespace of its own (unshare --net)" if prefix else
                            "no network namespace here; HF_HUB_OFFLINE, TRANSFORMERS_OFFLINE, "
                            "PIP_NO_INDEX set"))
        programs = tuple(args.examples_of.split(",")) if args.examples_of else HELP_ORDER
        if args.examples_in:
            return 0 if run_help_examples(os.path.abspath(args.examples_in), work, env,
                                          prefix, programs) else 1

        check_dir = os.path.join(work, "checks")
        os.makedirs(check_dir)
        checks_start = time.monotonic()
        for title, script in CHECKS:
            _say(f"check: {title}")
            result = run_command(Command("check", script, 0), check_dir, env, prefix)
            if result.returncode:
                _say(f"FAILED: check {title!r} (exit {result.returncode})")
                return 1
        checks_s = time.monotonic() - checks_start

        results, notes = [], {}
        tour_start = time.monotonic()
        for index, command in enumerate(commands, 1):
            _say(f"{index}/{len(commands)} [{command.step}] $ {command.text}")
            result = run_command(command, tour_dir, env, prefix)
            results.append(result)
            if result.returncode:
                _say(f"FAILED: README.md:{command.line}: exit {result.returncode} after "
                     f"{result.seconds:.1f} s: {command.text}")
                return 1
            problems = check_step(result, tour_dir, notes)
            _say(f"{index}/{len(commands)} done in {result.seconds:.1f} s")
            if problems:
                for p in problems:
                    _say(f"FAILED: README.md:{command.line}: {p}")
                return 1
        tour_s = time.monotonic() - tour_start

        print("\nThe tour, command by command (wall seconds):")
        width = max(len(r.command.step) for r in results)
        for r in results:
            text = r.command.text if len(r.command.text) <= 110 else r.command.text[:107] + "..."
            print(f"  {r.seconds:6.1f}  {r.command.step:{width}}  {text}")
        by_step: dict[str, float] = {}
        for r in results:
            by_step[r.command.step] = by_step.get(r.command.step, 0.0) + r.seconds
        print("Per step: " + "; ".join(f"{s} {_minutes(t)}" for s, t in by_step.items()))
        for key, value in notes.items():
            print(f"{key}: {value}")
        print(f"CPU: {cpu_description()}")
        print(f"Load average at the end: {os.getloadavg()[0]:.2f} (1 min)")
        print(f"Virtualenv: {_minutes(install_s)}; wheel checks: {_minutes(checks_s)}; "
              f"tour: {len(results)} commands in {_minutes(tour_s)} "
              f"(budget {_minutes(TOUR_BUDGET_S)}{'' if tour_s <= TOUR_BUDGET_S else ': OVER'})")
        if args.help_examples and not run_help_examples(tour_dir, work, env, prefix,
                                                        programs):
            return 1
        if args.newest:
            passed, seconds = newest_smoke(os.path.abspath(args.wheel), venv, commands,
                                           tour_dir, work, env, prefix)
            print("Newest in range: " + "; ".join(f"{part} {_minutes(t)}"
                                                   for part, t in seconds.items())
                  + ("" if passed else "; FAILED"))
            return 0 if passed else 1
        return 0
    finally:
        if args.keep:
            _say(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
