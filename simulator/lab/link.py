"""The lab's emulated link and the run that owns it: two namespaces, a relay, and the
processes started in them, all removed on exit, on Ctrl-C, on SIGTERM and on a crash.

``LinkConditions`` is the link, checked once where it enters (a flag, a grid point, a
Python call): the models' spellings and meanings (``--rtt`` is the round trip, each
direction gets half of it; ``--bw`` the bottleneck rate of each direction; ``--loss`` a
probability or ``ge:P,R[,h,k]`` drawn per packet in each direction; ``--queue`` the
drop-tail queue in bytes, unlimited by default as in the models), plus what only a real
link has: a packet-delivery trace per direction in Mahimahi's format instead of a constant
rate.

``Lab`` is one run.  With the default ``link="relay"`` the two namespaces are joined by a
TUN device each and the C relay (``simulator.lab._relay``, driven by
``simulator.lab.relay``) between them; ``link="netem"`` joins them by a veth pair with a
``netem`` qdisc on each end instead, where the kernel has one (this machine's has not).

Who removes what: the owner (this process) removes every process it started, then the
namespaces, in ``close()``, which ``__exit__``, SIGINT, SIGTERM and SIGHUP all reach.  If
the owner dies without it (SIGKILL), the relay sees its control pipe close and removes the
namespaces itself; if both die, the next lab start removes namespaces whose owner is gone
(``netns.sweep_stale``).  Written by hand around iproute2 and the relay.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field

from ..errors import InputError
from . import netns

__all__ = ["LinkConditions", "Lab", "MAX_RATE_BPS", "read_delivery_trace", "relay_available", "read_line"]

# The highest rate the lab emulates.  The relay carried 0.56 Gbit/s of bulk TCP on an
# unlimited link on this two-core machine (benchmarks/bench_lab.py); a set rate is held well
# below that so a browser and servers beside it leave it room.  Above: refused before the run.
MAX_RATE_BPS = 200e6
MAX_DELAY_S = 10.0
_TRACE_MAX_LINES = 10_000_000


def relay_available() -> bool:
    """True when the C relay is built (Linux, with a compiler at install time)."""
    from .._extension import load_extension

    return load_extension("simulator.lab._relay", "WORKBENCH_RELAY_EXT") is not None


def read_delivery_trace(path: str) -> tuple[int, ...]:
    """A packet-delivery trace in Mahimahi's format: one delivery opportunity per line, its
    time in whole milliseconds from the start, non-decreasing; the trace repeats after its
    last time.  Each opportunity carries one MTU (1500 bytes)."""
    try:
        with open(path, "rb") as f:
            if not os.path.isfile(path):
                raise InputError("is not a regular file (a packet-delivery trace is one).", path=path)
            times, last = [], 0
            for number, raw in enumerate(f, 1):
                text = raw.strip()
                if not text:
                    continue
                if number > _TRACE_MAX_LINES or not text.isdigit() or not text.isascii():
                    why = (
                        "too many lines" if number > _TRACE_MAX_LINES else f"{text[:20]!r} is not a whole number of ms"
                    )
                    raise InputError(
                        f"{why} (a delivery trace has one time in ms per line).", path=path, where=f"line {number}"
                    )
                value = int(text)
                if value < last:
                    raise InputError(
                        f"{value} ms comes before the line above ({last} ms); times must not go back.",
                        path=path,
                        where=f"line {number}",
                    )
                times.append(value)
                last = value
    except OSError as exc:
        raise InputError(f"cannot read it ({exc.strerror}).", path=path) from None
    if not times or times[-1] <= 0:
        raise InputError("has no delivery opportunity after 0 ms.", path=path)
    return tuple(times)


@dataclass(frozen=True)
class LinkConditions:
    """One emulated link: RTT, rate (or delivery traces), loss, queue and the loss seed,
    checked once here; each direction gets ``rtt_s / 2`` of one-way delay."""

    rtt_s: float = 0.100
    bandwidth_bps: float | None = None  # None: unlimited (or the traces')
    loss: str = "0"  # "0.01" Bernoulli, "ge:P,R[,h,k]" Gilbert-Elliott
    queue_bytes: int | None = None  # drop-tail queue per direction; None: unlimited
    seed: int = 1
    uplink_trace: str | None = None  # Mahimahi delivery trace (file) for client -> server
    downlink_trace: str | None = None  # ... and server -> client
    _traces: dict = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        from ..net.link import parse_loss
        import random

        if not (math.isfinite(self.rtt_s) and 0 <= self.rtt_s / 2 <= MAX_DELAY_S):
            raise InputError(f"the lab's RTT must be between 0 and {2 * MAX_DELAY_S:g} s, got {self.rtt_s:g} s.")
        if self.bandwidth_bps is not None and not (
            math.isfinite(self.bandwidth_bps) and 0 < self.bandwidth_bps <= MAX_RATE_BPS
        ):
            raise InputError(
                f"the relay sustains at most {MAX_RATE_BPS / 1e6:g} Mbit/s; "
                f"{self.bandwidth_bps / 1e6:g} Mbit/s cannot be emulated faithfully."
            )
        if self.queue_bytes is not None and not 1500 <= self.queue_bytes <= 1 << 30:
            raise InputError(
                f"the queue must hold at least one packet (1500 bytes) and at most 1 GiB, got {self.queue_bytes} bytes."
            )
        parse_loss(self.loss, random.Random(0))
        for name in ("uplink_trace", "downlink_trace"):
            if getattr(self, name) is not None:
                self._traces[name] = read_delivery_trace(getattr(self, name))

    def direction(self, which: str) -> dict:
        """The relay's parameters of one direction (``uplink``: client to server, or ``downlink``)."""
        from ..net.link import Bernoulli, GilbertElliott, parse_loss
        import random

        model = parse_loss(self.loss, random.Random(0))
        spec = {
            "delay_s": self.rtt_s / 2,
            "rate_bps": self.bandwidth_bps or 0.0,
            "queue_bytes": -1 if self.queue_bytes is None else self.queue_bytes,
            "trace_ms": self._traces.get(f"{which}_trace"),
            "loss_kind": 0,
        }
        if spec["trace_ms"] is not None:
            spec["rate_bps"] = 0.0  # the trace's opportunities set the rate
        if isinstance(model, Bernoulli):
            spec.update(loss_kind=1, p=model.p)
        elif isinstance(model, GilbertElliott):
            spec.update(loss_kind=2, p=model.p_gb, r=model.p_bg, h=model.loss_good, k=model.loss_bad)
        return spec

    def describe(self) -> dict:
        """The conditions as plain values, for results and logs."""
        return {
            "rtt_s": self.rtt_s,
            "bandwidth_bps": self.bandwidth_bps,
            "loss": self.loss,
            "queue_bytes": self.queue_bytes,
            "seed": self.seed,
            "uplink_trace": self.uplink_trace,
            "downlink_trace": self.downlink_trace,
        }


