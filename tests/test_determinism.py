"""The same seed gives byte-identical ``--json`` output in separate processes, whatever
``PYTHONHASHSEED`` is: for both real stacks (h2 over TLS 1.3 and cleartext), both
transport models, the HOL study, the push study (models and real stacks, HTTP/2 and
HTTP/3), the cross-stream study on a trace (bodies generated from the seed) and the trace
generator itself.  The trailers study has its own such test in ``tests/test_trailers.py``,
and the cross-stream study on a body folder in ``tests/test_crossstream.py``.

The C event queue and the C TCP model are held to their Python twins the same way: the
same JSON (and capture) from a run on each.

The trace has many origins and loss, because short bundled traces did not show the
HTTP/3 replay's dependence on memory addresses (``simulator.stacks.aioquic_patches``).
The push and cross-stream runs added later use the bundled page (faster); the replay
runs above cover many origins.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from simulator.engine import EVENT_QUEUES
from simulator.net import native
from simulator.stacks.aioquic_patches import InsertionOrderedSet

PAGE = str(Path(__file__).resolve().parent.parent / "traces" / "synthetic-page.har")

COMMON = ["--rtt", "80ms", "--bw", "20mbit", "--loss", "0.02", "--seed", "7", "--json"]
RUNS = {
    # h2 over TLS 1.3 (the default): OpenSSL's randoms change the ciphertext in every process,
    # never a record size or a time.
    "h2-tls": ["replay", "--stack", "h2", *COMMON],
    "h2-cleartext": ["replay", "--stack", "h2", "--no-tls", *COMMON],
    "h3": ["replay", "--stack", "h3", *COMMON],
    "tcp-model": ["replay", "--stack", "h2", "--model", *COMMON],
    "quic-model": ["replay", "--stack", "h3", "--model", *COMMON],
    "hol-quic": [
        "hol",
        "--scheme",
        "hpack,qpack,qcram,qcram-blocking",
        "--transport",
        "quic",
        "--loss",
        "0.02",
        "--seed",
        "3",
        "--json",
    ],
    "hol-tcp": ["hol", "--transport", "tcp", "--loss", "ge:0.01,0.3", "--seed", "3", "--json"],
    "hol-ref2017": ["hol", "--transport", "ref2017", "--loss", "0.02", "--jitter", "0.05", "--seed", "3", "--json"],
    "push-model-h2": ["push", "--protocol", "h2", "--loss", "0.02", "--cache", "0.5", "--seed", "3", "--json"],
    "coalescing": ["coalescing", "--loss", "0.02", "--p421", "0.3", "--cache", "0.5", "--seed", "3", "--json"],
    "coalescing-stacks": [
        "coalescing",
        "--backend",
        "stacks",
        "--no-tls",
        "--mode",
        "none,ip,origin",
        "--loss",
        "0.02",
        "--p421",
        "0.3",
        "--seed",
        "3",
        "--json",
    ],
    "push-stacks-h3": [
        "push",
        "--protocol",
        "h3",
        "--backend",
        "stacks",
        "--policy",
        "none,push+hints",
        "--loss",
        "0.02",
        "--cache",
        "0.5",
        "--seed",
        "3",
        "--json",
    ],
}
# On the bundled 79-exchange page: the push study's other two combinations, and the
# cross-stream study with bodies generated from the trace and the seed, sent over the
# QUIC model with loss.
PAGE_RUNS = {
    "push-model-h3": ["push", "--protocol", "h3", "--loss", "0.02", "--cache", "0.5", "--seed", "3", "--json"],
    "push-stacks-h2": [
        "push",
        "--protocol",
        "h2",
        "--backend",
        "stacks",
        "--no-tls",
        "--policy",
        "none,push+hints",
        "--loss",
        "0.02",
        "--cache",
        "0.5",
        "--seed",
        "3",
        "--json",
    ],
    "push-stacks-h2-tls": [
        "push",
        "--protocol",
        "h2",
        "--backend",
        "stacks",
        "--policy",
        "none,push+hints",
        "--loss",
        "0.02",
        "--cache",
        "0.5",
        "--seed",
        "3",
        "--json",
    ],
    "crossstream-trace": [
        "crossstream",
        "--codecs",
        "zstd:3",
        "--scheme",
        "shared,dcb",
        "--scoping",
        "context",
        "--transport",
        "quic",
        "--loss",
        "0.02",
        "--leak-lengths",
        "0",
        "--seed",
        "3",
        "--json",
    ],
}

# Studies that make their own input (no --trace).
NO_TRACE_RUNS = {
    "demux-model": [
        "demux",
        "--part",
        "model",
        "--streams",
        "3",
        "--size",
        "256KiB",
        "--window",
        "64KiB",
        "--rtt",
        "2ms,20ms",
        "--loss",
        "0.03",
        "--mss",
        "8000",
        "--seed",
        "7",
        "--json",
    ],
}


@pytest.fixture(scope="module")
def many_origins_trace(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("det") / "many-origins.har"
    _workbench(["trace", "synth", str(path), "--requests", "150", "--origins", "40", "--seed", "3"], hash_seed="0")
    return str(path)


def _workbench(args: list[str], *, hash_seed: str, pure_python: bool = False, net: str | None = None) -> bytes:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed, "WORKBENCH_PURE_PYTHON": "1" if pure_python else "0"}
    env.pop("WORKBENCH_NET", None)
    if net is not None:
        env["WORKBENCH_NET"] = net
    proc = subprocess.run([sys.executable, "-m", "simulator.cli", *args], env=env, capture_output=True, timeout=600)
    assert proc.returncode == 0, proc.stderr.decode()
    return proc.stdout


@pytest.mark.parametrize("name", sorted(RUNS))
def test_same_seed_byte_identical_across_processes_and_hash_seeds(name, many_origins_trace):
    args = [*RUNS[name][:1], "--trace", many_origins_trace, *RUNS[name][1:]]
    first = _workbench(args, hash_seed="0")
    second = _workbench(args, hash_seed="4242")
    assert first, "no output"
    assert first == second


@pytest.mark.parametrize("name", sorted(NO_TRACE_RUNS))
def test_same_seed_byte_identical_without_a_trace(name):
    first = _workbench(NO_TRACE_RUNS[name], hash_seed="0")
    second = _workbench(NO_TRACE_RUNS[name], hash_seed="4242")
    assert first, "no output"
    assert first == second


@pytest.mark.parametrize("name", sorted(PAGE_RUNS))
def test_page_runs_byte_identical_across_processes_and_hash_seeds(name):
    args = [*PAGE_RUNS[name][:1], "--trace", PAGE, *PAGE_RUNS[name][1:]]
    first = _workbench(args, hash_seed="0")
    second = _workbench(args, hash_seed="4242")
    assert first, "no output"
    assert first == second


@pytest.mark.skipif("c" not in EVENT_QUEUES, reason="the C extension simulator._engine is not built")
@pytest.mark.parametrize("name", ["h3", "quic-model", "hol-tcp"])
def test_c_engine_and_its_python_twin_give_byte_identical_results(name, many_origins_trace):
    """The event queue in C (``simulator._engine``) and in Python (``WORKBENCH_PURE_PYTHON=1``)
    run the same events in the same order: aioquic's timers, the models' timer slots, links."""
    args = [*RUNS[name][:1], "--trace", many_origins_trace, *RUNS[name][1:]]
    c = _workbench(args, hash_seed="0")
    python = _workbench(args, hash_seed="0", pure_python=True)
    assert c, "no output"
    assert c == python


@pytest.mark.skipif("c" not in native.IMPLEMENTATIONS, reason="the C extension simulator.net._tcp is not built")
@pytest.mark.parametrize("name", ["h2-cleartext", "tcp-model", "hol-tcp", "push-model-h2", "coalescing"])
def test_c_net_and_its_python_reference_give_byte_identical_results(name, many_origins_trace):
    """The TCP model's per-packet path in C (``simulator.net._tcp``) and in Python
    (``WORKBENCH_NET=python``), both on the C event queue: every user of the TCP model (the
    real h2 stack over it, its replay, the HOL study, the page-load model, the coalescing
    pool) prints the same JSON."""
    args = [*RUNS[name][:1], "--trace", many_origins_trace, *RUNS[name][1:]]
    c = _workbench(args, hash_seed="0")
    python = _workbench(args, hash_seed="0", net="python")
    assert c, "no output"
    assert c == python


@pytest.mark.skipif("c" not in native.IMPLEMENTATIONS, reason="the C extension simulator.net._tcp is not built")
def test_c_net_and_its_python_reference_write_the_same_capture(tmp_path):
    """The capture writer hooks each link's send and reads the TCP endpoints' sequence
    numbers: cleartext h2 over the TCP model gives the same pcap bytes on both."""
    written = []
    for net in ("c", "python"):
        pcap = tmp_path / f"{net}.pcap"
        _workbench(
            [
                "replay",
                "--stack",
                "h2",
                "--no-tls",
                "--trace",
                PAGE,
                "--loss",
                "0.02",
                "--seed",
                "5",
                "--pcap",
                str(pcap),
                "--json",
            ],
            hash_seed="0",
            net=net,
        )
        written.append(pcap.read_bytes())
    assert len(written[0]) > 10_000 and written[0] == written[1]


def test_trace_generator_byte_identical_across_processes_and_hash_seeds(tmp_path):
    """``workbench trace synth``: the traces every other run starts from."""
    written = []
    for hash_seed in ("0", "4242"):
        path = tmp_path / f"synth-{hash_seed}.har"
        _workbench(
            ["trace", "synth", str(path), "--requests", "120", "--origins", "30", "--seed", "5"], hash_seed=hash_seed
        )
        written.append(path.read_bytes())
    assert written[0] and written[0] == written[1]


def test_insertion_ordered_set_iterates_in_first_insertion_order():
    class Stream:  # hashes by id(), like aioquic's QuicStream
        pass

    streams = [Stream() for _ in range(50)]
    served = InsertionOrderedSet()
    for s in reversed(streams):
        served.add(s)
    served.add(streams[-1])  # a second add keeps the first position
    assert list(served) == list(reversed(streams))
    assert len(served) == 50 and streams[3] in served
    served.discard(streams[3])
    assert streams[3] not in served and len(served) == 49
    assert InsertionOrderedSet([1, 2]) == InsertionOrderedSet([2, 1])  # still a set for ==


def _connected_client():
    """An aioquic client whose handshake with an in-memory server has completed."""
    import ssl

    from aioquic.quic.configuration import QuicConfiguration
    from aioquic.quic.connection import QuicConnection

    from simulator.stacks.h3 import make_certificate

    client_config = QuicConfiguration(is_client=True, alpn_protocols=["hq-test"])
    client_config.verify_mode = ssl.CERT_NONE
    server_config = QuicConfiguration(is_client=False, alpn_protocols=["hq-test"])
    server_config.certificate, server_config.private_key = make_certificate(1)
    client = QuicConnection(configuration=client_config)
    client.connect(("10.0.0.2", 443), now=0.0)
    server, now = None, 0.0
    while not client._handshake_complete:
        now += 0.01
        assert now < 1.0, "handshake did not complete"
        for datagram, _ in client.datagrams_to_send(now=now):
            if server is None:
                server = QuicConnection(
                    configuration=server_config,
                    original_destination_connection_id=client.original_destination_connection_id,
                )
            server.receive_datagram(datagram, ("10.0.0.1", 50000), now=now)
        for datagram, _ in server.datagrams_to_send(now=now):
            client.receive_datagram(datagram, ("10.0.0.2", 443), now=now)
    return client, now


@pytest.mark.parametrize("body_bytes", [100, 3000])
def test_aioquic_serves_streams_round_robin_in_service_order(body_bytes):
    """RFC 9000 section 2.2 leaves stream scheduling to the sender; aioquic's rule
    (QuicConnection._write_application) moves the streams that sent to the back of its
    queue in the order they were served.  With the shim that holds exactly: the queue is
    always a rotation of the order the streams were opened in (a set ordered by memory
    address could shuffle it)."""
    import simulator.stacks.h3  # noqa: F401 - installs the shim
    from aioquic.quic import connection

    assert connection.set is InsertionOrderedSet
    client, now = _connected_client()
    opened = [0, 4, 8, 12, 16, 20, 24, 28]
    for stream_id in opened:
        client.send_stream_data(stream_id, b"x" * body_bytes)
    assert client.datagrams_to_send(now=now)
    queue = [s.stream_id for s in client._streams_queue]
    assert sorted(queue) == opened
    k = queue.index(0)
    assert queue[k:] + queue[:k] == opened
    if body_bytes == 100:  # all eight fit one packet: served in opening order
        assert queue == opened
