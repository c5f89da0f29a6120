#!/usr/bin/env bash
# Debian's Bazel for `make bazel`: bazel-bootstrap (4.2.3, with the system JDK), installed with
# apt-get where it can (root, or passwordless sudo); otherwise says how and fails. Nothing else
# is needed: the rule repositories Bazel would download are local stand-ins under third_party/
# (WORKSPACE), and the Python is the project's .venv (bazel/python_venv.bzl).
set -euo pipefail
command -v bazel >/dev/null && exit 0
if command -v apt-get >/dev/null; then
  run=""
  [ "$(id -u)" = 0 ] || { sudo -n true 2>/dev/null && run="sudo -n"; }
  if [ "$(id -u)" = 0 ] || [ -n "$run" ]; then
    $run apt-get install -y -q bazel-bootstrap >/dev/null 2>&1 \
      || { $run apt-get update -q >/dev/null 2>&1 && $run apt-get install -y -q bazel-bootstrap >/dev/null; } \
      || true
    command -v bazel >/dev/null && { echo "installed bazel-bootstrap (apt-get): $(dpkg-query -W -f='${Version}' bazel-bootstrap)"; exit 0; }
  fi
fi
cat >&2 <<'MSG'
make bazel needs Bazel 4.2 (Debian/Ubuntu: sudo apt-get install bazel-bootstrap) and could
not install it. Install it, then rerun make bazel. (Bazel 5 and later read WORKSPACE too, but
only Debian's 4.2.3 was tried; see docs/setup.md#bazel.)
MSG
exit 1
