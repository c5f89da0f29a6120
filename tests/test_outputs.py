"""The one output writer (`albert_tf.outputs`): what it refuses, what it replaces, the modes it
writes with; as properties over the relations between output, inputs and the current
directory (hypothesis), then through the real commands.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from albert_tf import outputs

BIN = os.path.dirname(sys.executable)

# A small world of directories: every output, input and current directory is one of these.
NODES = ["", "a", "a/b", "a/b/c", "a/d", "e", "e/f"]
# "ours": an earlier output of the same kind; "ours_other_kind": an albert-tf output of
# another kind (a trained model directory where an export goes), never replaced.
STATES = ["absent", "empty", "user_files", "ours", "ours_other_kind", "a_file"]


def snapshot(root: str) -> dict[str, tuple]:
    """Every path under ``root``: kind, content (files) and mode."""
    seen = {}
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(directory, name)
            rel = os.path.relpath(path, root)
            mode = stat.S_IMODE(os.lstat(path).st_mode)
            if os.path.isfile(path):
                with open(path, "rb") as f:
                    seen[rel] = ("file", f.read(), mode)
            else:
                seen[rel] = ("dir", None, mode)
    return seen


def lay_out(root: str, output: str, state: str) -> None:
    """The world's directories, each with a user file, and ``output`` in ``state``."""
    for node in NODES[1:]:
        os.makedirs(os.path.join(root, node), exist_ok=True)
        with open(os.path.join(root, node, "user.txt"), "w") as f:
            f.write(f"user data in {node}\n")
    target = os.path.join(root, output)
    if state == "absent":
        return
    if state == "a_file":
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w") as f:
            f.write("a user's file\n")
        return
    os.makedirs(target, exist_ok=True)
    if state in ("ours", "ours_other_kind"):
        outputs.write_marker(target, "test" if state == "ours" else outputs.MODEL_DIRECTORY)
        with open(os.path.join(target, "old.bin"), "w") as f:
            f.write("an earlier output\n")
    elif state == "user_files":
        with open(os.path.join(target, "notes.md"), "w") as f:
            f.write("keep me\n")


def related(x: str, y: str) -> bool:
    """Whether x equals, contains or lies inside y (paths of the world)."""
    x, y = os.path.join("/w", x), os.path.join("/w", y)
    return x == y or x.startswith(y.rstrip("/") + "/") or y.startswith(x.rstrip("/") + "/")


@settings(max_examples=150, deadline=None)
@given(output=st.sampled_from(NODES[1:] + ["a/new", "a/b/new", "new/deep"]),
       state=st.sampled_from(STATES),
       cwd=st.sampled_from(NODES),
       inputs=st.lists(st.sampled_from(NODES[1:]), max_size=2),
       overwrite=st.booleans(),
       fail=st.booleans())
def test_writer_never_touches_what_it_did_not_write(tmp_path_factory, output, state, cwd,
                                                    inputs, overwrite, fail):
    root = str(tmp_path_factory.mktemp("world"))
    if output in NODES and not state.startswith("ours"):   # the world's directories hold user files
        state = "user_files"
    lay_out(root, output, state)
    before = snapshot(root)
    here = os.getcwd()
    os.chdir(os.path.join(root, cwd))
    old_umask = os.umask(0o027)
    refused = None
    try:
        rel_output = os.path.relpath(os.path.join(root, output))
        rel_inputs = [(f"--in{i}", os.path.relpath(os.path.join(root, p)))
                      for i, p in enumerate(inputs)]
        try:
            with outputs.staged_output(rel_output, kind="test", inputs=rel_inputs,
                                       overwrite=overwrite) as stage:
                os.makedirs(os.path.join(stage, "sub"))
                with open(os.path.join(stage, "sub", "new.bin"), "w") as f:
                    f.write("new output\n")
                if fail:
                    raise RuntimeError("the export failed half-way")
        except outputs.OutputError as e:
            refused = str(e)
        except RuntimeError:
            pass
    finally:
        os.umask(old_umask)
        os.chdir(here)
    after = snapshot(root)

    must_refuse = (related(output, cwd) and (output == cwd or cwd.startswith(output + "/"))
                   or any(related(output, p) for p in inputs)
                   or state in ("user_files", "a_file", "ours_other_kind")
                   or (state == "ours" and not overwrite))
    if must_refuse or fail:
        assert after == before, "a refused or failed write changed the tree"
        assert must_refuse == (refused is not None), refused
        if refused:
            assert "\n" not in refused and "--output" in refused
        return
    assert refused is None
    # Everything outside the output is as it was (its parents' modification times aside);
    # the output is exactly the new one.
    def under(k):
        return k == output or k.startswith(output + "/")
    outside = {k: v for k, v in before.items() if not under(k)}
    created_parents = {k for k in after if k not in before and output.startswith(k + "/")}
    assert {k: v for k, v in after.items() if not under(k) and k not in created_parents} \
        == outside
    inside = sorted(os.path.relpath(k, output) for k in after if under(k) and k != output)
    assert inside == [outputs.MARKER_FILE, "sub", os.path.join("sub", "new.bin")]
    # The umask's modes (0o027: directories 0o750, files 0o640), not mkdtemp's 0o700.
    assert after[output][2] == 0o750 and after[os.path.join(output, "sub")][2] == 0o750
    assert after[os.path.join(output, "sub", "new.bin")][2] == 0o640
    # No staging or set-aside directory is left beside it.
    parent = os.path.dirname(os.path.join(root, output))
    assert not [n for n in os.listdir(parent) if n.startswith(".") and ".tmp-" in n
                or ".old-" in n]


