"""One-direction links, loss models and a two-way path.

Written by hand (no maintained library models a link inside our engine).  A ``Link``
has a propagation delay, an optional bottleneck bandwidth (serialization, one packet on
the wire at a time), a finite drop-tail queue counted in bytes, an MTU, a loss model and
optional jitter.  Jitter follows the 2017 HOL simulator: with probability ``prob`` a
packet gets an extra delay drawn from U(0, max_s), which reorders packets.

Loss models draw from their own random stream: ``NoLoss``, ``Bernoulli(p)`` and the
two-state ``GilbertElliott`` chain (Good/Bad, each with its own loss probability) for
bursty loss.  With ``loss_bad = 1`` and ``loss_good = 0`` the mean loss-burst length is
``1 / p_bad_to_good`` packets and the long-run loss rate ``p_gb / (p_gb + p_bg)``.

``Link``, ``Packet``, ``LinkStats`` and ``_DelayedLink`` here are the reference; the
links a ``Path`` builds (``make_link``) are their C twins from ``simulator.net._tcp``
when it is built (``native.IMPLEMENTATION``), with the same behaviour and results.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable

from ..engine import Simulator
from ..errors import InputError
from ..units import parse_number
from . import native

__all__ = [
    "Packet",
    "LossModel",
    "NoLoss",
    "Bernoulli",
    "GilbertElliott",
    "DropList",
    "Jitter",
    "Link",
    "Path",
    "DelayedPath",
    "LossSpec",
    "parse_loss",
    "make_link",
]


@dataclass(slots=True)
class Packet:
    """A packet on a link.  ``payload`` is the transport's own object (segment, QUIC packet)."""

    size_bytes: int
    payload: Any = None
    link_seq: int = 0  # index on its link, set by Link.send
    sent_s: float = 0.0
    arrived_s: float | None = None
    lost: bool = False


class LossModel:
    """Decides, packet by packet in send order, whether a packet is lost."""

    def lost(self) -> bool:  # pragma: no cover - interface
        """Draw the fate of the next packet sent: True when it is lost."""
        raise NotImplementedError

    @property
    def mean_loss_rate(self) -> float:  # pragma: no cover - interface
        """The long-run fraction of packets lost."""
        raise NotImplementedError


class NoLoss(LossModel):
    """Loses nothing."""

    def lost(self) -> bool:
        """Never lost."""
        return False

    @property
    def mean_loss_rate(self) -> float:
        """Always 0."""
        return 0.0

    def __repr__(self) -> str:
        return "NoLoss()"


if native.C is not None:
    native.C.register_no_loss(NoLoss)  # the C link never asks NoLoss (it never loses)


class Bernoulli(LossModel):
    """Independent loss with probability ``p`` per packet (``p`` in [0, 1), as ``LossSpec`` checks)."""

    __slots__ = ("p", "_random")  # the C link reads both per packet, at their slots' offsets

    def __init__(self, p: float, rng: random.Random) -> None:
        self.p = p
        self._random = rng.random

    def lost(self) -> bool:
        """True with probability ``p``, independently of earlier packets."""
        return self.p > 0.0 and self._random() < self.p

    @property
    def mean_loss_rate(self) -> float:
        """``p``."""
        return self.p

    def __repr__(self) -> str:
        return f"Bernoulli(p={self.p})"


if native.C is not None:
    native.C.register_bernoulli(Bernoulli)  # the C link draws ``lost`` itself: the same draw, no Python call


class GilbertElliott(LossModel):
    """Two-state Markov loss: Good -> Bad with ``p_gb``, Bad -> Good with ``p_bg`` per packet
    (probabilities, ``p_bg`` above 0, as ``LossSpec`` checks)."""

    def __init__(
        self, p_gb: float, p_bg: float, rng: random.Random, loss_good: float = 0.0, loss_bad: float = 1.0
    ) -> None:
        self.p_gb, self.p_bg = p_gb, p_bg
        self.loss_good, self.loss_bad = loss_good, loss_bad
        self.bad = False
        self._random = rng.random

    def lost(self) -> bool:
        """Move the Good/Bad chain one step, then draw the loss with the new state's probability."""
        # Transition first, then draw the loss in the new state (Gilbert's convention).
        r = self._random
        if self.bad:
            if r() < self.p_bg:
                self.bad = False
        elif r() < self.p_gb:
            self.bad = True
        p = self.loss_bad if self.bad else self.loss_good
        return p > 0.0 and r() < p

    @property
    def mean_loss_rate(self) -> float:
        """The stationary loss rate: pi_bad * loss_bad + (1 - pi_bad) * loss_good, pi_bad = p_gb / (p_gb + p_bg)."""
        pi_bad = self.p_gb / (self.p_gb + self.p_bg) if self.p_gb + self.p_bg else 0.0
        return pi_bad * self.loss_bad + (1 - pi_bad) * self.loss_good

    @property
    def mean_burst_packets(self) -> float:
        """Expected run of consecutive losses with loss_bad = 1, loss_good = 0."""
        return 1.0 / self.p_bg

    def __repr__(self) -> str:
        return f"GilbertElliott(P={self.p_gb}, R={self.p_bg}, h={self.loss_good}, k={self.loss_bad})"


