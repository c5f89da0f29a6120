"""A Python toolchain for the project's virtualenv (Bazel 4.2, WORKSPACE).

`python_venv(name = "python_venv")` makes @python_venv//:toolchain, a py_runtime_pair whose
PY3 runtime is `<workspace>/.venv/bin/python` (or the interpreter named by
$ALBERT_TF_BAZEL_PYTHON). py_runtime wants an absolute interpreter_path, which a checked-in
BUILD file cannot name for every checkout; a repository rule can.
"""

_BUILD = """\
load("@bazel_tools//tools/python:toolchain.bzl", "py_runtime_pair")

py_runtime(
    name = "py3_runtime",
    interpreter_path = "{python}",
    python_version = "PY3",
    stub_shebang = "#!{python}",
)

py_runtime_pair(
    name = "runtime_pair",
    py3_runtime = ":py3_runtime",
)

toolchain(
    name = "toolchain",
    toolchain = ":runtime_pair",
    toolchain_type = "@bazel_tools//tools/python:toolchain_type",
)
"""

def _python_venv_impl(rctx):
    python = rctx.os.environ.get("ALBERT_TF_BAZEL_PYTHON", "")
    if not python:
        workspace_root = rctx.path(Label("@//:WORKSPACE")).dirname
        python = "%s/.venv/bin/python" % workspace_root
    if not rctx.path(python).exists:
        fail("no Python at %s: create the virtualenv (`make install`) or set " % python +
             "ALBERT_TF_BAZEL_PYTHON to an interpreter with the project's dependencies")
    rctx.file("WORKSPACE", 'workspace(name = "%s")\n' % rctx.name)
    rctx.file("BUILD", _BUILD.format(python = python))

python_venv = repository_rule(
    implementation = _python_venv_impl,
    environ = ["ALBERT_TF_BAZEL_PYTHON"],
    local = True,
)
