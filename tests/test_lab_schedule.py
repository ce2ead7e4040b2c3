"""The lab servers' schedulers (``simulator.lab.schedule``): hypercorn's HTTP/2 and aioquic's
HTTP/3 sending in the order a scheduler of the priorities study picks, with the signals the
browser sent."""

from __future__ import annotations

import ssl

import priority
import pytest

from simulator.errors import InputError
from simulator.http.priority import PrioritySignal
from simulator.lab.schedule import ReadyStreams, SchedulerTree, packet_order, request_signal


def _tree(name: str) -> SchedulerTree:
    return SchedulerTree(name, priority)


def test_rfc9218_s5_the_request_priority_field_gives_urgency_and_incremental():
    assert request_signal([(b":path", b"/"), (b"priority", b"u=0, i")]) == PrioritySignal(urgency=0, incremental=True)
    assert request_signal([(b":path", b"/")]) == PrioritySignal()  # section 4.1: the defaults
    # Section 4: a server ignores what it does not understand: a malformed field is no signal.
    assert request_signal([(b"priority", b"u=9")]) == PrioritySignal()


def test_rfc9218_s4_the_lowest_urgency_goes_first_whatever_its_arrival():
    tree = _tree("rfc9218")
    for sid, field in ((1, b"u=3"), (3, b"u=1"), (5, b"u=0")):
        tree.insert_stream(sid)
        tree.signal(sid, request_signal([(b"priority", field)]))
    for sid in (1, 3, 5):
        tree.unblock(sid)
    assert [next(tree) for _ in range(3)] == [5, 5, 5]  # non-incremental: whole, in turn
    tree.remove_stream(5)
    assert next(tree) == 3
    tree.block(3)  # hypercorn: nothing buffered for 3 now
    assert next(tree) == 1
    tree.unblock(3)
    assert next(tree) == 3


def test_fifo_and_rr_and_the_deadlock_hypercorn_waits_on():
    fifo, rr = _tree("fifo"), _tree("rr")
    for tree in (fifo, rr):
        for sid in (1, 3, 5):
            tree.insert_stream(sid)
        for sid in (3, 1, 5):  # the order responses had bytes ready: their rank
            tree.unblock(sid)
    assert [next(fifo) for _ in range(3)] == [3, 3, 3]
    assert [next(rr) for _ in range(6)] == [3, 1, 5, 3, 1, 5]
    empty = _tree("fifo")
    empty.insert_stream(1)
    with pytest.raises(priority.DeadlockError):  # hypercorn's send task then waits for data
        next(empty)


def test_rfc7540_s5_3_the_tree_takes_the_placement_of_headers_and_priority_frames():
    tree = _tree("tree")
    tree.insert_stream(1)
    tree.insert_stream(3, depends_on=1, weight=200, exclusive=True)
    assert tree.signals[3].parent == 1 and tree.signals[3].weight == 200 and tree.signals[3].exclusive
    tree.unblock(1)
    tree.unblock(3)
    assert next(tree) == 1  # 5.3.1: a dependent stream waits while its parent can send
    tree.reprioritize(3, depends_on=0, weight=16, exclusive=False)
    with pytest.raises(priority.DuplicateStreamError):
        tree.insert_stream(1)
    with pytest.raises(priority.MissingStreamError):
        tree.reprioritize(7)


def test_rfc9218_s7_a_priority_update_moves_a_waiting_stream():
    streams = ReadyStreams("rfc9218")
    streams.signal(0, PrioritySignal(urgency=3))
    streams.signal(4, PrioritySignal(urgency=3))
    streams.ready(0, True)
    streams.ready(4, True)
    assert streams.pick() == 0
    streams.update_field(4, b"u=0")
    assert streams.pick() == 4
    streams.update_field(4, b"u=x")  # malformed: ignored (section 4)
    assert streams.signals[4].urgency == 0


def test_hypercorn_still_has_what_the_adapters_rebind():
    from simulator.lab.schedule import check_hypercorn

    check_hypercorn()


def test_an_unknown_scheduler_is_refused_naming_the_choices():
    from simulator.lab.study import LabLoadParams

    with pytest.raises(InputError, match="rfc9218"):
        LabLoadParams(scheduler="nope")
    assert "scheduler" not in LabLoadParams().batch_dict()  # folders recorded before resume as they were
    assert LabLoadParams(scheduler="fifo").batch_dict()["scheduler"] == "fifo"


# ----------------------------------------------------------- HTTP/3 on real aioquic connections


class _Sender:
    def __init__(self, data: int) -> None:
        self.data = data

    @property
    def buffer_is_empty(self) -> bool:
        return self.data == 0


