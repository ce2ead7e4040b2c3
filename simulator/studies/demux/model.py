"""The same receivers in virtual time, over the TCP model: flow-control stalls.

The real h2 server (``server.DataServer``) writes into a ``TcpConnection`` (the TCP model:
NewReno, a bottleneck link, seeded loss) and reads the client's WINDOW_UPDATEs from it;
the client's in-order bytes land in a socket queue (``_Kernel``) and wake the receiver.
The receiver is the same object as on the real socket (``receivers``), running on one
virtual CPU: a wakeup runs at once, then keeps the CPU busy for the cost of what it did,

    reads x read_s + frames x frame_s + dispatches x dispatch_s + wakeups x wakeup_s
    + copied bytes / copy_bytes_per_s + consumed bytes / consume_bytes_per_s,

and its WINDOW_UPDATEs leave when it ends; bytes that arrive meanwhile wait for the next
wakeup.  The costs are parameters (``CpuCosts``, defaults of the order the real part
measures on this machine), so the model is deterministic: the same seed gives the same
rows.  A window update reaches the server half an RTT after it leaves, and the server's
next bytes take another half: with windows smaller than the bandwidth-delay product the
server stalls (``window_stall_s``: time it had body bytes left and no window for any).
The requests and response headers are exchanged before time 0 (a warm connection).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from ...engine import Simulator
from ...http.connection import transport_for
from ...net.conditions import Network
from ...net.transport import TransportConfig, timer_counts
from .real import counters, endpoints

__all__ = ["CpuCosts", "simulate"]


@dataclass(frozen=True)
class CpuCosts:
    """The receiver's CPU cost per operation, in seconds of its one thread."""

    read_s: float = 2e-6  # one recv system call
    frame_s: float = 0.1e-6  # one frame boundary found (C scanner)
    dispatch_s: float = 0.5e-6  # one hand-off to a consumer
    wakeup_s: float = 5e-6  # one event-loop turn (poll, find the transfer)
    copy_bytes_per_s: float = 5e9  # copying payload into a buffer
    consume_bytes_per_s: float = 2e9  # the application's own work per byte

    def to_dict(self) -> dict:
        """The per-operation costs as a plain dict (seconds)."""
        return asdict(self)


class _Kernel:
    """The client socket's receive queue (kernel memory, not the process's)."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.start = 0
        self.sent: list[bytes] = []

    def __len__(self) -> int:
        return len(self.data) - self.start

    def recv_into(self, view) -> int:
        n = min(len(view), len(self.data) - self.start)
        if n:
            view[:n] = self.data[self.start : self.start + n]
            self.start += n
            if self.start > (1 << 20) and self.start * 2 > len(self.data):
                del self.data[: self.start]
                self.start = 0
        return n

    def send(self, data: bytes) -> None:
        self.sent.append(data)


def simulate(
    strategy: str, cfg: dict, impl, *, network: Network, rtt_s: float, mss_bytes: int, costs: CpuCosts
) -> dict:
    """Run one ``strategy`` over the TCP model on ``network`` (its bandwidth, loss and seed; the
    RTT is the sweep's ``rtt_s``) with the receiver's CPU costs as virtual time; its figures."""
    sim = Simulator(network.seed)
    path = network.path(sim, rtt_s=rtt_s, mtu_bytes=mss_bytes + 40, name="demux")
    # HTTP/2's transport as every HTTP connection over the models gets it; the bytes on it are the real h2's.
    tcp = transport_for(sim, path, "h2", TransportConfig(mss_bytes=mss_bytes), name="demux/tcp")
    server, consumer, rx = endpoints(strategy, cfg, impl)
    kernel = _Kernel()
    state = {
        "busy_until": 0.0,
        "scheduled": False,
        "done_s": None,
        "busy_s": 0.0,
        "stalled_since": None,
        "stall_s": 0.0,
        "peak_kernel": 0,
    }

    def server_send() -> None:
        data = server.pump()
        if data:
            tcp.server.write(0, data)
        blocked = not server.done and not any(server._allowed(sid) > 0 for sid in server.ids)
        if blocked and state["stalled_since"] is None:
            state["stalled_since"] = sim.now
        elif not blocked and state["stalled_since"] is not None:
            state["stall_s"] += sim.now - state["stalled_since"]
            state["stalled_since"] = None

    def on_server_data(_sid, data, _end, _t) -> None:
        server.receive(data)
        server_send()

    def schedule() -> None:
        if not state["scheduled"] and state["done_s"] is None:
            state["scheduled"] = True
            sim.call_at(max(sim.now, state["busy_until"]), wake)

    def on_client_data(_sid, data, _end, _t) -> None:
        kernel.data += data
        state["peak_kernel"] = max(state["peak_kernel"], len(kernel))
        schedule()

    def write_updates(data: bytes) -> None:
        tcp.client.write(0, data)

    def wake() -> None:
        state["scheduled"] = False
        before = (rx.reads, rx.frames, rx.dispatches, rx.wakeups, rx.copied_bytes, consumer.consumed_total)
        rx.wakeup(kernel)
        after = (rx.reads, rx.frames, rx.dispatches, rx.wakeups, rx.copied_bytes, consumer.consumed_total)
        d = [a - b for a, b in zip(after, before)]
        busy = (
            d[0] * costs.read_s
            + d[1] * costs.frame_s
            + d[2] * costs.dispatch_s
            + d[3] * costs.wakeup_s
            + d[4] / costs.copy_bytes_per_s
            + d[5] / costs.consume_bytes_per_s
        )
        state["busy_s"] += busy
        end = sim.now + busy
        state["busy_until"] = end
        if kernel.sent:
            sim.call_at(end, write_updates, b"".join(kernel.sent))
            kernel.sent.clear()
        if consumer.done:
            state["done_s"] = end
            return
        if rx.has_pending or len(kernel):
            schedule()

    tcp.server.on_data = on_server_data
    tcp.client.on_data = on_client_data
    server_send()
    sim.run()
    if state["done_s"] is None:
        raise RuntimeError(
            f"{strategy}: the model transfer stalled with {consumer.consumed_total} of {consumer.total} bytes consumed"
        )
    if state["stalled_since"] is not None:
        state["stall_s"] += state["done_s"] - state["stalled_since"]
    stats = tcp.stats()
    done = state["done_s"]
    return {
        "completion_s": done,
        "goodput_mb_s": consumer.total / done / 1e6,
        "receiver_busy_s": state["busy_s"],
        "receiver_busy_share": state["busy_s"] / done,
        "window_stall_s": state["stall_s"],
        "peak_socket_queue_bytes": state["peak_kernel"],
        **counters(rx),
        "window_updates_sent": consumer.window_updates,
        "packets_sent": stats["packets_sent"],
        "packets_lost": stats["packets_lost"],
        **timer_counts([stats]),
        "events": sim.events_run,
    }
