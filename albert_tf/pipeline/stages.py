"""A resumable chain of stages: each runs once, records its result, and is skipped after.

A stage is a command (usually one of our binaries) plus a function that reads what
it produced into a small JSON-able result. When the stage finishes, the result is
written atomically to ``<run_dir>/stages/<name>.json``; on a rerun a stage with such
a file is skipped, so a killed pipeline resumes at the first unfinished stage (and
the binaries themselves resume from their own checkpoints inside that stage).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import subprocess
import sys
import time
from typing import Any, Callable, Sequence


class StageError(RuntimeError):
    """A stage's command failed; the message names the stage and its log file."""


def write_text(path: str, text: str) -> None:
    """Writes ``path`` atomically (a temporary file beside it, then a rename)."""
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def write_json(path: str, values: dict[str, Any]) -> None:
    """``values`` as indented, key-sorted JSON, written atomically."""
    write_text(path, json.dumps(values, indent=2, sort_keys=True))


@dataclasses.dataclass
class Stage:
    """One step of a pipeline.

    Attributes:
      name: unique, file-name safe.
      command: argv to run (``None`` for a stage that only calls ``collect``), or a
        function returning it, called when the stage starts (after its ``needs``
        finished), so that the command can depend on what they produced.
      collect: reads the stage's outputs into its result dict (called after the
        command succeeded).
      needs: names of stages whose results must exist first.
    """

    name: str
    command: Sequence[str] | Callable[[], Sequence[str]] | None
    collect: Callable[[], dict[str, Any]] = lambda: {}
    needs: Sequence[str] = ()
    env: dict[str, str] | None = None

    def argv(self) -> list[str]:
        """The command line (calls ``command`` when it is a function)."""
        return list(self.command() if callable(self.command) else self.command)


class StageRunner:
    """Runs stages in order, skipping those already recorded in ``run_dir/stages``."""

    def __init__(self, run_dir: str, echo: Callable[[str], None] = print):
        self.run_dir = run_dir
        self.echo = echo
        os.makedirs(self.stages_dir, exist_ok=True)
        os.makedirs(self.logs_dir, exist_ok=True)

    @property
    def stages_dir(self) -> str:
        return os.path.join(self.run_dir, "stages")

    @property
    def logs_dir(self) -> str:
        return os.path.join(self.run_dir, "logs")

    def result_path(self, name: str) -> str:
        return os.path.join(self.stages_dir, f"{name}.json")

    def result(self, name: str) -> dict[str, Any] | None:
        path = self.result_path(name)
        if not os.path.exists(path):
            return None
        with open(path, encoding="utf-8") as f:
            return json.load(f)

    def results(self) -> dict[str, dict[str, Any]]:
        out = {}
        for file_name in sorted(os.listdir(self.stages_dir)):
            if file_name.endswith(".json"):
                out[file_name[:-5]] = self.result(file_name[:-5])
        return out

    def first_start(self, name: str) -> float:
        """When ``name`` was first started (kept across resumes): the origin of its
        wall-clock curves."""
        path = os.path.join(self.stages_dir, f"{name}.start")
        if not os.path.exists(path):
            with open(path, "w", encoding="utf-8") as f:
                f.write(repr(time.time()))
        with open(path, encoding="utf-8") as f:
            return float(f.read())

    def _record(self, name: str, result: dict[str, Any]) -> None:
        write_json(self.result_path(name), result)

    def run(self, stage: Stage) -> dict[str, Any]:
        done = self.result(stage.name)
        if done is not None:
            self.echo(f"[skip] {stage.name} (done in {done.get('seconds', 0):.0f}s earlier)")
            return done
        for need in stage.needs:
            if self.result(need) is None:
                raise StageError(f"stage {stage.name!r} needs {need!r}, which has not finished.")
        start = time.time()
        self.first_start(stage.name)
        if stage.command is not None:
            self._run_command(stage)
        result = dict(stage.collect() or {})
        result["seconds"] = time.time() - start
        self._record(stage.name, result)
        self.echo(f"[done] {stage.name} in {result['seconds']:.0f}s")
        return result

    def _run_command(self, stage: Stage) -> None:
        log_path = os.path.join(self.logs_dir, f"{stage.name}.log")
        command = stage.argv()
        self.echo(f"[run ] {stage.name}: {shlex.join(command)}")
        env = dict(os.environ, **(stage.env or {}))
        env.setdefault("PYTHONUNBUFFERED", "1")
        with open(log_path, "a", encoding="utf-8") as log:
            log.write(f"\n$ {shlex.join(command)}\n")
            log.flush()
            process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                       env=env, text=True, errors="replace")
            assert process.stdout is not None
            for line in process.stdout:
                log.write(line)
                if _is_progress(line):
                    self.echo(f"       {stage.name}: {line.rstrip()[:160]}")
            code = process.wait()
        if code != 0:
            with open(log_path, encoding="utf-8", errors="replace") as f:
                tail = "".join(f.readlines()[-15:])
            raise StageError(f"stage {stage.name!r} failed (exit {code}); full log: {log_path}\n"
                             f"{tail}")


def _is_progress(line: str) -> bool:
    """Lines worth echoing to the console (progress, results), not TF's log noise."""
    text = line.strip()
    if not text or text.startswith(("W0000", "I0000", "E0000", "WARNING", "  warnings.warn")):
        return False
    return any(key in text for key in ("step", "accuracy", "loss", "%", "wrote", "saved",
                                       "examples", "Wrote", "median"))


def python_module(module: str, *args: str) -> list[str]:
    """argv that runs ``python -m module args`` with this interpreter."""
    return [sys.executable, "-m", module, *args]
