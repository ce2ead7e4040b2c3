"""The QUIC model's handshake (RFC 9001): its datagrams, their sizes and timing; no TLS.

Written by hand.  ``handshake=True`` (off by default): the client sends its Initial
padded to the full datagram (RFC 9000 section 14.1), the server answers with its
Initial + Handshake flight (``server_flight_bytes`` of TLS in CRYPTO frames, as
``http.handshake`` measures aioquic's: one full datagram for the stacks' Ed25519
certificate), the client then has 1-RTT keys: it sends its Finished (padded: the
datagram holds the Initial ACK) and its 1-RTT data, one RTT after the start (no 0-RTT).
The server processes 1-RTT packets only once the Finished arrived
(RFC 9001 section 5.7: it holds them), then sends HANDSHAKE_DONE in its first 1-RTT
packet, which confirms the handshake to the client.  Each side takes an RTT sample from
the handshake.  Lost handshake datagrams are resent at a probe timeout (timer slot
``handshake``): aioquic's, twice the initial RTT before any RTT sample, then
smoothed_rtt + max(4 rttvar, 1 ms), doubling at each expiry (RFC 9002 section 6.2.1); a
server that sees the ClientHello again resends its flight at once, once (6.2.3, as
aioquic).  Handshake datagrams are outside the congestion window.

A probe timeout declares what it resends lost (``pto_declares_lost=True``, off by
default): aioquic's ``reschedule_data`` does, although RFC 9002 section 6.2 says a PTO must
not, so an ACK of a handshake datagram sent before the resend yields no RTT sample (5.1).
Above twice the initial RTT the handshake then gives no sample, and the first window
leaves unpaced (the pacer has no rate before a sample).

``chromium_client_hello=True`` (off by default): the client's ClientHello as Chromium sends
it, found in the lab's qlogs.  It spans two Initial datagrams (its ML-KEM key share), their
CRYPTO frames out of order (Chromium's chaos protection).  aioquic takes the first piece for a
repeat and answers it at once with a probe: an ACK and a PING in a padded Initial, its one
speed-up (RFC 9002 6.2.3), spent.  The client acknowledges that PING at once (RFC 9000
13.2.1), and the PING is no CRYPTO for a probe timeout to declare lost: the server has its RTT
sample one round trip after the start at any RTT, and paces its first window.  The client's
Finished then leaves unpadded (``CHROMIUM_FINISHED_BYTES``): no Initial packet rides with it.

``Handshake`` is a part of ``connection.QuicEndpoint`` (its methods, the endpoint's
state: ``ready``, ``handshake_done_s``, the ``_hs_*`` fields, ``_held``).
"""

from __future__ import annotations

from ..link import Packet
from ..transport import TransportConfig
from .packet import UDP_IP_HEADER_BYTES

__all__ = [
    "Handshake",
    "CryptoDatagram",
    "server_flight_sizes",
    "SERVER_FLIGHT_CRYPTO_BYTES",
    "CRYPTO_PACKET_OVERHEAD_BYTES",
    "CRYPTO_ACK_BYTES",
    "HANDSHAKE_DONE_BYTES",
    "CHROMIUM_FINISHED_BYTES",
]

# Handshake (RFC 9001) datagrams: the client's Initial and its Handshake flight are padded
# to the full datagram (a client datagram holding an Initial packet: RFC 9000 section
# 14.1), the server's Initial + Handshake flight fills full datagrams.  Its CRYPTO bytes
# are a parameter: the HTTP layer passes the size aioquic sends with the certificate in use
# (``http.handshake.flights``, 638 B for the stacks' certificate); this default, for the
# transport model on its own, is any flight that fits one datagram.
SERVER_FLIGHT_CRYPTO_BYTES = 1100
CRYPTO_PACKET_OVERHEAD_BYTES = 2 * (1 + 4 + 1 + 8 + 1 + 8 + 2 + 2 + 16)  # two long headers (17.2) + AEAD tags
CRYPTO_ACK_BYTES = 1 + 4 + 1 + 8 + 1 + 8 + 2 + 16 + 5  # a long-header packet holding only an ACK frame
# Chromium's Finished: its Handshake ACK (39 B) and Finished (89 B) packets, unpadded, as the
# lab's qlog has them (its Initial ACK left before, padded, at the server's PING).
CHROMIUM_FINISHED_BYTES = 39 + 89
HANDSHAKE_DONE_BYTES = 200  # the server's first 1-RTT packet: HANDSHAKE_DONE, NEW_CONNECTION_IDs (19.15)


