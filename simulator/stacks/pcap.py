"""Captures of simulated packets that real tools read (pcap, raw IPv4).  Written by hand.

The capture point is each sender's interface: every packet is recorded when it is put
on the link, with its simulated send time (nanosecond pcap), including packets the
link then loses; so a retransmission appears after its original, as a capture on the
sending host shows it.  Each record is exactly the simulated packet's size.

- QUIC (h3): each datagram inside a synthetic IPv4 + UDP header (client
  10.0.0.1:50000+i, server 10.(i // 250).1.(i % 250 + 1):443 for the i-th connection).  With the key log
  written by ``--keylog``, Wireshark/tshark decrypt it.
- TCP (h2): the TCP model's segments get synthetic IPv4 + TCP headers: fixed initial
  sequence numbers, SYN/SYN-ACK/ACK when the model ran its handshake, data segments with
  PSH|ACK and the sender's current receive point as acknowledgement number, pure ACKs
  with the model's cumulative ACK.  The payload is the bytes the segment carried: TLS
  records on port 443 (with the ``--keylog`` file, tshark decrypts them and dissects
  the HTTP/2 inside, negotiated by ALPN), or cleartext HTTP/2 on port 80 with
  ``tls=False`` (prior knowledge: decode TCP port 80 as HTTP/2).  Retransmissions carry
  the same sequence numbers as their originals.  No options, a fixed 65,535-byte window
  (the model has no flow control).

Checksums (IPv4, TCP, UDP) are computed (RFC 791, RFC 9293 section 3.1, RFC 768).
"""

from __future__ import annotations

import struct
from array import array

from ..engine import Simulator
from ..net.link import Link, Packet
from ..net.tcp import TcpAck, TcpControl, TcpSegment

__all__ = ["PcapRecorder", "write_pcap", "LINKTYPE_RAW"]

LINKTYPE_RAW = 101  # raw IPv4/IPv6, no link-layer header
_PCAP_NS_MAGIC = 0xA1B23C4D  # pcap with nanosecond timestamps
_CLIENT_ISN = 1_000_000
_SERVER_ISN = 5_000_000
_TCP_FLAGS = {"SYN": 0x02, "SYN-ACK": 0x12, "ACK": 0x10}
_FIN, _SYN, _PSH, _ACK = 0x01, 0x02, 0x08, 0x10


def _checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\x00"
    words = array("H", data)
    total = sum(words)
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    value = ~total & 0xFFFF
    # array("H") reads native (little-endian) words: swap back to network order.
    return ((value & 0xFF) << 8) | (value >> 8) if array("H", b"\x01\x00")[0] == 1 else value


def _ip(src: bytes, dst: bytes, proto: int, payload: bytes, ident: int) -> bytes:
    header = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), ident & 0xFFFF, 0x4000, 64, proto, 0, src, dst)
    return header[:10] + struct.pack(">H", _checksum(header)) + header[12:] + payload


def _udp(src: bytes, dst: bytes, sport: int, dport: int, payload: bytes) -> bytes:
    length = 8 + len(payload)
    pseudo = struct.pack(">4s4sBBH", src, dst, 0, 17, length)
    header = struct.pack(">HHHH", sport, dport, length, 0)
    csum = _checksum(pseudo + header + payload) or 0xFFFF
    return struct.pack(">HHHH", sport, dport, length, csum) + payload


