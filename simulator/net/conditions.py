"""The network as one value: ``Network`` (what a model runs on) and ``PathConditions`` (a
"what if" spelt as one line, ``rtt=300ms,bw=2mbit,loss=0.01``).  Written by hand.

``Network``, as h2's ``H2Configuration`` and aioquic's ``QuicConfiguration``: one immutable
value holding the path (RTT, bottleneck bandwidth, drop-tail queue, loss model, jitter),
the transport's congestion control, TLS on TCP and the seed.  It is built and checked once
where input enters (a study's parameters: a flag, a grid value, a notebook panel and a
Python call all build those), with the loss spelling read once into a ``LossSpec``
(``check_network`` is the one check); every layer below takes the value and trusts it,
and ``Network.path`` is the one place a model's ``Path`` is built from it.


A "what if" names a network: the page-load model predicts a recorded page on it
(``workbench fidelity --at``) and the lab emulates it (``workbench lab``), so both read the
same spelling, checked once here: ``rtt`` (round trip, required), ``bw`` (bottleneck rate,
``none`` for unlimited; required), ``loss`` (a probability or ``ge:P,R[,h,k]``; default 0)
and ``queue`` (drop-tail bytes; default unlimited), each with the unit and the check of the
flag of the same name.  ``str()`` gives the canonical spelling back, which is what results
carry.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import math
from dataclasses import dataclass

from ..engine import Simulator
from ..errors import InputError
from ..units import parse_bandwidth, parse_duration, parse_size
from .link import Jitter, LossSpec, Path

__all__ = [
    "Network",
    "NETWORK_FIELDS",
    "CC_CHOICES",
    "check_network",
    "handing_over",
    "network_of",
    "adopt_network",
    "network_fields",
    "PathConditions",
]

CC_CHOICES = ("reno", "cubic")  # the transport models' congestion controllers (net.cc)
# The fields a study's parameters may declare flat (``replace(params, rtt_s=0.05)``).
NETWORK_FIELDS = ("rtt_s", "bandwidth_bps", "loss", "queue_bytes", "jitter", "cc", "tls", "seed")


def check_network(net: "Network") -> None:
    """The one check of a network value (``Network.__post_init__`` runs it; nothing below
    checks again).  Reads the loss spelling into a ``LossSpec`` in place."""
    # Each message names the flag and the field: the same check serves the CLI, a grid and a call.
    if not (math.isfinite(net.rtt_s) and net.rtt_s > 0):
        raise InputError(f"the RTT (--rtt, rtt_s) must be positive, got {net.rtt_s:g} s")
    if net.bandwidth_bps is not None and not (math.isfinite(net.bandwidth_bps) and net.bandwidth_bps > 0):
        raise InputError(
            f"the bandwidth (--bw, bandwidth_bps) must be positive (none = unlimited), got {net.bandwidth_bps:g} bit/s"
        )
    if net.queue_bytes is not None and not net.queue_bytes > 0:
        raise InputError(f"the queue (queue_bytes) must be positive (None = unlimited), got {net.queue_bytes} bytes")
    if net.cc not in CC_CHOICES:
        raise InputError(f"unknown congestion control (--cc, cc) {net.cc!r} (choose {' or '.join(CC_CHOICES)})")
    object.__setattr__(net, "loss", LossSpec.parse(net.loss))  # a bad loss spec fails here, before any work


# Fields with no rule to check: a checked value with another of these needs no new check.
_UNCHECKED = ("seed", "tls")
# The checked network handed to parameters built from checked ones (``handing_over``).
_HANDED: contextvars.ContextVar = contextvars.ContextVar("handed_network", default=None)


@contextlib.contextmanager
def handing_over(network: "Network"):
    """Parameters built inside take ``network`` (already checked) when their network fields
    hold its values, instead of building and checking their own: a study's parameters
    handing their network to the page-load model's or a stack's, or to a ``replace``."""
    token = _HANDED.set(network)
    try:
        yield
    finally:
        _HANDED.reset(token)


def network_of(fields: dict) -> "Network":
    """The network of parameters being built from ``fields`` (``Network`` keywords): the one
    handed over when it holds them (another seed or TLS only: a copy with those), else a new
    value, checked."""
    handed = _HANDED.get()
    if handed is not None:
        if handed.holds(fields):
            return handed
        if handed.holds({k: v for k, v in fields.items() if k not in _UNCHECKED}):
            return handed.but(**{k: v for k, v in fields.items() if k in _UNCHECKED})
    return Network(**fields)


def adopt_network(params, fields: dict | None = None) -> "Network":
    """In a frozen parameters dataclass's ``__post_init__``: its network (``network_of`` its
    ``fields``, default its flat ones) kept as ``params._network``, and a ``LossSpec`` in
    its ``loss`` field put back as the spelling results carry."""
    network = network_of(network_fields(params) if fields is None else fields)
    object.__setattr__(params, "_network", network)
    if isinstance(getattr(params, "loss", None), LossSpec):
        object.__setattr__(params, "loss", str(params.loss))
    return network


def network_fields(params) -> dict:
    """The ``Network`` fields ``params`` declares flat."""
    return {k: getattr(params, k) for k in NETWORK_FIELDS if hasattr(params, k)}


@dataclass(frozen=True)
class Network:
    """The network a model runs on: the path (RTT, bottleneck bandwidth, queue, loss model,
    jitter), the transport's congestion control, TLS on TCP, and the seed of every draw.
    Checked once when built; ``loss`` may be given as its spelling and is kept as a ``LossSpec``."""

    rtt_s: float = 0.100
    bandwidth_bps: float | None = 10e6  # None: unlimited
    loss: LossSpec = LossSpec()  # "0.01" Bernoulli, "ge:P,R[,h,k]" Gilbert-Elliott
    queue_bytes: int | None = None  # drop-tail bytes (None: unlimited)
    jitter: Jitter | None = None  # extra delay of some packets (reorders)
    cc: str = "reno"
    tls: bool = True  # h2 over TLS 1.3 (False: cleartext, prior knowledge)
    seed: int = 1

    def __post_init__(self) -> None:
        check_network(self)

    def but(self, **changes) -> "Network":
        """This value with another seed or TLS choice, fields with no rule to check (the rest
        was checked)."""
        if set(changes) - set(_UNCHECKED):
            raise TypeError(f"only {', '.join(_UNCHECKED)} change without a check")
        other = copy.copy(self)
        for k, v in changes.items():
            object.__setattr__(other, k, v)
        return other

    def holds(self, fields: dict) -> bool:
        """Whether this value has these field values (a comparison, not a check)."""
        for k, v in fields.items():
            mine = getattr(self, k)
            if (str(mine) != str(v)) if k == "loss" else (mine != v):
                return False
        return True

    def path(
        self,
        sim: Simulator,
        *,
        name: str = "path",
        rtt_s: float | None = None,
        queue_bytes: int | None | str = "same",
        mtu_bytes: int = 1500,
    ) -> Path:
        """A two-way ``Path`` on this network (the one place a model builds one): ``rtt_s``
        and ``queue_bytes`` when a model's own path differs (a hop, a demux path)."""
        return Path(
            sim,
            rtt_s=self.rtt_s if rtt_s is None else rtt_s,
            bandwidth_bps=self.bandwidth_bps,
            queue_bytes=self.queue_bytes if queue_bytes == "same" else queue_bytes,
            mtu_bytes=mtu_bytes,
            loss=self.loss,
            jitter=self.jitter,
            name=name,
        )


