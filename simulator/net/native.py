"""Which implementation of the TCP and QUIC models' per-packet paths new objects get: C or Python.

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

The QUIC model's endpoints likewise: the Python reference ``quic.QuicEndpoint`` and
``quic.native.NativeQuicEndpoint``, whose loss recovery, ACK ranges, pacer and window are
the C twin ``simulator.net._quic`` (``QUIC``; ``QUIC_IMPLEMENTATION`` is its default, by the
same switches; ``WORKBENCH_QUIC_EXT`` loads another build; ``tests/test_net_quic_native.py``
runs both).
"""

from __future__ import annotations

import os
from typing import Any

from .._extension import load_extension

__all__ = ["C", "IMPLEMENTATION", "IMPLEMENTATIONS", "resolve", "QUIC", "QUIC_IMPLEMENTATION",
           "QUIC_IMPLEMENTATIONS", "resolve_quic"]


def _load() -> Any:
    return load_extension("simulator.net._tcp", "WORKBENCH_NET_EXT")


C = _load()
QUIC = load_extension("simulator.net._quic", "WORKBENCH_QUIC_EXT")
IMPLEMENTATIONS: tuple[str, ...] = ("python", "c") if C is not None else ("python",)
_FORCE_PYTHON = (os.environ.get("WORKBENCH_PURE_PYTHON", "") not in ("", "0")
                 or os.environ.get("WORKBENCH_NET", "") == "python")
IMPLEMENTATION = "c" if C is not None and not _FORCE_PYTHON else "python"
QUIC_IMPLEMENTATIONS: tuple[str, ...] = ("python", "c") if QUIC is not None else ("python",)
QUIC_IMPLEMENTATION = "c" if QUIC is not None and not _FORCE_PYTHON else "python"


def resolve(implementation: str | None) -> str:
    """``implementation``, or the default when None; a clear error when it is not available."""
    name = implementation or IMPLEMENTATION
    if name not in IMPLEMENTATIONS:
        raise LookupError(f"net implementation {name!r} is not available (have: {', '.join(IMPLEMENTATIONS)})")
    return name


def resolve_quic(implementation: str | None) -> str:
    """``resolve`` for the QUIC model's endpoints (``simulator.net._quic``)."""
    name = implementation or QUIC_IMPLEMENTATION
    if name not in QUIC_IMPLEMENTATIONS:
        raise LookupError(f"QUIC implementation {name!r} is not available (have: {', '.join(QUIC_IMPLEMENTATIONS)})")
    return name
