"""What the real-stack runs share: exchange specs, parameters, the per-exchange recorder
and the run loop (the HTTP behaviour of both ends is ``endpoint.Endpoint``).  Written by hand.

The two stacks (``h2.py``: the ``h2`` library over the TCP model; ``h3.py``: ``aioquic``
over the simulated link) differ only in a handful of primitives (send headers, send
body bytes, push, reset, how much flow control lets through now).  Everything an
exchange *does* lives once, in ``endpoint.Endpoint``:

- the client sends the request headers (and ``request_body_bytes``), at ``start_s``;
- when the request has ended, the server sends at once an informational 103 with
  ``Link`` headers (RFC 8297: while it is still producing the final response) when the
  spec has early hints, and a push promise and the pushed response for each push
  (RFC 9113 section 8.4, RFC 9114 section 4.6): both use the idle window of the server's
  think time.  Then, ``think_s`` later (the spec's own, else ``StackParams.think_s``), the
  final response headers, ``response_body_bytes`` of body, and trailers (RFC 9110
  section 6.5) when the spec has them;
- body generation over time (``body_rate_bytes_per_s``): from the end of its think
  time, the server produces the body at that rate and writes each ``body_chunk_bytes``
  as soon as it is produced (``production_schedule``); with ``buffer_body`` it writes
  nothing, headers included, until the last byte is produced (a server that must know the whole body, e.g. a
  digest, before its header section); ``body_tail_bytes`` are written at once when
  production ends (an in-body trailer frame).  Unset, the whole body is ready at once,
  as before;
- a reset (RFC 9113 section 6.4 RST_STREAM, RFC 9000 section 19.4 RESET_STREAM): the
  server resets the stream after writing ``reset_after_bytes`` of the body, or the
  client cancels once it has received that many.

Outgoing work per stream is a queue of operations (headers, data, reset) drained as
flow control allows (h2 counts windows itself; aioquic buffers and obeys its own).

Completion: a request's exchange is *complete* when its response stream ends
normally; a reset ends it without completing it.  Pushed responses are rows of their
own (``kind == "push"``).  A ``Recorder.listener`` (optional) hears of informational
responses, push promises, pushed response headers and ended rows as they happen: that
is how a client model above the stacks (the page-load model) reacts to them.
"""

from __future__ import annotations

import contextlib
import gc
import math
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Callable

from ..engine import Simulator
from ..errors import InputError
from ..net.conditions import adopt_network
from ..traces.model import HeaderList

if TYPE_CHECKING:
    import pandas as pd  # imported where a table is made (``frame``): a page load needs none

__all__ = [
    "PushSpec",
    "ExchangeSpec",
    "StackParams",
    "Recorder",
    "Result",
    "StackStalled",
    "CLIENT_ADDR",
    "SERVER_ADDR",
    "run_until",
    "idle_safe_until",
    "body_bytes",
    "PROGRESS_EVENTS",
    "production_schedule",
    "collector_paused",
    "let_go",
]

CLIENT_ADDR = ("10.0.0.1", 50000)  # fixed peer addresses: a changing one would look like
SERVER_ADDR = ("10.0.0.2", 443)  # a migration to QUIC and stall the handshake
PROGRESS_EVENTS = 200_000  # events at one virtual instant before we call it a spin


class StackStalled(InputError):
    """The scenario cannot progress (idle timeout reached): one line for the CLI."""


@dataclass(frozen=True)
class PushSpec:
    """A response the server pushes alongside an exchange's response."""

    path: bytes
    body_bytes: int
    authority: bytes | None = None  # None: the parent request's :authority


@dataclass
class ExchangeSpec:
    """One exchange to replay.  ``response_headers`` starts with ``:status``."""

    index: int
    request_headers: HeaderList
    response_headers: HeaderList
    response_body_bytes: int
    start_s: float = 0.0
    origin: str = "https://server.example"
    request_body_bytes: int = 0
    early_hints: tuple[bytes, ...] = ()  # Link values sent in a 103 first
    pushes: tuple[PushSpec, ...] = ()
    trailers: HeaderList | None = None
    reset_by: str | None = None  # None, "client" or "server"
    reset_after_bytes: int = 0
    think_s: float | None = None  # server think time; None: StackParams.think_s
    body_rate_bytes_per_s: float | None = None  # the server produces the body at this rate (None: at once)
    body_chunk_bytes: int = 16384  # ... and writes each chunk as soon as it is produced
    buffer_body: bool = False  # write nothing (headers included) before the last byte
    body_tail_bytes: int = 0  # written at once after the last produced byte

    def __post_init__(self) -> None:
        if self.reset_by not in (None, "client", "server"):
            raise InputError(f"reset_by must be client or server, got {self.reset_by!r}")
        rate = self.body_rate_bytes_per_s
        if rate is not None and not rate > 0:
            raise InputError(f"body generation rate must be above 0 bytes/s, got {rate}")
        if self.body_chunk_bytes < 1 or self.body_tail_bytes < 0:
            raise InputError("body chunk size must be at least 1 byte and the tail at least 0")
        if (rate is not None or self.buffer_body or self.body_tail_bytes) and self.reset_by is not None:
            raise InputError("a generated body (rate, buffer, tail) cannot be combined with a reset")


