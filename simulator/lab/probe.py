"""Small measuring tools for the lab's link (``python -m simulator.lab.probe ...``).

The link is measured, not assumed: the tests and the benchmark run these on each side of
a ``workbench lab shell`` (a user can as well, or bring their own tools).  Each prints one
line of JSON.  These are measurements on the wall clock (``time.perf_counter``), not
simulation.

    listen-tcp PORT [--send BYTES] [--cc NAME]
                                          accept connections; send BYTES on each, or close at once
                                          (--cc: the congestion control named on each accepted socket,
                                          printed as each one's line, {"cc": ...})
    connect-rtt HOST PORT --count N       N TCP connects; each one's time (SYN to SYN-ACK: one RTT)
    bulk HOST PORT                        receive one connection's bytes; goodput after the first quarter
    fetches HOST PORT --count N           N fresh connections one after another, each read to its end:
                                          each one's bytes and time from connect() to the end of stream
    udp-sink PORT [--idle 1s]             count datagrams until none came for --idle
    udp-send HOST PORT --count N --size B [--gap-us G]
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import time


def _listen_tcp(args) -> int:
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((args.bind, args.port))
    srv.listen(128)
    payload = b"x" * 65536
    while True:
        conn, _ = srv.accept()
        if args.cc:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, args.cc.encode())
            # the algorithm the socket got: the namespaces inherit the host's default otherwise
            got = conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).split(b"\0")[0].decode()
            print(json.dumps({"cc": got}), flush=True)
        left = args.send
        while left > 0:
            left -= conn.send(payload[: min(left, len(payload))])
        conn.close()


def _connect_rtt(args) -> int:
    times_ms = []
    for _ in range(args.count):
        t0 = time.perf_counter()
        s = socket.create_connection((args.host, args.port), timeout=10)
        times_ms.append((time.perf_counter() - t0) * 1e3)
        s.close()
        time.sleep(0.01)
    print(json.dumps({"connect_ms": times_ms}))
    return 0


def _fetches(args) -> int:
    seconds, sizes = [], []
    for _ in range(args.count):
        t0 = time.perf_counter()
        s = socket.create_connection((args.host, args.port), timeout=60)
        got = 0
        while chunk := s.recv(1 << 20):
            got += len(chunk)
        seconds.append(time.perf_counter() - t0)
        sizes.append(got)
        s.close()
    print(json.dumps({"bytes": sizes, "seconds": seconds}))
    return 0


def _bulk(args) -> int:
    s = socket.create_connection((args.host, args.port), timeout=30)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    mss = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG)
    marks, got = [], 0
    t0 = time.perf_counter()
    while True:
        chunk = s.recv(1 << 20)
        if not chunk:
            break
        got += len(chunk)
        marks.append((time.perf_counter() - t0, got))
    # The first quarter holds slow start; the rest is the link's steady rate.
    start = next(m for m in marks if m[1] >= got / 4)
    end = marks[-1]
    print(
        json.dumps(
            {
                "bytes": got,
                "mss_bytes": mss,
                "seconds": end[0],
                "goodput_bps": (end[1] - start[1]) * 8 / (end[0] - start[0]),
            }
        )
    )
    return 0


def _udp_sink(args) -> int:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 << 20)
    s.bind((args.bind, args.port))
    s.settimeout(args.first)
    count = 0
    try:
        while True:
            s.recv(65536)
            count += 1
            s.settimeout(args.idle)
    except socket.timeout:
        pass
    print(json.dumps({"received": count}), flush=True)
    return 0


def _udp_send(args) -> int:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    payload = b"u" * args.size
    gap_s = args.gap_us / 1e6
    next_t = time.perf_counter()
    for _ in range(args.count):
        s.sendto(payload, (args.host, args.port))
        if gap_s:
            next_t += gap_s
            while time.perf_counter() < next_t:
                pass
    print(json.dumps({"sent": args.count}))
    return 0


def main(argv=None) -> int:
    """The probe's command line; see the module docstring."""
    p = argparse.ArgumentParser(prog="python -m simulator.lab.probe")
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("listen-tcp")
    a.add_argument("port", type=int)
    a.add_argument("--bind", default="0.0.0.0")
    a.add_argument("--send", type=int, default=0)
    a.add_argument("--cc", default=None)
    a.set_defaults(func=_listen_tcp)
    a = sub.add_parser("connect-rtt")
    a.add_argument("host")
    a.add_argument("port", type=int)
    a.add_argument("--count", type=int, default=5)
    a.set_defaults(func=_connect_rtt)
    a = sub.add_parser("bulk")
    a.add_argument("host")
    a.add_argument("port", type=int)
    a.set_defaults(func=_bulk)
    a = sub.add_parser("fetches")
    a.add_argument("host")
    a.add_argument("port", type=int)
    a.add_argument("--count", type=int, default=10)
    a.set_defaults(func=_fetches)
    a = sub.add_parser("udp-sink")
    a.add_argument("port", type=int)
    a.add_argument("--bind", default="0.0.0.0")
    a.add_argument("--first", type=float, default=10.0, help="seconds to wait for the first datagram")
    a.add_argument("--idle", type=float, default=1.0)
    a.set_defaults(func=_udp_sink)
    a = sub.add_parser("udp-send")
    a.add_argument("host")
    a.add_argument("port", type=int)
    a.add_argument("--count", type=int, default=1000)
    a.add_argument("--size", type=int, default=100)
    a.add_argument("--gap-us", type=float, default=0.0)
    a.set_defaults(func=_udp_send)
    args = p.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
