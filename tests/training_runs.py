"""Shared by the tests that run training in worker processes (distributed, resume, faults)."""

from __future__ import annotations

import os
import socket


def free_ports(n: int) -> list[int]:
    """``n`` TCP ports on 127.0.0.1 that were free a moment ago (for a local TF_CONFIG)."""
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def reported_checkpoint_step(model_dir) -> int:
    """The step of the newest checkpoint the manager has recorded in its state file
    (``checkpoint``), 0 when none: a ``ckpt-N.index`` on disk is not yet complete until
    the manager names it there."""
    try:
        with open(os.path.join(model_dir, "checkpoint"), encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return 0
    for line in text.splitlines():
        if line.startswith("model_checkpoint_path:"):
            return int(line.split('"')[1].rsplit("-", 1)[1])
    return 0