class _Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGHUP reached the lab's owner: unwind through ``close()`` as Ctrl-C does."""


class Lab:
    """One lab run: ``with Lab(conditions) as lab: lab.run_client([...])``.

    ``lab.client_ns`` and ``lab.server_ns`` are the namespaces, ``SERVER_ADDR`` the server
    end of the link (``netns.SERVER_ADDR``); ``server_addresses`` are more addresses for the
    server namespace (a rebuilt page's origins), each reachable from the client over the
    link.  ``stats`` holds the relay's counters after the run.
    """

    def __init__(self, conditions: LinkConditions, *, server_addresses=(), link: str = "relay") -> None:
        if link not in ("relay", "netem"):
            raise InputError(f"unknown link {link!r} (choose relay or netem).")
        self.conditions = conditions
        self.server_addresses = tuple(server_addresses)
        self.link = link
        self.client_ns = self.server_ns = None
        self.stats: dict | None = None
        self._relay: subprocess.Popen | None = None
        self._procs: list[subprocess.Popen] = []
        self._old_handlers: dict = {}
        self._closed = False

    # ------------------------------------------------------------------ set-up
    def __enter__(self) -> "Lab":
        netns.check_can_run()
        if self.link == "relay" and not relay_available():
            raise InputError(
                "the lab's relay (simulator.lab._relay) is not built: reinstall with a C compiler (make install)."
            )
        self._trap_signals()
        try:
            netns.sweep_stale()
            self.client_ns, self.server_ns = netns.names_for(os.getpid())
            for name in (self.client_ns, self.server_ns):
                netns.remove(name)  # a left-over of this very pid (reused): start clean
                netns.create(name)
            if self.link == "relay":
                self._start_relay()
            else:
                self._start_netem()
            for addr in self.server_addresses:
                subprocess.run(
                    ["ip", "-n", self.server_ns, "addr", "add", f"{addr}/32", "dev", "lo"],
                    check=True,
                    capture_output=True,
                )
        except BaseException:
            self.close()
            raise
        return self

    def _trap_signals(self) -> None:
        def interrupted(signum, frame):
            raise _Interrupted(signal.Signals(signum).name)

        with contextlib.suppress(ValueError):  # not the main thread: the caller owns signals
            for sig in (signal.SIGTERM, signal.SIGHUP):
                self._old_handlers[sig] = signal.signal(sig, interrupted)

    def _start_relay(self) -> None:
        config = {
            "client_ns": self.client_ns,
            "server_ns": self.server_ns,
            "seed": self.conditions.seed,
            "uplink": self.conditions.direction("uplink"),
            "downlink": self.conditions.direction("downlink"),
        }
        # Its own session: a Ctrl-C at the terminal is the owner's to handle (it then stops
        # the relay in order); the relay outlives a killed owner just long enough to clean up.
        # The client namespace's name on its command line only names the run (ps, pgrep).
        self._relay = subprocess.Popen(
            [sys.executable, "-m", "simulator.lab.relay", self.client_ns],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        self._relay.stdin.write(json.dumps(config).encode() + b"\n")
        self._relay.stdin.flush()
        line = self._read_relay_line(timeout_s=15.0)
        if line != "ready":
            err = (
                self._relay.stderr.read1(4000).decode(errors="replace").strip().splitlines()
                if select.select([self._relay.stderr], [], [], 0.5)[0]
                else []
            )
            raise InputError(f"the lab's relay did not start ({err[-1] if err else line or 'no answer'}).")

    def _read_relay_line(self, timeout_s: float) -> str:
        return read_line(self._relay.stdout, timeout_s)

    def _start_netem(self) -> None:
        c = self.conditions
        if c.uplink_trace or c.downlink_trace:
            raise InputError("netem has no packet-delivery traces; use --link relay for them.")
        subprocess.run(
            [
                "ip",
                "link",
                "add",
                "wblab0",
                "netns",
                self.client_ns,
                "type",
                "veth",
                "peer",
                "name",
                "wblab0",
                "netns",
                self.server_ns,
            ],
            check=True,
            capture_output=True,
        )
        for ns, addr, peer in (
            (self.client_ns, netns.CLIENT_ADDR, netns.SERVER_ADDR),
            (self.server_ns, netns.SERVER_ADDR, netns.CLIENT_ADDR),
        ):
            argv = ["tc", "qdisc", "add", "dev", "wblab0", "root", *netem_args(c)]
            done = subprocess.run(netns.exec_argv(ns, argv), capture_output=True, text=True)
            if done.returncode != 0:
                raise InputError(
                    "this kernel has no netem qdisc (tc: "
                    f"{(done.stderr.strip().splitlines() or ['failed'])[-1]}); "
                    "use --link relay (the default)."
                )
            for cmd in (["addr", "add", addr, "peer", peer, "dev", "wblab0"], ["link", "set", "wblab0", "up"]):
                subprocess.run(["ip", "-n", ns, *cmd], check=True, capture_output=True)
        for net in netns.SERVER_NETS:
            subprocess.run(
                ["ip", "-n", self.client_ns, "route", "add", net, "dev", "wblab0"], check=True, capture_output=True
            )

    # ------------------------------------------------------------------ processes
    def environment(self, extra: dict | None = None) -> dict:
        """The environment of a lab process: the caller's, with ``LAB_SERVER_ADDR``."""
        env = dict(os.environ)
        env["LAB_SERVER_ADDR"] = netns.SERVER_ADDR
        env["LAB_CLIENT_ADDR"] = netns.CLIENT_ADDR
        env.update(extra or {})
        return env

    def start(self, side: str, argv: list[str], **kwargs) -> subprocess.Popen:
        """Start ``argv`` in the ``client`` or ``server`` namespace, in a session of its own
        (the lab ends it, and all it started, on close)."""
        ns = {"client": self.client_ns, "server": self.server_ns}[side]
        kwargs.setdefault("env", self.environment())
        proc = subprocess.Popen(netns.exec_argv(ns, argv), start_new_session=True, **kwargs)
        self._procs.append(proc)
        return proc

    def wait_listening(self, proc: subprocess.Popen, timeout_s: float) -> bool:
        """Wait until the server namespace has a listening TCP socket or a bound UDP one
        (``proc``: a process started there); False if ``proc`` ended or time ran out first."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and proc.poll() is None:
            if _listening(proc.pid, self.server_ns):
                return True
            time.sleep(0.01)
        return False

    def run_client(self, argv: list[str], **kwargs) -> int:
        """Run ``argv`` in the client namespace in the foreground (it gets the terminal's
        Ctrl-C, as in Mahimahi's shells); its exit status."""
        kwargs.setdefault("env", self.environment())
        proc = subprocess.Popen(netns.exec_argv(self.client_ns, argv), **kwargs)
        self._procs.append(proc)
        try:
            return proc.wait()
        except KeyboardInterrupt:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=2.0)
            raise

    # ------------------------------------------------------------------ teardown
    def close(self) -> None:
        """End every process the run started, stop the relay, remove both namespaces."""
        if self._closed:
            return
        self._closed = True
        try:
            for proc in reversed(self._procs):
                _end(proc)
            if self._relay is not None:
                with contextlib.suppress(BrokenPipeError, OSError, ValueError):
                    self._relay.stdin.write(b"stop\n")
                    self._relay.stdin.close()
                with contextlib.suppress(OSError, ValueError):
                    line = self._read_relay_line(timeout_s=5.0)
                    if line.startswith("{"):
                        self.stats = json.loads(line)
                _end(self._relay, grace_s=5.0)
        finally:
            for name in (self.client_ns, self.server_ns):
                if name:
                    netns.remove(name)
            for sig, handler in self._old_handlers.items():
                signal.signal(sig, handler)

    def __exit__(self, *exc) -> None:
        self.close()


def read_line(stream, timeout_s: float) -> str:
    """One line from a child's pipe, or what came of it within ``timeout_s`` (stripped)."""
    deadline = time.monotonic() + timeout_s
    buf = b""
    while not buf.endswith(b"\n") and time.monotonic() < deadline:
        if not select.select([stream], [], [], max(deadline - time.monotonic(), 0))[0]:
            break
        chunk = os.read(stream.fileno(), 1)
        if not chunk:
            break
        buf += chunk
    return buf.decode(errors="replace").strip()


def _listening(pid: int, ns: str) -> bool:
    """Whether process ``pid`` is in namespace ``ns`` yet (``ip netns exec`` enters it, then
    execs the command) and that namespace has a listening TCP socket or a bound UDP one
    (``/proc/PID/net`` shows that process's namespace)."""
    try:
        if os.stat(f"/proc/{pid}/ns/net").st_ino != os.stat(f"/run/netns/{ns}").st_ino:
            return False
    except OSError:
        return False
    for table, state in (("tcp", "0A"), ("tcp6", "0A"), ("udp", "07"), ("udp6", "07")):
        try:
            with open(f"/proc/{pid}/net/{table}") as f:
                next(f, None)
                if any(len(cols) > 3 and cols[3] == state for cols in map(str.split, f)):
                    return True
        except OSError:
            continue
    return False


def _end(proc: subprocess.Popen, grace_s: float = 2.0) -> None:
    """End ``proc`` and its session: SIGTERM, then SIGKILL after ``grace_s``."""
    if proc.poll() is not None:
        return
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 2.0)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig) if os.getpgid(proc.pid) == proc.pid else proc.send_signal(sig)
        try:
            proc.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


