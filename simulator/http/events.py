"""What an HTTP connection over the transport models reports: one set of events.

Written by hand.  Every connection of ``simulator/http`` that runs on the TCP, QUIC or
2017 models (``connection.HttpConnection``, its header blocks in ``blocks``) reports what
happened as these events, named as h2's (``h2.events``) and aioquic's
(``aioquic.h3.events``), handed to its ``on_event`` as they happen in virtual time rather
than returned from a ``receive_data`` call.

- Messages (``HttpConnection``'s ends): ``HeadersReceived`` (a section decoded whole,
  ``trailers`` for a trailer section, RFC 9110 section 6.5), ``DataReceived`` (body bytes,
  in order, framing removed), ``StreamEnded``, and ``DataAcked`` (body bytes the transport
  acknowledged, for a sender that paces itself).
- Header blocks and their compression instructions (``blocks``, the HOL study's codecs
  behind them), each naming the direction (``kind``: "request" or "response"):
  ``HeaderBlockArrived`` (every byte of a block's frames is at the receiver, in order or
  not), ``HeaderBlockReceived`` (the block whole and in order: "header block complete"),
  ``EncoderStreamReceived`` and ``DecoderStreamReceived`` (instructions delivered),
  ``HeaderBlockAcked`` and ``EncoderStreamAcked`` (the sender's transport acknowledged them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

__all__ = [
    "Event",
    "HeadersReceived",
    "DataReceived",
    "StreamEnded",
    "DataAcked",
    "HeaderBlockArrived",
    "HeaderBlockReceived",
    "EncoderStreamReceived",
    "DecoderStreamReceived",
    "HeaderBlockAcked",
    "EncoderStreamAcked",
    "ignore",
]


# -- messages ------------------------------------------------------------------------------


@dataclass(slots=True)
class HeadersReceived:
    """A header section arrived and decoded whole: a request's or response's head, or its
    trailers (``trailers``; RFC 9110 section 6.5)."""

    stream_id: int
    headers: tuple
    trailers: bool = False


@dataclass(slots=True)
class DataReceived:
    """``length`` more body bytes of ``stream_id`` arrived (in order, framing removed)."""

    stream_id: int
    length: int


@dataclass(slots=True)
class StreamEnded:
    """The message on ``stream_id`` ended (END_STREAM, FIN, last chunk or Content-Length reached)."""

    stream_id: int


@dataclass(slots=True)
class DataAcked:
    """The transport acknowledged ``payload_bytes`` of the body this end sent on ``stream_id``
    (cumulative; a server's responses only)."""

    stream_id: int
    payload_bytes: int


# -- header blocks and compression instructions --------------------------------------------


@dataclass(slots=True)
class HeaderBlockArrived:
    """Every byte of the frames of ``kind``'s block on ``stream_id`` is at the receiver."""

    kind: str
    stream_id: int
    time_s: float


@dataclass(slots=True)
class HeaderBlockReceived:
    """``kind``'s header block on ``stream_id``, whole and in order, for the decoder."""

    kind: str
    stream_id: int
    block: bytes
    time_s: float


@dataclass(slots=True)
class EncoderStreamReceived:
    """Encoder instructions of ``kind``'s encoder, delivered to its decoder."""

    kind: str
    data: bytes
    time_s: float


@dataclass(slots=True)
class DecoderStreamReceived:
    """Decoder instructions of ``kind``'s decoder, delivered to its encoder."""

    kind: str
    data: bytes


@dataclass(slots=True)
class HeaderBlockAcked:
    """The transport acknowledged ``kind``'s block on ``stream_id`` (its sender learns it)."""

    kind: str
    stream_id: int


@dataclass(slots=True)
class EncoderStreamAcked:
    """The transport acknowledged ``kind``'s encoder stream up to ``offset`` bytes."""

    kind: str
    offset: int


Event = Union[
    HeadersReceived,
    DataReceived,
    StreamEnded,
    DataAcked,
    HeaderBlockArrived,
    HeaderBlockReceived,
    EncoderStreamReceived,
    DecoderStreamReceived,
    HeaderBlockAcked,
    EncoderStreamAcked,
]


def ignore(event: Event) -> None:
    """The ``on_event`` of a connection nobody listens to yet: drops the event."""
