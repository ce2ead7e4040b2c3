"""One path's conditions as one value, spelt as one line: ``rtt=300ms,bw=2mbit,loss=0.01``.

A "what if" names a network: the page-load model predicts a recorded page on it
(``workbench fidelity --at``) and the lab emulates it (``workbench lab``), so both read the
same spelling, checked once here: ``rtt`` (round trip, required), ``bw`` (bottleneck rate,
``none`` for unlimited; required), ``loss`` (a probability or ``ge:P,R[,h,k]``; default 0)
and ``queue`` (drop-tail bytes; default unlimited), each with the unit and the check of the
flag of the same name.  ``str()`` gives the canonical spelling back, which is what results
carry.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from ..errors import InputError
from ..units import parse_bandwidth, parse_duration, parse_size

__all__ = ["PathConditions"]

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
        from .link import parse_loss

        if not (math.isfinite(self.rtt_s) and self.rtt_s > 0):
            raise InputError(f"the RTT must be a positive duration, got {self.rtt_s!r} s.")
        if self.bandwidth_bps is not None and not (math.isfinite(self.bandwidth_bps) and self.bandwidth_bps > 0):
            raise InputError(f"the bandwidth must be positive (none = unlimited), got {self.bandwidth_bps!r}.")
        if self.queue_bytes is not None and self.queue_bytes <= 0:
            raise InputError(f"the queue must be positive (omit it for unlimited), got {self.queue_bytes!r}.")
        parse_loss(self.loss, random.Random(0))

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
                raise InputError(f"cannot read {item!r} in conditions {text!r}: give key=value items "
                                 f"({', '.join(_KEYS)}), e.g. rtt=100ms,bw=10mbit,loss=0.01")
            key, value = (s.strip() for s in item.split("=", 1))
            if key not in _KEYS:
                raise InputError(f"unknown condition {key!r} in {text!r} (choose from {', '.join(_KEYS)})")
            if key in given:
                raise InputError(f"{key} is given twice in conditions {text!r}")
            given[key] = value
        missing = [k for k in ("rtt", "bw") if k not in given]
        if missing:
            raise InputError(f"conditions {text!r} lack {' and '.join(missing)} (e.g. rtt=100ms,bw=10mbit)")
        return cls(rtt_s=parse_duration(given["rtt"], require_unit=True),
                   bandwidth_bps=parse_bandwidth(given["bw"], require_unit=True),
                   loss=given.get("loss", "0"),
                   queue_bytes=parse_size(given["queue"]) if "queue" in given else None)

    def __str__(self) -> str:
        text = f"rtt={_fmt_duration(self.rtt_s)},bw={_fmt_rate(self.bandwidth_bps)}"
        if self.loss not in ("0", "0.0", ""):
            text += f",loss={self.loss}"
        if self.queue_bytes is not None:
            text += f",queue={self.queue_bytes}"
        return text
