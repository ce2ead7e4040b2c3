"""Which implementation of the TCP model's per-packet path new objects get: C or Python.

The links of a ``Path`` (and of a ``DelayedPath`` over it) and the endpoints of a
``TcpConnection`` have two implementations with one behaviour: the Python reference in
``link.py``, ``tcp.py`` and ``cc.py``, and its C twin ``simulator.net._tcp`` (built with
the package; see the comment at the top of ``_tcp.c``).  Both push the same events in the
same order and compute every number the same way, so results are byte-identical
(``tests/test_net_native.py`` runs both).

``IMPLEMENTATION`` is the default for objects made without an explicit
``implementation=``: ``"c"`` when the extension is built, ``"python"`` when it is not or
when ``WORKBENCH_PURE_PYTHON=1`` (as for the engine's event queue) or
``WORKBENCH_NET=python``.  ``WORKBENCH_NET_EXT`` loads the extension from another build
(``make asan``).
"""

from __future__ import annotations

import os
from typing import Any

from .._extension import load_extension

__all__ = ["C", "IMPLEMENTATION", "IMPLEMENTATIONS", "resolve"]


def _load() -> Any:
    return load_extension("simulator.net._tcp", "WORKBENCH_NET_EXT")


C = _load()
IMPLEMENTATIONS: tuple[str, ...] = ("python", "c") if C is not None else ("python",)
_FORCE_PYTHON = (os.environ.get("WORKBENCH_PURE_PYTHON", "") not in ("", "0")
                 or os.environ.get("WORKBENCH_NET", "") == "python")
IMPLEMENTATION = "c" if C is not None and not _FORCE_PYTHON else "python"


def resolve(implementation: str | None) -> str:
    """``implementation``, or the default when None; a clear error when it is not available."""
    name = implementation or IMPLEMENTATION
    if name not in IMPLEMENTATIONS:
        raise LookupError(f"net implementation {name!r} is not available (have: {', '.join(IMPLEMENTATIONS)})")
    return name