@pytest.mark.parametrize("given,what", [(".", "the current directory"),
                                        ("..", "a parent of the current directory"),
                                        ("~", "the home directory"), ("/", "the file-system root"),
                                        ("", "is empty")])
def test_protected_locations_are_refused_even_when_empty_or_ours(tmp_path, monkeypatch, given,
                                                                  what):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    outputs.write_marker(str(tmp_path), "test")          # even an albert-tf output
    with pytest.raises(outputs.OutputError, match=what):
        outputs.check_output(given, kind="test", overwrite=True)
    with pytest.raises(outputs.OutputError, match=what):
        outputs.check_location(given)


def test_a_symbolic_link_is_not_replaced(tmp_path):
    (tmp_path / "real").mkdir()
    outputs.write_marker(str(tmp_path / "real"), "test")
    os.symlink(tmp_path / "real", tmp_path / "link")
    with pytest.raises(outputs.OutputError, match="symbolic link"):
        outputs.check_output(str(tmp_path / "link"), kind="test", overwrite=True)


def test_output_that_changes_during_the_write_is_not_replaced(tmp_path):
    target = tmp_path / "out"
    with pytest.raises(outputs.OutputError, match="changed while"):
        with outputs.staged_output(str(target), kind="test") as stage:
            (tmp_path / "out").mkdir()                   # another program writes there
            (target / "theirs.txt").write_text("theirs")
            (tmp_path / "stage_seen").write_text(stage)
    assert (target / "theirs.txt").read_text() == "theirs"
    assert not os.path.exists((tmp_path / "stage_seen").read_text())


# ---------------------------------------------------------------- run directories
RUN = outputs.RUN_KINDS["albert-tf-finetune"]
RUN_WRITES = [("best", outputs.MODEL_DIRECTORY), ("final", outputs.MODEL_DIRECTORY)]


def _lay_out_run(path, state: str) -> None:
    """A ``--model_dir`` in ``state``: absent, empty, a marked finetune run, a run written
    before markers (checkpoints only), a pretrain run, the user's files, a user's
    experiment.yaml, a marked run whose best/ holds the user's files, or a file."""
    if state == "absent":
        return
    if state == "a_file":
        path.write_text("a user's file\n")
        return
    path.mkdir()
    if state in ("ours", "ours_best_users"):
        outputs.write_marker(str(path), RUN)
        (path / "ckpt-10.index").write_text("")
    if state == "ours_best_users":
        (path / "best").mkdir()
        (path / "best" / "notes.txt").write_text("mine\n")
    if state == "earlier_run":
        (path / "checkpoint").write_text('model_checkpoint_path: "ckpt-10"\n')
    if state == "other_run":
        outputs.write_marker(str(path), outputs.RUN_KINDS["albert-tf-pretrain"])
    if state == "user_files":
        (path / "notes.md").write_text("keep me\n")
    if state == "users_experiment":
        (path / "experiment.yaml").write_text("my: settings\n")


@pytest.mark.parametrize("state,refused", [
    ("absent", None), ("empty", None), ("ours", None), ("earlier_run", None),
    ("other_run", "is the run directory of albert-tf-pretrain, not the run directory of "
                  "albert-tf-finetune"),
    ("user_files", "holds files albert-tf did not write (notes.md)"),
    ("users_experiment", "holds files albert-tf did not write (experiment.yaml)"),
    ("ours_best_users", "--model_dir/best="),
    ("a_file", "exists and is not a directory")])