class _Stream:
    def __init__(self, stream_id: int, data: int) -> None:
        self.stream_id, self.sender, self.is_finished = stream_id, _Sender(data), False


class _Builder:
    def __init__(self, room: int) -> None:
        self.remaining_flight_space = room


def _fill(order, builder) -> list[tuple[int, int]]:
    """As aioquic's ``_write_application``: each stream yielded writes what fits."""
    wrote = []
    for stream in order:
        n = min(stream.sender.data, builder.remaining_flight_space)
        if n:
            stream.sender.data -= n
            builder.remaining_flight_space -= n
            wrote.append((stream.stream_id, n))
    return wrote


def test_rfc9000_s2_1_control_and_qpack_streams_go_first_then_the_schedulers_pick():
    streams = ReadyStreams("lifo")
    queue = [_Stream(0, 3000), _Stream(3, 20), _Stream(4, 3000), _Stream(7, 10)]
    builder = _Builder(1200)
    assert _fill(packet_order(streams, queue, builder), builder) == [(3, 20), (7, 10), (4, 1170)]
    builder = _Builder(1200)
    assert _fill(packet_order(streams, queue, builder), builder) == [(4, 1200)]
    builder = _Builder(1200)  # 4 has 630 left: then 0, which lifo ranks after it
    assert _fill(packet_order(streams, queue, builder), builder) == [(4, 630), (0, 570)]
    assert 4 not in streams.waiting


def _quic_pair(scheduler: str | None):
    from aioquic.quic.configuration import QuicConfiguration
    from aioquic.quic.connection import QuicConnection

    from simulator.lab.schedule import ReadyStreams
    from simulator.stacks.aioquic_patches import StreamPull
    from simulator.stacks.tls import make_certificate

    class Server(StreamPull, QuicConnection):
        pass

    cert, key = make_certificate(1)
    server_config = QuicConfiguration(is_client=False, alpn_protocols=["h3"], certificate=cert, private_key=key)
    client_config = QuicConfiguration(
        is_client=True, alpn_protocols=["h3"], verify_mode=ssl.CERT_NONE, server_name="server.example"
    )
    client = QuicConnection(configuration=client_config)
    server = Server(
        configuration=server_config, original_destination_connection_id=client.original_destination_connection_id
    )
    if scheduler is not None:
        ready = ReadyStreams(scheduler)
        server.stream_order = lambda queue, builder: packet_order(ready, queue, builder)
    return client, server


_CLIENT, _SERVER = ("192.0.2.1", 50000), ("192.0.2.2", 443)  # RFC 5737 documentation addresses


def _exchange(a, b, now: float) -> int:
    n = 0
    for data, _ in a.datagrams_to_send(now=now):
        b.receive_datagram(data, _CLIENT if b._is_client is False else _SERVER, now=now)
        n += 1
    return n


def _received_order(scheduler: str | None) -> list[int]:
    """Three 30 KB responses on streams 0, 4, 8, buffered whole at once; the stream of each
    STREAM frame's data as the client receives them."""
    from aioquic.quic.events import StreamDataReceived

    client, server = _quic_pair(scheduler)
    now = 0.0
    client.connect(_SERVER, now=now)
    for _ in range(10):
        now += 0.01
        _exchange(client, server, now)
        _exchange(server, client, now)
    for sid in (0, 4, 8):
        client.send_stream_data(sid, b"GET", end_stream=True)
    for _ in range(3):
        now += 0.01
        _exchange(client, server, now)
        _exchange(server, client, now)
    assert all(sid in server._streams for sid in (0, 4, 8)), "the requests did not arrive"
    for sid in (0, 4, 8):
        server.send_stream_data(sid, bytes(30_000), end_stream=True)
    order = []
    for _ in range(400):
        now += 0.005
        moved = _exchange(server, client, now) + _exchange(client, server, now)
        while (event := client.next_event()) is not None:
            if isinstance(event, StreamDataReceived) and event.data:
                order.append(event.stream_id)
        if not moved and len(order) and now > 1.0:
            break
    return order


def _runs(order: list[int]) -> list[int]:
    return [sid for i, sid in enumerate(order) if i == 0 or order[i - 1] != sid]


def test_rfc9218_on_aioquic_fifo_sends_each_response_whole_where_aioquic_alone_rotates():
    """aioquic alone fills each packet round-robin over its streams (``_write_application``);
    with ``fifo`` as the lab's order the three responses arrive one after the other."""
    assert _runs(_received_order("fifo")) == [0, 4, 8]
    assert _runs(_received_order("lifo")) == [8, 4, 0]
    own = _runs(_received_order(None))
    assert len(own) > 3  # interleaved: the test would see a scheduler that did nothing