def _tcp(src: bytes, dst: bytes, sport: int, dport: int, seq: int, ack: int, flags: int, payload: bytes) -> bytes:
    header = struct.pack(">HHLLBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, 5 << 4, flags, 65535, 0, 0)
    pseudo = struct.pack(">4s4sBBH", src, dst, 0, 6, len(header) + len(payload))
    csum = _checksum(pseudo + header + payload)
    return header[:16] + struct.pack(">H", csum) + header[18:] + payload


def _addr(text: str) -> bytes:
    return bytes(int(x) for x in text.split("."))


class PcapRecorder:
    """Records every packet the attached sessions put on their links."""

    def __init__(self, sim: Simulator) -> None:
        self.sim = sim
        self.records: list[tuple[float, bytes]] = []
        self._ident = 0

    def attach(self, session, *, index: int) -> None:
        """Record ``session``'s packets as IPv4 UDP (h3) or TCP (h2) between 10.0.0.1 and a per-``index`` server."""
        client_ip = _addr("10.0.0.1")
        server_ip = _addr(f"10.{index // 250}.1.{index % 250 + 1}")
        client_port = 50000 + index
        if session.stack == "h3":
            ends = (
                (session.path.forward, client_ip, server_ip, client_port, 443),
                (session.path.reverse, server_ip, client_ip, 443, client_port),
            )
            for link, src, dst, sport, dport in ends:
                self._hook(
                    link,
                    lambda packet, s=src, d=dst, sp=sport, dp=dport: self._record(
                        _ip(s, d, 17, _udp(s, d, sp, dp, packet.payload), self._next_ident())
                    ),
                )
        else:
            tcp = session.tcp
            handshake = session.params.tcp_handshake
            port = 443 if session.params.tls else 80
            ends = (
                (session.path.forward, tcp.client, client_ip, server_ip, client_port, port, _CLIENT_ISN, _SERVER_ISN),
                (session.path.reverse, tcp.server, server_ip, client_ip, port, client_port, _SERVER_ISN, _CLIENT_ISN),
            )
            for link, endpoint, src, dst, sport, dport, isn, peer_isn in ends:
                base, peer_base = (isn + 1, peer_isn + 1) if handshake else (isn, peer_isn)
                ends_of = (endpoint, src, dst, sport, dport, isn, base, peer_base, peer_isn)
                self._hook(
                    link,
                    lambda packet, a=ends_of: self._record(self._tcp_packet(packet, *a)),
                )

    def _next_ident(self) -> int:
        self._ident += 1
        return self._ident

    def _hook(self, link: Link, record) -> None:
        send = link.send

        def send_and_record(packet: Packet, deliver) -> bool:
            record(packet)
            return send(packet, deliver)

        link.send = send_and_record

    def _record(self, frame: bytes) -> None:
        self.records.append((self.sim.now, frame))

    def _tcp_packet(self, packet: Packet, endpoint, src, dst, sport, dport, isn, base, peer_base, peer_isn) -> bytes:
        p = packet.payload
        if isinstance(p, TcpSegment):
            payload = b"".join(bytes(piece[2]) for piece in p.pieces)
            if len(payload) != p.length:  # an empty end mark takes one sequence number: a FIN
                return _ip(
                    src,
                    dst,
                    6,
                    _tcp(
                        src,
                        dst,
                        sport,
                        dport,
                        base + p.seq,
                        peer_base + endpoint.rcv_nxt,
                        _FIN | _ACK | (_PSH if payload else 0),
                        payload,
                    ),
                    self._next_ident(),
                )
            segment = _tcp(src, dst, sport, dport, base + p.seq, peer_base + endpoint.rcv_nxt, _PSH | _ACK, payload)
        elif isinstance(p, TcpAck):
            segment = _tcp(src, dst, sport, dport, base + endpoint.snd_nxt, peer_base + p.ack, _ACK, b"")
        elif isinstance(p, TcpControl):
            if p.kind == "SYN":
                segment = _tcp(src, dst, sport, dport, isn, 0, _SYN, b"")
            elif p.kind == "SYN-ACK":
                segment = _tcp(src, dst, sport, dport, isn, peer_isn + 1, _SYN | _ACK, b"")
            else:
                segment = _tcp(src, dst, sport, dport, isn + 1, peer_isn + 1, _ACK, b"")
        else:  # pragma: no cover - a payload type the TCP model does not have
            raise TypeError(f"unknown TCP packet payload {p!r}")
        return _ip(src, dst, 6, segment, self._next_ident())

    def write(self, path: str) -> int:
        """Write the recorded packets as a pcap file at ``path``; the number of packets."""
        return write_pcap(path, self.records)


def write_pcap(path: str, records) -> int:
    """Write ``(time_s, ipv4_packet)`` records as a nanosecond pcap (LINKTYPE_RAW)."""
    from ..outfiles import write_output

    out = [struct.pack("<IHHiIII", _PCAP_NS_MAGIC, 2, 4, 0, 0, 65535, LINKTYPE_RAW)]
    for time_s, frame in records:
        ns = round(time_s * 1e9)
        out.append(struct.pack("<IIII", ns // 1_000_000_000, ns % 1_000_000_000, len(frame), len(frame)))
        out.append(frame)
    write_output(path, b"".join(out))  # a device or FIFO written through, a file replaced whole
    return len(records)