@dataclass(frozen=True)
class StackParams:
    """Everything that determines a real-stack run (units in the names)."""

    stack: str = "h2"  # "h2" or "h3"
    rtt_s: float = 0.050
    bandwidth_bps: float | None = 10e6
    loss: str = "0"  # "0.01" Bernoulli or "ge:P,R[,h,k]"
    seed: int = 1
    think_s: float = 0.0  # server think time before a response
    queue_bytes: int | None = None  # bottleneck queue; None = unlimited
    idle_timeout_s: float = 30.0  # no progress for this long: StackStalled
    flow_window_bytes: int = 16 << 20  # stream and connection flow-control windows
    default_body_bytes: int = 512  # a trace body of 0 bytes is replayed with this
    cc: str = "reno"  # congestion control (TCP model / aioquic)
    max_datagram_bytes: int = 1252  # QUIC UDP payload (the QUIC model's default)
    qpack_table_bytes: int = 4096  # SETTINGS_QPACK_MAX_TABLE_CAPACITY (aioquic: 4096)
    qpack_blocked_streams: int = 16  # SETTINGS_QPACK_BLOCKED_STREAMS (aioquic: 16)
    max_push_id: int = 8  # client's MAX_PUSH_ID (aioquic hard-codes 8)
    tcp_handshake: bool = True  # h2: SYN / SYN-ACK / ACK before the preface
    tls: bool = True  # h2: TLS 1.3 (ALPN h2) over TCP; False: cleartext, prior knowledge

    def __post_init__(self) -> None:
        if self.stack not in ("h2", "h3"):
            raise InputError(f"unknown stack {self.stack!r} (choose h2 or h3)")
        adopt_network(self)  # the network part: handed over checked, or checked here
        if self.think_s < 0 or self.idle_timeout_s <= 0:
            raise InputError("think time must be >= 0 and the idle timeout above 0")
        if self.qpack_table_bytes < 0 or self.qpack_blocked_streams < 0:
            raise InputError("QPACK table capacity and blocked streams must be >= 0")
        if self.stack == "h3" and not self.tls:
            raise InputError("HTTP/3 always runs TLS 1.3 (QUIC has no cleartext mode): --no-tls is for h2")
        if not 1200 <= self.max_datagram_bytes <= 1472:
            raise InputError(f"QUIC datagram size must be in [1200, 1472], got {self.max_datagram_bytes}")

    @property
    def network(self):
        """The network part (``net.conditions.Network``), checked once."""
        return self.__dict__["_network"]

    def to_dict(self) -> dict:
        """The parameters as a plain dict (for a result's JSON)."""
        return asdict(self)


def production_schedule(total_bytes: int, rate_bytes_per_s: float | None, chunk_bytes: int) -> list[tuple[float, int]]:
    """When a body of ``total_bytes`` produced at ``rate_bytes_per_s`` becomes writable:
    ``[(seconds after production starts, bytes), ...]``, one entry per ``chunk_bytes``
    (the last one shorter), the k-th at ``k * chunk_bytes / rate``.  No rate: everything
    at once.  The transport models (``hops.chain``) use the same schedule."""
    if total_bytes <= 0:
        return [(0.0, 0)]
    if rate_bytes_per_s is None or math.isinf(rate_bytes_per_s):
        return [(0.0, total_bytes)]
    out, done = [], 0
    while done < total_bytes:
        n = min(chunk_bytes, total_bytes - done)
        done += n
        out.append((done / rate_bytes_per_s, n))
    return out


def body_bytes(n: int) -> bytes:
    """``n`` bytes of body (content does not matter to any study; a fixed pattern)."""
    return b"x" * n


# ---------------------------------------------------------------------------------------
# Recording