_KEYS = ("rtt", "bw", "loss", "queue")


def _fmt_duration(s: float) -> str:
    ms = s * 1e3
    return f"{ms:g}ms"


def _fmt_rate(bps: float | None) -> str:
    if bps is None:
        return "none"
    return f"{bps / 1e6:g}mbit"


@dataclass(frozen=True)
class PathConditions:
    """RTT, bottleneck bandwidth (None: unlimited), loss spec and queue of one path."""

    rtt_s: float
    bandwidth_bps: float | None
    loss: str = "0"
    queue_bytes: int | None = None

    def __post_init__(self) -> None:
        if not (math.isfinite(self.rtt_s) and self.rtt_s > 0):
            raise InputError(f"the RTT must be a positive duration, got {self.rtt_s!r} s.")
        if self.bandwidth_bps is not None and not (math.isfinite(self.bandwidth_bps) and self.bandwidth_bps > 0):
            raise InputError(f"the bandwidth must be positive (none = unlimited), got {self.bandwidth_bps!r}.")
        if self.queue_bytes is not None and self.queue_bytes <= 0:
            raise InputError(f"the queue must be positive (omit it for unlimited), got {self.queue_bytes!r}.")
        LossSpec.parse(self.loss)

    @classmethod
    def parse(cls, text: str) -> "PathConditions":
        """From ``rtt=...,bw=...[,loss=...][,queue=...]`` (the flags' spellings)."""
        given: dict[str, str] = {}
        # A Gilbert-Elliott loss has commas of its own: the items after loss=ge: that hold
        # no '=' belong to it.
        for item in (t.strip() for t in str(text).split(",")):
            if not item:
                continue
            if "=" not in item:
                if given.get("loss", "").lower().startswith("ge:"):
                    given["loss"] += "," + item
                    continue
                raise InputError(
                    f"cannot read {item!r} in conditions {text!r}: give key=value items "
                    f"({', '.join(_KEYS)}), e.g. rtt=100ms,bw=10mbit,loss=0.01"
                )
            key, value = (s.strip() for s in item.split("=", 1))
            if key not in _KEYS:
                raise InputError(f"unknown condition {key!r} in {text!r} (choose from {', '.join(_KEYS)})")
            if key in given:
                raise InputError(f"{key} is given twice in conditions {text!r}")
            given[key] = value
        missing = [k for k in ("rtt", "bw") if k not in given]
        if missing:
            raise InputError(f"conditions {text!r} lack {' and '.join(missing)} (e.g. rtt=100ms,bw=10mbit)")
        return cls(
            rtt_s=parse_duration(given["rtt"], require_unit=True),
            bandwidth_bps=parse_bandwidth(given["bw"], require_unit=True),
            loss=given.get("loss", "0"),
            queue_bytes=parse_size(given["queue"]) if "queue" in given else None,
        )

    def __str__(self) -> str:
        text = f"rtt={_fmt_duration(self.rtt_s)},bw={_fmt_rate(self.bandwidth_bps)}"
        if self.loss not in ("0", "0.0", ""):
            text += f",loss={self.loss}"
        if self.queue_bytes is not None:
            text += f",queue={self.queue_bytes}"
        return text