def test_a_run_directory_is_new_empty_or_a_run_of_the_same_command(tmp_path, state, refused):
    """`check_run_directory` before any work: the run's own kind (marked, or a run from
    before markers) is resumed; anything else is refused with nothing touched, best/ and
    final/ included; `mark_run_directory` records the kind once."""
    path = tmp_path / "run"
    _lay_out_run(path, state)
    before = snapshot(str(tmp_path))
    if refused:
        with pytest.raises(outputs.OutputError) as e:
            outputs.check_run_directory(str(path), kind=RUN, writes=RUN_WRITES)
        assert refused in str(e.value) and "\n" not in str(e.value)
        assert snapshot(str(tmp_path)) == before
        return
    assert outputs.check_run_directory(str(path), kind=RUN, writes=RUN_WRITES) == str(path)
    assert snapshot(str(tmp_path)) == before          # the check writes nothing
    outputs.mark_run_directory(str(path), RUN)
    assert outputs.marker_kind(str(path)) == RUN
    outputs.check_run_directory(str(path), kind=RUN, writes=RUN_WRITES)    # still ours


def test_a_benchmark_run_is_its_own_earlier_run_never_a_users_or_inside_an_export(tmp_path):
    """Issue #44 (fresh pass): albert-tf-benchmark --output_dir replaced a user's report.md
    and wrote report.md, results.json and artifacts/ into a TFLite export, checked only
    after 8 s of work. Its run directory (`RUN_KINDS`: ``benchmark run``) is new, empty, its
    own (marked, or from before markers: its results.json, or the exports in artifacts/),
    never a user's directory, another kind of output or a place inside one."""
    bench = outputs.RUN_KINDS["albert-tf-benchmark"]
    assert outputs.describe_kind(bench) == "the run directory of albert-tf-benchmark"
    user = tmp_path / "userbench"
    user.mkdir()
    (user / "report.md").write_text("my report\n")
    with pytest.raises(outputs.OutputError, match=r"holds files albert-tf did not write "
                       r"\(report.md\)"):
        outputs.check_run_directory(str(user), kind=bench, flag="--output_dir")
    (user / "results.json").write_text('{"my": "results"}')        # not the benchmark's
    with pytest.raises(outputs.OutputError, match="did not write"):
        outputs.check_run_directory(str(user), kind=bench, flag="--output_dir")
    earlier = tmp_path / "earlier"                  # written before markers
    earlier.mkdir()
    (earlier / "report.md").write_text("# CPU inference benchmark\n")
    (earlier / "results.json").write_text('{"meta": {"cpu": "AMD EPYC"}, "measurements": []}')
    assert outputs.check_run_directory(str(earlier), kind=bench, flag="--output_dir")
    partial = tmp_path / "partial" / "artifacts" / "model" / "tflite_dynamic" / "b1_s16"
    partial.mkdir(parents=True)                     # a run stopped while exporting
    outputs.write_marker(str(partial), outputs.export_kind("tflite"))
    assert outputs.check_run_directory(str(tmp_path / "partial"), kind=bench)
    export = tmp_path / "edge"
    export.mkdir()
    outputs.write_marker(str(export), outputs.export_kind("tflite"))
    (export / "model.tflite").write_bytes(b"TFL3")
    with pytest.raises(outputs.OutputError, match="is a tflite export .*not the run directory "
                       "of albert-tf-benchmark"):
        outputs.check_run_directory(str(export), kind=bench, flag="--output_dir")
    with pytest.raises(outputs.OutputError, match=r"--output_dir=.*edge/bench lies inside .*edge "
                       r"\(a tflite export \(albert-tf-export\)\), which albert-tf replaces "
                       "whole"):
        outputs.check_run_directory(str(export / "bench"), kind=bench, flag="--output_dir")
    assert not (export / "bench").exists()
    new = tmp_path / "runs" / "bench"
    outputs.check_run_directory(str(new), kind=bench, flag="--output_dir")
    outputs.mark_run_directory(str(new), bench)
    (new / "report.md").write_text("an earlier report\n")
    assert outputs.check_run_directory(str(new), kind=bench, flag="--output_dir")  # a rerun