def server_flight_sizes(config: TransportConfig, server_flight_bytes: int) -> list[int]:
    """The server's Initial + Handshake flight: full datagrams (RFC 9000 14.1 pads Initials)."""
    per_datagram = config.max_datagram_bytes - CRYPTO_PACKET_OVERHEAD_BYTES
    return [config.max_datagram_bytes] * max(1, -(-server_flight_bytes // per_datagram))


class CryptoDatagram:
    """A handshake datagram (Initial / Handshake packets, RFC 9001): ``kind`` is
    "client_initial", "server_flight", "client_finished", "ack" (an ACK of the peer's
    handshake datagrams and nothing else) or "ping" (the server's probe: ACK and PING);
    ``index`` numbers the datagrams of a flight; ``echo_s`` is the send time of the peer
    datagram this one acknowledges (RTT sample)."""

    __slots__ = ("kind", "index", "size_bytes", "time_sent_s", "echo_s", "acked")

    def __init__(
        self, kind: str, index: int, size_bytes: int, time_sent_s: float, echo_s: float | None = None, acked: tuple = ()
    ) -> None:
        self.kind = kind
        self.index = index
        self.size_bytes = size_bytes
        self.time_sent_s = time_sent_s
        self.echo_s = echo_s
        self.acked = acked  # indices of the peer's current flight it acknowledges

    def __repr__(self) -> str:
        return f"CryptoDatagram({self.kind} {self.index}, {self.size_bytes} B)"


class Handshake:
    """The handshake of ``QuicEndpoint``: crypto datagrams, their probe timeouts, the RTT samples they give."""

    __slots__ = ()

    def start_handshake(self) -> None:
        """Client: send the Initial (ClientHello), padded to the full datagram (RFC 9000 14.1);
        two of them for Chromium's."""
        self._hs_send_flight("client_initial", [self.config.max_datagram_bytes] * self._hs_hello_datagrams)

    @property
    def _hs_hello_datagrams(self) -> int:
        return 2 if self.chromium_client_hello else 1

    def _hs_send_flight(self, kind: str, sizes: list[int]) -> None:
        self._hs_flight = [[kind, index, size, False] for index, size in enumerate(sizes)]
        self._hs_pto_count = 0
        for kind_, index, size, _ in self._hs_flight:
            self._hs_transmit(kind_, index, size)
        self._hs_arm()

    def _hs_transmit(self, kind: str, index: int, size_bytes: int, echo_s: float | None = None) -> None:
        now = self.sim.now
        datagram = CryptoDatagram(
            kind,
            index,
            size_bytes,
            now,
            self._hs_peer_echo_s if echo_s is None else echo_s,
            tuple(sorted(self._hs_peer_received)),
        )
        self._hs_sent_s = now
        self.crypto_datagrams_sent += 1
        wire = size_bytes + UDP_IP_HEADER_BYTES
        self.bytes_sent += wire
        self.link.send(Packet(wire, datagram), self.peer._on_packet)

    def _hs_send_ack(self, size_bytes: int = CRYPTO_ACK_BYTES) -> None:
        """A datagram that only acknowledges the peer's handshake datagrams."""
        self._hs_transmit("ack", 0, size_bytes)

    def _hs_arm(self) -> None:
        """The handshake's probe timeout: aioquic's rule, twice the initial RTT before any RTT
        sample, then smoothed_rtt + max(4 rttvar, 1 ms) without max_ack_delay (RFC 9002
        6.2.1), doubling at each expiry (6.2.1)."""
        if all(entry[3] for entry in self._hs_flight):
            self.timers.cancel("handshake")
            return
        rtt = self.rtt
        if rtt.srtt_s is None:
            pto = 2 * self.config.initial_rtt_s
        else:
            pto = rtt.smoothed_s + max(4 * rtt.rttvar_s, rtt.granularity_s)
        self.timers.set("handshake", self._hs_sent_s + pto * (2**self._hs_pto_count), self._hs_timeout)

    def _hs_timeout(self) -> None:
        """Resend what of the flight is unacknowledged (RFC 9002 6.2.4: probes carry the CRYPTO data)."""
        self.handshake_ptos += 1
        self._hs_pto_count += 1
        self._hs_pto_s = self.sim.now
        for kind, index, size, acked in self._hs_flight:
            if not acked:
                self._hs_transmit(kind, index, size)
        self._hs_arm()

    def _hs_mark_acked(self, acked: tuple) -> None:
        for entry in self._hs_flight:
            if (entry[0], entry[1]) in acked:
                entry[3] = True
        self._hs_arm()

    def _hs_rtt_sample(self, echo_s: float | None) -> None:
        """The RTT sample of the handshake (RFC 9002 section 5.1): from the peer's echo of
        the send time of the datagram it acknowledges.  ``pto_declares_lost`` (aioquic): a
        probe timeout, or the server's speed-up on a repeated ClientHello, declares the
        datagrams it resends lost (``reschedule_data``), so an acknowledgement of a copy sent
        before the resend finds nothing to sample (RFC 9002 section 6.2 says a PTO must not
        declare packets lost; aioquic does)."""
        if echo_s is None:
            return
        if self.pto_declares_lost and self._hs_pto_s is not None and echo_s < self._hs_pto_s:
            return
        self._rtt_sample(self.sim.now - echo_s)

    def _on_crypto_datagram(self, datagram: CryptoDatagram) -> None:
        now = self.sim.now
        kind = datagram.kind
        if datagram.acked:
            self._hs_mark_acked(datagram.acked)
        if kind == "ack":
            if self._hs_ping_s is not None and datagram.echo_s == self._hs_ping_s:
                self._hs_ping_s = None  # the PING is no CRYPTO: no probe timeout declared it lost
                self._rtt_sample(now - datagram.echo_s)
            return
        key = (kind, datagram.index)
        duplicate = key in self._hs_peer_received
        self._hs_peer_received.add(key)
        if self.is_client:
            if kind == "ping":  # ack-eliciting: acknowledged at once (RFC 9000 13.2.1), padded (14.1)
                self._hs_transmit("ack", 0, self.config.max_datagram_bytes, echo_s=datagram.time_sent_s)
                return
            if kind != "server_flight":
                return
            flight = self.conn.server_flight_sizes
            if self.ready:
                self._hs_send_ack()  # a late copy: acknowledge it (Handshake ACK)
                return
            self._hs_peer_echo_s = datagram.time_sent_s
            if all(("server_flight", i) in self._hs_peer_received for i in range(len(flight))):
                # The server's flight is complete: the client has 1-RTT keys and sends its
                # Finished (with the Initial ACK, so padded, 14.1), then 1-RTT data (RFC 9001 4.1).
                self._hs_rtt_sample(datagram.echo_s)
                self.ready = True
                self._hs_mark_acked((("client_initial", 0),))
                finished = CHROMIUM_FINISHED_BYTES if self.chromium_client_hello else self.config.max_datagram_bytes
                self._hs_send_flight("client_finished", [finished])
                self._schedule_flush()
            else:
                self._hs_send_ack(self.config.max_datagram_bytes)  # holds an Initial ACK: padded
            return
        # server
        if kind == "client_initial":
            if not self._hs_flight:
                if any(("client_initial", i) not in self._hs_peer_received for i in range(self._hs_hello_datagrams)):
                    if not self._hs_sped_up:  # a piece of Chromium's shuffled ClientHello: aioquic probes
                        self._hs_sped_up = True
                        self._hs_ping_s = now
                        self._hs_transmit("ping", 0, self.config.max_datagram_bytes)
                    return
                self._hs_peer_echo_s = datagram.time_sent_s
                self._hs_send_flight("server_flight", self.conn.server_flight_sizes)
            elif (
                duplicate and not self._hs_sped_up and not all(e[3] for e in self._hs_flight) and self._hs_sent_s < now
            ):  # (not when its own PTO just resent it)
                # aioquic: a repeated ClientHello means the client lacks the server's flight:
                # resend it at once, once (RFC 9002 6.2.3, speeding up the handshake).
                self._hs_sped_up = True
                self._hs_pto_s = now  # aioquic declares the flight lost here too
                for kind_, index, size, acked in self._hs_flight:
                    if not acked:
                        self._hs_transmit(kind_, index, size)
                self._hs_arm()
            else:
                self._hs_send_ack()
        elif kind == "client_finished":
            self._hs_ping_s = None  # its Initial ACK covers the PING too
            self._hs_mark_acked(tuple(("server_flight", i) for i in range(len(self.conn.server_flight_sizes))))
            if self.ready:
                self._hs_send_ack()  # the client probes: it has not seen our 1-RTT packets
                return
            self._hs_rtt_sample(datagram.echo_s)
            self.ready = True
            self.handshake_done_s = now
            held, self._held = self._held, []
            for link_packet in held:
                self._on_packet(link_packet)
            # HANDSHAKE_DONE (RFC 9000 19.20) and new connection ids, in the first 1-RTT packet.
            self._send_packet([], HANDSHAKE_DONE_BYTES)
            self._set_loss_detection_timer()
            self._schedule_flush()

    def _handshake_confirmed(self) -> None:
        """Client: a 1-RTT packet from the server acknowledges the Finished (RFC 9001 4.1.2)."""
        self.handshake_done_s = self.sim.now
        for entry in self._hs_flight:
            entry[3] = True
        self.timers.cancel("handshake")