class Recorder:
    """One row per request exchange and per pushed response, filled as events arrive."""

    def __init__(self, sim: Simulator) -> None:
        self.sim = sim
        self.rows: list[dict] = []
        self.open_requests = 0  # request exchanges not yet ended
        self.last_progress_s = 0.0
        self.on_all_done: Callable[[], None] | None = None  # called whenever no request exchange is open
        # Optional observer with any of: informational(row, headers), push_promised(row, headers),
        # push_headers(row), ended(row).
        self.listener = None

    def new_row(
        self, *, kind: str, exchange: int, origin: str, path: str, start_s: float, expected_body_bytes: int
    ) -> dict:
        """Open the row of one exchange (``kind``: request or push); its times start as NaN."""
        row = {
            "exchange": exchange,
            "kind": kind,
            "origin": origin,
            "path": path,
            "stream_id": -1,
            "start_s": start_s,
            "request_sent_s": math.nan,
            "informational_s": math.nan,
            "link_headers": 0,
            "headers_s": math.nan,
            "status": 0,
            "first_byte_s": math.nan,
            "complete_s": math.nan,
            "body_bytes": 0,
            "expected_body_bytes": expected_body_bytes,
            "trailers": False,
            "reset": "",
            "ended_s": math.nan,
            "trailers_s": math.nan,
            # bytes of the server's HEADERS frames (frame header included) and the QPACK
            # encoder-stream bytes each caused (HTTP/3), as the real stack wrote them
            "response_frame_bytes": 0,
            "response_encoder_bytes": 0,
            "trailer_frame_bytes": 0,
            "trailer_encoder_bytes": 0,
        }
        self.rows.append(row)
        if kind == "request":
            self.open_requests += 1
        return row

    def progress(self) -> None:
        """Note that an exchange made progress now (the idle timeout counts from here)."""
        self.last_progress_s = self.sim.now

    def end(self, row: dict, *, reset: str = "") -> None:
        """End a row once: completed, or reset by ``reset`` (who reset it); tells the listener."""
        if not math.isnan(row["ended_s"]):
            return
        now = self.sim.now
        row["ended_s"] = now
        if reset:
            row["reset"] = reset
        else:
            row["complete_s"] = now
        self.progress()
        if row["kind"] == "request":
            self.open_requests -= 1
        if self.listener is not None:
            self.listener.ended(row)  # may open new exchanges
        if self.open_requests == 0 and self.on_all_done is not None:
            self.on_all_done()

    @property
    def done(self) -> bool:
        """True when no request exchange is open."""
        return self.open_requests == 0

    def frame(self) -> pd.DataFrame:
        """The rows as a table, with ``completion_s`` and ``completed``; requests first, by exchange."""
        import pandas as pd

        df = pd.DataFrame.from_records(self.rows)
        if df.empty:
            return df
        df["completion_s"] = df["complete_s"] - df["start_s"]
        df["completed"] = df["complete_s"].notna()
        return df.sort_values(["kind", "exchange"], ascending=[False, True], kind="stable").reset_index(drop=True)


# ---------------------------------------------------------------------------------------
# Running


def schedule_requests(sim: Simulator, specs: list[ExchangeSpec], sessions: dict, recorder: "Recorder") -> float:
    """Start each exchange at its start time on its origin's session; returns the last start."""

    def start(spec: ExchangeSpec) -> None:
        row = recorder.new_row(
            kind="request",
            exchange=spec.index,
            origin=spec.origin,
            path=dict(spec.request_headers).get(b":path", b"").decode("latin-1"),
            start_s=sim.now,
            expected_body_bytes=spec.response_body_bytes,
        )
        recorder.progress()
        sessions[spec.origin].request(spec, row)

    for spec in specs:
        sim.call_at(spec.start_s, start, spec)
    return max(s.start_s for s in specs)


@contextlib.contextmanager
def collector_paused(pause: bool = True):
    """The cyclic garbage collector paused inside the block (when ``pause``), resumed after.

    For a run that makes many objects which live to its end and whose cycles are its own
    state, made per resource and connection, none per packet or event: the page-load
    model's load (a 20,000-resource page: five full passes over them, 1.3 s of a 6.5 s
    run, found nothing).  Memory holds: the cycles a load leaves are collected after it."""
    collecting = pause and gc.isenabled()
    if collecting:
        gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def let_go(*objects) -> None:
    """Drop the attributes of a finished run's objects (a page load, its network and its
    connections; a dict or list stands for its elements): their references to each other
    are cycles that only a full collection would free, one that looks at every object the
    run made; dropped, reference counts free them at once (``collector_paused``: the
    collector then finds little to look at)."""
    for obj in objects:
        if isinstance(obj, (dict, list, tuple)):  # a collection of them (a network's connections)
            let_go(*(obj.values() if isinstance(obj, dict) else obj))
            continue
        attributes = getattr(obj, "__dict__", None)
        if attributes is not None:
            attributes.clear()