def test_outputs_are_replaced_only_by_their_own_kind(tmp_path):
    """--overwrite never turns a trained model directory into an export (or a run
    directory, a conversion...); earlier names of kinds are read as today's."""
    target = tmp_path / "best"
    target.mkdir()
    outputs.write_marker(str(target), "albert-tf model directory")   # written before kinds
    (target / "weights.index").write_text("weights")
    for kind in (outputs.export_kind("tflite"), outputs.CONVERTED_MODEL,
                 outputs.KERAS_HUB_PRESET, outputs.RUN_KINDS["albert-tf-compress"]):
        with pytest.raises(outputs.OutputError, match="is an albert-tf model directory .*, "
                                                      "not .*; nothing was touched"):
            outputs.check_output(str(target), kind=kind, overwrite=True)
    assert outputs.check_output(str(target), kind=outputs.MODEL_DIRECTORY, overwrite=True)
    outputs.write_marker(str(target), "compressed tflite")          # compress, before kinds
    assert outputs.check_output(str(target), kind="tflite export", overwrite=True)
    outputs.write_marker(str(target), "wordpiece vocabulary")
    assert outputs.check_output(str(target), kind="sentencepiece vocabulary", overwrite=True)
    (target / outputs.MARKER_FILE).write_text("{not json")
    with pytest.raises(outputs.OutputError, match="records no kind"):
        outputs.check_output(str(target), kind=outputs.MODEL_DIRECTORY, overwrite=True)


def _in_mount_namespace(script: str) -> subprocess.CompletedProcess:
    """``script`` (bash) in a private mount namespace (``unshare -m``: its mounts vanish
    with it); skips where this machine cannot make one."""
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"no mount namespace here (unshare -m: {probe.stderr.decode().strip()})")
    return subprocess.run(["unshare", "-m", "bash", "-c", script], capture_output=True,
                          text=True)


def test_read_only_and_full_storage_are_refused_before_any_work(tmp_path):
    """A read-only file system (a bind mount, remounted read-only) is refused by the
    checks of every output, run directories included, naming the path; a full disk (a
    64 KiB tmpfs) is one line from `storage_problem` naming the file."""
    (tmp_path / "ro").mkdir()
    (tmp_path / "full").mkdir()
    code = (
        "import errno, os, sys\n"
        "from albert_tf import outputs\n"
        f"ro, full = {str(tmp_path / 'ro')!r}, {str(tmp_path / 'full')!r}\n"
        "for check in (lambda: outputs.check_output(ro + '/export', kind='tflite export'),\n"
        "              lambda: outputs.check_run_directory(ro + '/runs/x', kind='finetune run'),\n"
        "              lambda: outputs.check_location(ro)):\n"
        "    try:\n"
        "        check(); print('NOT REFUSED')\n"
        "    except outputs.OutputError as e:\n"
        "        print('refused:', e)\n"
        "try:\n"
        "    with outputs.staged_output(full + '/export', kind='test') as stage:\n"
        "        with open(stage + '/big', 'wb') as f:\n"
        "            f.write(b'x' * 200000)\n"
        "except outputs.OutputError as e:\n"
        "    print('full:', e, os.listdir(full))\n")
    script = (f"mount --bind {tmp_path / 'ro'} {tmp_path / 'ro'} && "
              f"mount -o remount,bind,ro {tmp_path / 'ro'} && "
              f"mount -t tmpfs -o size=64k tmpfs {tmp_path / 'full'} && "
              f"{sys.executable} {tmp_path / 'check.py'}")
    (tmp_path / "check.py").write_text(code)
    done = _in_mount_namespace(script)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 4 and "NOT REFUSED" not in done.stdout, done.stdout
    for line in lines[:3]:
        assert line.startswith("refused:") and "Read-only file system" in line, line
        assert str(tmp_path / "ro") in line and "nothing was written" in line
    assert lines[3].startswith(f"full: --output={tmp_path / 'full' / 'export'}: cannot write"), \
        lines[3]
    assert "the disk is full" in lines[3] and lines[3].endswith(" []"), lines[3]  # no stage left
    assert os.listdir(tmp_path / "ro") == []


# ---------------------------------------------------------------- the real commands
# The refusals of each command (--output=., ~, an input, a user's directory...) are rows of
# tests/test_command_failures.py; here what a successful write leaves.
@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """A tiny SST-2 model directory inside a finetune-like run directory."""
    from tests.compression_fixtures import tiny_model_dir
    run_dir = tmp_path_factory.mktemp("runs") / "sst2"
    run_dir.mkdir()
    (run_dir / "checkpoint").write_text("model_checkpoint_path: \"ckpt-10\"\n")
    return tiny_model_dir(str(run_dir / "best"), max_seq_length=16)


def _user_dir(path) -> dict:
    path.mkdir(parents=True, exist_ok=True)
    (path / "important.txt").write_text("do not delete\n")
    (path / "sub").mkdir(exist_ok=True)
    (path / "sub" / "notes.md").write_text("notes\n")
    return snapshot(str(path))


