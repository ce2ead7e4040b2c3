"""What the lab's tests need on this machine (root, /dev/net/tun, the built relay, Chromium):
``WHY`` names the first that is missing (None: all there), ``needs_lab`` skips with it."""

from __future__ import annotations

import os

import pytest

from simulator.lab.link import relay_available

WHY = (
    "not root"
    if os.geteuid() != 0
    else "no /dev/net/tun"
    if not os.path.exists("/dev/net/tun")
    else "the relay is not built"
    if not relay_available()
    else "no Chromium at /usr/bin/chromium (make system-deps)"
    if not os.path.exists("/usr/bin/chromium")
    else None
)
needs_lab = pytest.mark.skipif(
    WHY is not None, reason=f"the lab needs root, /dev/net/tun, its relay and Chromium: {WHY}"
)