def netem_args(c: LinkConditions) -> list[str]:
    """``tc qdisc ... netem`` arguments for one direction of ``c`` (netem's own spellings:
    delay, rate, loss as a percentage or ``gemodel p r 1-h 1-k``, limit in packets)."""
    from ..net.link import Bernoulli, GilbertElliott, parse_loss
    import random

    args = ["netem", "delay", f"{c.rtt_s / 2 * 1e6:.0f}us"]
    if c.bandwidth_bps:
        args += ["rate", f"{c.bandwidth_bps:.0f}bit"]
    model = parse_loss(c.loss, random.Random(0))
    if isinstance(model, Bernoulli):
        args += ["loss", "random", f"{model.p * 100:g}%"]
    elif isinstance(model, GilbertElliott):
        # netem's gemodel takes p, r, 1-h and 1-k, its h and k being the chances of delivery in
        # the bad and the good state: so the loss in the bad state, then in the good one.
        args += [
            "loss",
            "gemodel",
            f"{model.p_gb * 100:g}%",
            f"{model.p_bg * 100:g}%",
            f"{model.loss_bad * 100:g}%",
            f"{model.loss_good * 100:g}%",
        ]
    limit = 1_000_000 if c.queue_bytes is None else max(1, c.queue_bytes // 1500)
    return args + ["limit", str(limit)]