def run_until(
    sim: Simulator,
    done: Callable[[], bool],
    *,
    check: Callable[[], None],
    deadline_s: float,
    safe_until: Callable[[], float] | None = None,
) -> None:
    """Run ``sim`` until ``done()``; ``check()`` raises on a stall.  Never spins: too many
    events at one virtual instant is a bug and raises ``RuntimeError``.

    The result is exactly that of evaluating ``done()`` and then ``check()`` after every
    event (so a run stops at the very event that ends its last exchange), without doing
    so: with ``safe_until``, events run in bulk up to ``safe_until()`` (a time up to which
    ``check()`` cannot fail unless something changes) and the loop looks at ``done()``
    and ``check()`` only when an observer calls ``sim.stop()`` -- the recorder when no
    exchange is open, a session when its connection terminates -- and after each event
    past that time, one at a time as before.  Without ``safe_until`` every event is checked.
    """
    same_instant = 0
    last_now = -1.0
    run = sim.run
    while not done():
        if not sim.pending:
            check()
            raise StackStalled(
                f"the simulation ran out of events at {sim.now:.3f} s with exchanges still open (idle timeout reached)"
            )
        if safe_until is not None:
            horizon = min(safe_until(), deadline_s)
            first_s = sim.next_s
            if first_s <= horizon:
                before = sim.events_run
                run(until_s=horizon, max_events=PROGRESS_EVENTS)
                if sim.stopped:  # an observer saw a change: look now, as after any event
                    if done():
                        break
                    check()
                elif sim.events_run - before >= PROGRESS_EVENTS and sim.now == first_s:
                    raise RuntimeError(
                        f"no progress in virtual time at {sim.now} s: {PROGRESS_EVENTS} events "
                        "ran at one instant (a timer re-armed for the time it fired)"
                    )
                continue
        run(max_events=1)  # one event at a time: stop exactly when the last exchange ends
        if done():
            break
        check()
        if sim.now == last_now:
            same_instant += 1
            if same_instant > PROGRESS_EVENTS:
                raise RuntimeError(
                    f"no progress in virtual time at {sim.now} s: {PROGRESS_EVENTS} events "
                    "ran at one instant (a timer re-armed for the time it fired)"
                )
        else:
            same_instant = 0
            last_now = sim.now
        if sim.now > deadline_s:
            raise StackStalled(
                f"virtual time passed {deadline_s:.0f} s with exchanges still open (idle timeout reached)"
            )


def idle_safe_until(recorder: "Recorder", last_start_s: float, idle_timeout_s: float) -> Callable[[], float]:
    """For ``run_until``: the latest time at which the idle check (``now >= last_start_s and
    now - recorder.last_progress_s > idle_timeout_s``) cannot yet fail, computed in the same
    floating point as the check (subtraction is monotonic, so every earlier time is safe too,
    and progress only moves the time later)."""
    before_last_start = math.nextafter(last_start_s, -math.inf)

    def safe_until() -> float:
        progress_s = recorder.last_progress_s
        t = progress_s + idle_timeout_s
        while t - progress_s > idle_timeout_s:
            t = math.nextafter(t, -math.inf)
        return max(t, before_last_start)

    return safe_until


@dataclass
class Result:
    """The study-module shape: one row per exchange (and pushed response) plus a summary."""

    exchanges: pd.DataFrame
    summary: dict
    params: dict
    trace: dict = field(default_factory=dict)

    def to_json_dict(self) -> dict:
        """The run as the ``--json`` object: summary, parameters, trace and per-exchange rows."""
        s = self.summary
        return {
            "exchanges": _records(self.exchanges),
            "completed": int(s["completed"]),
            "last_completion_s": s["last_completion_s"],
            "packets_sent": int(s["packets_sent"]),
            "packets_lost": int(s["packets_lost"]),
            "summary": s,
            "params": self.params,
        }


def _records(df: pd.DataFrame) -> list[dict]:
    cols = [
        "exchange",
        "kind",
        "origin",
        "path",
        "stream_id",
        "status",
        "start_s",
        "headers_s",
        "complete_s",
        "completion_s",
        "body_bytes",
        "trailers",
        "reset",
    ]
    out = []
    for rec in df[cols].to_dict(orient="records"):
        for k, v in rec.items():
            if isinstance(v, float) and math.isnan(v):
                rec[k] = None
            elif hasattr(v, "item"):
                rec[k] = v.item()
        out.append(rec)
    return out