class DropList(LossModel):
    """Drops exactly the packets with the given 0-based send indices (for tests and what-ifs)."""

    def __init__(self, indices) -> None:
        self.indices = frozenset(indices)
        self._n = 0

    def lost(self) -> bool:
        """True when this packet's 0-based send index is in ``indices``."""
        i = self._n
        self._n += 1
        return i in self.indices

    @property
    def mean_loss_rate(self) -> float:
        """0: a drop list has no long-run rate."""
        return 0.0

    def __repr__(self) -> str:
        return f"DropList({sorted(self.indices)})"


@dataclass(frozen=True)
class LossSpec:
    """A loss model as a value: read once from its spelling where input enters (``--loss``,
    a grid value, a panel), then handed down and trusted; ``model(rng)`` makes the
    stateful ``LossModel`` of one link direction from it.  ``str()`` is the spelling as
    given (``"0.01"``, ``"1%"``, ``"ge:0.01,0.3"``), which is what results carry."""

    text: str = "0"
    p: float = 0.0  # Bernoulli probability, or Gilbert-Elliott P (good -> bad)
    r: float | None = None  # Gilbert-Elliott R (bad -> good); None: Bernoulli
    loss_good: float = 0.0
    loss_bad: float = 1.0

    @classmethod
    def parse(cls, spec: "str | float | None | LossSpec") -> "LossSpec":
        """From ``0``, ``0.01``, ``1%`` (Bernoulli) or ``ge:P,R[,h,k]`` (Gilbert-Elliott); the
        one reader of the spelling and the one check of its ranges."""
        if isinstance(spec, LossSpec):
            return spec
        if spec is None:
            return cls("0")
        text = str(spec)
        low = text.strip().lower()
        try:
            # ASCII digits only (float() also takes "٠.٠١"); nan is not a probability
            if low.startswith("ge:"):
                parts = [parse_number(x) for x in low[3:].split(",")]
                if len(parts) not in (2, 4):
                    raise ValueError
            else:
                p = parse_number(low.rstrip("%")) / (100.0 if low.endswith("%") else 1.0)
        except (ValueError, InputError):
            raise InputError(
                f"cannot read loss {spec!r}: give a probability like 0.01 or 1%, "
                "or Gilbert-Elliott as ge:P,R or ge:P,R,h,k"
            ) from None
        if not low.startswith("ge:"):
            if not 0.0 <= p < 1.0:
                raise InputError(f"loss probability must be in [0, 1), got {p}")
            return cls(text, p)
        p_gb, p_bg = parts[0], parts[1]
        loss_good, loss_bad = (parts[2], parts[3]) if len(parts) == 4 else (0.0, 1.0)
        for name, v in (
            ("P (good->bad)", p_gb),
            ("R (bad->good)", p_bg),
            ("loss in good state", loss_good),
            ("loss in bad state", loss_bad),
        ):
            if not 0.0 <= v <= 1.0:
                raise InputError(f"Gilbert-Elliott {name} must be in [0, 1], got {v}")
        if p_bg == 0.0:
            raise InputError("Gilbert-Elliott R (bad->good) must be above 0, or the channel never recovers")
        return cls(text, p_gb, p_bg, loss_good, loss_bad)

    @property
    def gilbert_elliott(self) -> bool:
        """Whether this is the two-state bursty model (else independent loss)."""
        return self.r is not None

    @property
    def none(self) -> bool:
        """Whether nothing is ever lost."""
        return self.r is None and self.p == 0.0

    def model(self, rng: random.Random) -> LossModel:
        """A fresh loss model of one link direction drawing from ``rng``."""
        if self.r is not None:
            return GilbertElliott(self.p, self.r, rng, loss_good=self.loss_good, loss_bad=self.loss_bad)
        return NoLoss() if self.p == 0.0 else Bernoulli(self.p, rng)

    def __str__(self) -> str:
        return self.text


def parse_loss(spec: str | float | None, rng: random.Random) -> LossModel:
    """Loss model from a spelling (``LossSpec.parse`` then ``model``): for tests and one-off links."""
    return LossSpec.parse(spec).model(rng)