@pytest.mark.slow
def test_export_overwrites_only_its_own_output_with_umask_modes(tmp_path, model):
    work = tmp_path / "work"
    work.mkdir()
    env_umask = "umask 002 && "
    cmd = (f"{env_umask}{os.path.join(BIN, 'albert-tf-export')} --model_dir={model} "
           "--format=tflite --output=edge --seq_lengths=16")
    first = subprocess.run(cmd, shell=True, cwd=work, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    marker = json.loads((work / "edge" / outputs.MARKER_FILE).read_text())
    assert marker["writer"] == "albert-tf" and marker["kind"] == "tflite export"
    modes = {p: stat.S_IMODE(os.stat(work / "edge" / p).st_mode)
             for p in ["", "model.tflite", "metadata.json"]}
    assert modes == {"": 0o775, "model.tflite": 0o664, "metadata.json": 0o664}, modes
    again = subprocess.run(cmd, shell=True, cwd=work, capture_output=True, text=True)
    assert again.returncode != 0 and "pass --overwrite" in again.stderr, again.stderr
    (work / "edge" / "stale.txt").write_text("written by the earlier export's user?")
    replaced = subprocess.run(cmd + " --overwrite", shell=True, cwd=work, capture_output=True,
                              text=True)
    assert replaced.returncode == 0, replaced.stderr
    assert not (work / "edge" / "stale.txt").exists()     # the earlier output, replaced whole
    assert sorted(os.listdir(work)) == ["edge"]           # no staging directory left


@pytest.mark.slow
def test_saved_model_versions_are_readable_by_a_server_of_another_user(tmp_path, model):
    from albert_tf.export.saved_model import export_saved_model
    old = os.umask(0o022)
    try:
        path = export_saved_model(model, str(tmp_path / "serving"))
    finally:
        os.umask(old)
    for directory, dirs, files in os.walk(path):
        assert stat.S_IMODE(os.stat(directory).st_mode) == 0o755, directory
        for name in files:
            assert stat.S_IMODE(os.stat(os.path.join(directory, name)).st_mode) == 0o644, name
    assert os.path.basename(path) == "1"


def test_model_directories_of_training_refuse_a_users_directory(tmp_path):
    """save_model_dir (best/, final/, compress's model/) replaces its own earlier output
    and refuses anything else."""
    import albert_tf
    config = albert_tf.load_config("albert_tiny")
    encoder = albert_tf.build_encoder(config)
    first = albert_tf.save_model_dir(encoder, str(tmp_path / "best"), config)
    albert_tf.save_model_dir(encoder, first, config)           # its own: replaced
    assert outputs.is_albert_tf_output(first)
    user = _user_dir(tmp_path / "mine")
    with pytest.raises(outputs.OutputError, match="did not write"):
        albert_tf.save_model_dir(encoder, str(tmp_path / "mine"), config)
    assert snapshot(str(tmp_path / "mine")) == user


def test_pretraining_records_never_overwrite_a_users_file(tmp_path, data_dir):
    """--output_file: an input, a directory, or an existing file no albert-tf run wrote
    (no lock beside it) is refused with nothing touched; our own output is rewritten."""
    from albert_tf.data.pretraining_data import PretrainingConfig, create_pretraining_data
    from albert_tf.resources import DEFAULT_VOCAB, resolve
    corpus = tmp_path / "corpus.txt"
    with open(os.path.join(data_dir, "corpus", "imdb-unsup.txt"), encoding="utf-8") as f:
        corpus.write_text("".join(f.readline() for _ in range(40)), encoding="utf-8")
    vocab = resolve(DEFAULT_VOCAB)
    config = PretrainingConfig(max_seq_length=32, dupe_factor=1)
    users = tmp_path / "notes.tfrecord"
    users.write_text("a user's file\n")
    (tmp_path / "adir").mkdir()
    before = snapshot(str(tmp_path))
    for output, words in [(str(corpus), "is --input_file"), (str(tmp_path / "adir"), "directory"),
                          (str(users), "albert-tf did not write")]:
        with pytest.raises(outputs.OutputError, match=words):
            create_pretraining_data([str(corpus)], output, vocab, config, progress=False)
    assert snapshot(str(tmp_path)) == before
    ours = str(tmp_path / "records.tfrecord")
    first = create_pretraining_data([str(corpus)], ours, vocab, config, progress=False)
    again = create_pretraining_data([str(corpus)], ours, vocab, config, progress=False)
    assert first["instances"] == again["instances"] > 0 and os.path.getsize(ours) > 0
