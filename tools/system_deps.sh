#!/usr/bin/env bash
# The one system library of the mobile SDK test environment (.venv-sdk, make sdk): libusb-1.0,
# which tflite-support's native modules link (the TFLite Task Library that the tests run our
# exports with). albert-tf itself needs none: its TFLite exports write the SDK metadata
# without tflite-support. Installs it with apt-get where it can (root, or passwordless sudo);
# otherwise says how and fails.  (make sdk runs this.)
set -euo pipefail
have() { ldconfig -p 2>/dev/null | grep -q 'libusb-1\.0\.so\.0'; }
have && exit 0
if command -v apt-get >/dev/null; then
  run=""
  [ "$(id -u)" = 0 ] || { sudo -n true 2>/dev/null && run="sudo -n"; }
  if [ "$(id -u)" = 0 ] || [ -n "$run" ]; then
    $run apt-get install -y -q libusb-1.0-0 >/dev/null 2>&1 \
      || { $run apt-get update -q >/dev/null 2>&1 && $run apt-get install -y -q libusb-1.0-0 >/dev/null; } \
      || true
    have && { echo "installed the system library libusb-1.0-0 (apt-get)"; exit 0; }
  fi
fi
cat >&2 <<'MSG'
The mobile SDK test environment (.venv-sdk) needs the system library libusb-1.0 (the TFLite
Task Library in tflite-support links it) and could not install it. Install it, then rerun
make:
  Debian/Ubuntu: sudo apt-get install libusb-1.0-0     Fedora/RHEL: sudo dnf install libusbx
  macOS: brew install libusb
MSG
exit 1