@dataclass(slots=True)
class Jitter:
    """With probability ``prob`` a packet is delayed by an extra U(0, ``max_s``) (reorders)."""

    prob: float = 0.05
    max_s: float = 0.100

    def __post_init__(self) -> None:
        # A negative extra delay would schedule an arrival before its departure.
        if not 0.0 <= self.prob <= 1.0 or not self.max_s >= 0.0:
            raise InputError(
                f"jitter needs a probability in [0, 1] and a delay >= 0 s, got {self.prob} and {self.max_s} s"
            )


@dataclass
class LinkStats:
    """Counters of one link: packets sent, lost on the wire, dropped at the queue; bytes; peak queue bytes."""

    packets_sent: int = 0
    packets_lost: int = 0  # lost on the wire (loss model)
    packets_dropped: int = 0  # dropped at the full queue (drop-tail)
    bytes_sent: int = 0
    bytes_delivered: int = 0
    max_queue_bytes: int = 0


class Link:
    """One direction of a path.  ``send(packet, deliver)`` calls ``deliver(packet)`` on arrival."""

    def __init__(
        self,
        sim: Simulator,
        name: str,
        *,
        delay_s: float,
        bandwidth_bps: float | None = None,
        queue_bytes: int | None = None,
        mtu_bytes: int = 1500,
        loss: LossModel | None = None,
        jitter: Jitter | None = None,
    ) -> None:
        _check_link(delay_s, bandwidth_bps)
        self.sim = sim
        self.name = name
        self.delay_s = delay_s
        self.bandwidth_bps = bandwidth_bps
        self.queue_bytes = queue_bytes
        self.mtu_bytes = mtu_bytes
        self.loss = loss or NoLoss()
        self.jitter = jitter
        self._jitter_rng = sim.rng(f"{name}/jitter")
        self._busy_until_s = 0.0
        self._queue: deque[tuple[float, int]] = deque()  # (departure start, size) of queued packets
        self._queued_bytes = 0
        self.stats = LinkStats()
        # Observers see every packet: (packet) after its fate is known (pcap writers, logs).
        self.observers: list[Callable[[Packet], None]] = []

    def send(self, packet: Packet, deliver: Callable[[Packet], None]) -> bool:
        """Put ``packet`` on the link.  Returns False when it was dropped at the queue."""
        size_bytes = packet.size_bytes
        if size_bytes > self.mtu_bytes:
            raise ValueError(f"{self.name}: packet of {size_bytes} B exceeds MTU {self.mtu_bytes} B")
        sim = self.sim
        now = sim.now
        stats = self.stats
        packet.link_seq = stats.packets_sent
        packet.sent_s = now
        stats.packets_sent += 1
        stats.bytes_sent += size_bytes
        bandwidth_bps = self.bandwidth_bps
        if bandwidth_bps is None:
            depart_s = now
        else:
            queue = self._queue
            while queue and queue[0][0] <= now:  # started transmitting: no longer queued
                self._queued_bytes -= queue.popleft()[1]
            start_s = self._busy_until_s
            if start_s > now:  # the link is busy: wait in the queue
                if self.queue_bytes is not None and self._queued_bytes + size_bytes > self.queue_bytes:
                    stats.packets_dropped += 1
                    packet.lost = True
                    self._observe(packet)
                    return False
                queue.append((start_s, size_bytes))
                self._queued_bytes += size_bytes
                if self._queued_bytes > stats.max_queue_bytes:
                    stats.max_queue_bytes = self._queued_bytes
            else:
                start_s = now
            depart_s = start_s + size_bytes * 8.0 / bandwidth_bps
            self._busy_until_s = depart_s
        if self.loss.lost():
            stats.packets_lost += 1
            packet.lost = True
            self._observe(packet)
            return True
        arrive_s = depart_s + self.delay_s
        jitter = self.jitter
        if jitter is not None and jitter.prob > 0:
            rnd = self._jitter_rng.random
            if rnd() < jitter.prob:
                arrive_s += rnd() * jitter.max_s
        packet.arrived_s = arrive_s
        # sim.call_at(arrive_s, self._arrive, packet, deliver), inlined as TimerSlots does: once
        # per packet, and arrive_s >= now needs no check (every term added to now is >= 0)
        sim._push(arrive_s, self._arrive, (packet, deliver))
        return True

    def _arrive(self, packet: Packet, deliver: Callable[[Packet], None]) -> None:
        self.stats.bytes_delivered += packet.size_bytes
        for observer in self.observers:  # self._observe(packet), inlined: once per packet
            observer(packet)
        deliver(packet)

    def _observe(self, packet: Packet) -> None:
        for observer in self.observers:
            observer(packet)


def _check_link(delay_s: float, bandwidth_bps: float | None) -> None:
    if delay_s < 0:
        raise InputError(f"link delay must be >= 0, got {delay_s}")
    if bandwidth_bps is not None and bandwidth_bps <= 0:
        raise InputError(f"link bandwidth must be > 0, got {bandwidth_bps}")


