"""OpenSSL's TLS 1.3 session tickets, as the page-load model's Linux servers write them
(``stacks.tls.session_ticket_bytes``): measured on a real handshake in memory."""

from __future__ import annotations

from simulator.stacks.tls import session_ticket_bytes


def test_session_tickets_follow_the_handshake_as_records_rfc8446_4_6_1():
    """RFC 8446 section 4.6.1: the server may send NewSessionTicket messages after the client's
    Finished; OpenSSL sends two by default.  Each is a record of a few hundred bytes (its
    ticket, nonce, lifetime and the record's 22 bytes of overhead), and two are twice one."""
    one, two = session_ticket_bytes(1), session_ticket_bytes(2)
    assert 100 < one < 1000
    assert two == 2 * one
    assert session_ticket_bytes(0) == 0