def make_link(
    sim: Simulator,
    name: str,
    *,
    delay_s: float,
    bandwidth_bps: float | None = None,
    queue_bytes: int | None = None,
    mtu_bytes: int = 1500,
    loss: LossModel | None = None,
    jitter: Jitter | None = None,
    implementation: str | None = None,
):
    """A ``Link``, or its C twin (``native.resolve(implementation)``); same arguments, same behaviour."""
    if native.resolve(implementation) == "python" or type(mtu_bytes) is not int:
        return Link(
            sim,
            name,
            delay_s=delay_s,
            bandwidth_bps=bandwidth_bps,
            queue_bytes=queue_bytes,
            mtu_bytes=mtu_bytes,
            loss=loss,
            jitter=jitter,
        )
    _check_link(delay_s, bandwidth_bps)
    return native.C.Link(
        sim, name, delay_s, bandwidth_bps, queue_bytes, mtu_bytes, loss or NoLoss(), jitter, sim.rng(f"{name}/jitter")
    )


class Path:
    """A two-way path: ``forward`` (client to server) and ``reverse`` (server to client).

    ``rtt_s`` is the base round-trip time (each direction gets rtt_s / 2 of propagation
    delay); loss applies in both directions (acknowledgements are packets too), each
    direction with its own random stream.  ``implementation`` picks the links' (``make_link``).
    The values are trusted: a model builds its paths from a checked ``net.conditions.Network``
    (``Network.path``); ``loss`` is a ``LossSpec`` (a spelling is read here for tests).
    """

    def __init__(
        self,
        sim: Simulator,
        *,
        rtt_s: float,
        bandwidth_bps: float | None = None,
        queue_bytes: int | None = None,
        mtu_bytes: int = 1500,
        loss: LossSpec | str | float | None = None,
        reverse_loss: LossSpec | str | float | None = "same",
        jitter: Jitter | None = None,
        name: str = "path",
        implementation: str | None = None,
    ) -> None:
        self.sim = sim
        self.rtt_s = rtt_s
        self.bandwidth_bps = bandwidth_bps
        self.mtu_bytes = mtu_bytes
        loss = LossSpec.parse(loss)
        reverse_loss = loss if reverse_loss == "same" else LossSpec.parse(reverse_loss)
        common = dict(
            delay_s=rtt_s / 2,
            bandwidth_bps=bandwidth_bps,
            queue_bytes=queue_bytes,
            mtu_bytes=mtu_bytes,
            jitter=jitter,
            implementation=implementation,
        )
        self.forward = make_link(sim, f"{name}/fwd", loss=loss.model(sim.rng(f"{name}/fwd/loss")), **common)
        self.reverse = make_link(sim, f"{name}/rev", loss=reverse_loss.model(sim.rng(f"{name}/rev/loss")), **common)

    def bdp_bytes(self) -> int | None:
        """Bandwidth-delay product in bytes (None without a bandwidth limit)."""
        if self.bandwidth_bps is None:
            return None
        return int(self.bandwidth_bps * self.rtt_s / 8)


class _DelayedLink:
    """One direction of a ``DelayedPath``: the shared link, then ``extra_s`` more."""

    __slots__ = ("link", "extra_s", "sim", "mtu_bytes")

    def __init__(self, link: Link, extra_s: float) -> None:
        self.link, self.extra_s, self.sim, self.mtu_bytes = link, extra_s, link.sim, link.mtu_bytes

    def send(self, packet: Packet, deliver: Callable[[Packet], None]) -> bool:
        return self.link.send(packet, lambda p: self.sim.call_later(self.extra_s, deliver, p))


class DelayedPath:
    """A path through another's bottleneck to a server farther away: every packet takes the
    shared ``path`` (its bandwidth, queue and loss) and then ``extra_rtt_s / 2`` more in each
    direction.  The page-load model gives each origin its own RTT this way.  Over C links
    its directions are the C twin of ``_DelayedLink``."""

    def __init__(self, path: Path, extra_rtt_s: float) -> None:
        if extra_rtt_s < 0:
            raise InputError(f"extra RTT must be >= 0, got {extra_rtt_s}")
        self.sim, self.mtu_bytes, self.bandwidth_bps = path.sim, path.mtu_bytes, path.bandwidth_bps
        self.rtt_s = path.rtt_s + extra_rtt_s
        delayed = _DelayedLink
        if native.C is not None and type(path.forward) is native.C.Link:
            delayed = native.C.DelayedLink
        self.forward = delayed(path.forward, extra_rtt_s / 2)
        self.reverse = delayed(path.reverse, extra_rtt_s / 2)
