"""hyperframe-compatible DATA and HEADERS frame objects that the frame scanner builds.

h2 receives frames as hyperframe objects: ``FrameBuffer`` builds each one with
``Frame.parse_frame_header`` + ``parse_body`` in Python, and ``H2Connection._receive_frame``
then evaluates ``repr(frame)`` for its trace log whether or not anything logs it.  For a
DATA frame hyperframe's repr serializes the whole body again and hex-encodes all of it
to keep 20 hex digits: about 20 us for a 16 KiB frame, most of h2's receive time on a
bulk download.

``frame_classes(impl)`` gives, per scanner implementation (the C extension or its
pure-Python twin), a subclass of ``hyperframe.frame.DataFrame`` named ``DataFrame``
whose instances ``H2Scanner.next_frame`` builds directly from the receive buffer (C:
in C) with exactly the attributes hyperframe's parser sets, in the same order
(``stream_id``, ``flags`` -- a real ``hyperframe.flags.Flags`` --, ``body_len``,
``pad_length``, ``data``), and whose ``__repr__`` returns hyperframe's string from the
first 10 bytes.  Every method is hyperframe's own (``serialize``, ``parse_body``,
``flow_controlled_length``...).  Only frames hyperframe accepts are built this way
(stream id not 0, length within SETTINGS_MAX_FRAME_SIZE, padding shorter than the
payload, RFC 9113 section 6.1); every other frame still goes through hyperframe, with
h2's exceptions.  h2 dispatches on ``frame.__class__``, so ``h2buffer.install`` maps
the subclass to h2's own DATA handler on the connection.

Likewise a subclass of ``hyperframe.frame.HeadersFrame`` named ``HeadersFrame`` for the
HEADERS frames that end their header block (END_HEADERS; RFC 9113 section 6.2), with
``HeadersFrame.__init__``'s attribute order (``stream_id``, ``flags``, ``body_len``,
``depends_on``, ``stream_weight``, ``exclusive``, ``pad_length``, ``data``): every
response and request a page load receives has one, and hyperframe's parser and repr
were most of the scanner buffer's remaining time on a page replay.  A HEADERS frame
without END_HEADERS (h2 holds it until its CONTINUATION frames) goes through hyperframe.

Written by hand: hyperframe has no cheaper constructor and h2 no hook for one.  If the
installed hyperframe's ``DataFrame`` ever changes its flags, no class is registered and
every frame goes through hyperframe; if its ``HeadersFrame`` does, HEADERS frames do.
"""

from __future__ import annotations

from types import ModuleType

from hyperframe.flags import Flag, Flags
from hyperframe.frame import DataFrame as _HyperframeDataFrame
from hyperframe.frame import Frame
from hyperframe.frame import HeadersFrame as _HyperframeHeadersFrame

__all__ = ["frame_classes", "FAST_PATH_AVAILABLE", "HEADERS_FAST_PATH_AVAILABLE"]

# The layout the builders replicate (hyperframe 6: DataFrame.defined_flags).
FAST_PATH_AVAILABLE = list(_HyperframeDataFrame.defined_flags) == [Flag("END_STREAM", 0x01), Flag("PADDED", 0x08)]
# hyperframe 6: HeadersFrame.defined_flags, and its __init__ chain (Padding, Priority, Frame).
HEADERS_FAST_PATH_AVAILABLE = (
    FAST_PATH_AVAILABLE
    and list(_HyperframeHeadersFrame.defined_flags)
    == [Flag("END_STREAM", 0x01), Flag("END_HEADERS", 0x04), Flag("PADDED", 0x08), Flag("PRIORITY", 0x20)]
    and list(vars(_HyperframeHeadersFrame(1)))
    == ["stream_id", "flags", "body_len", "depends_on", "stream_weight", "exclusive", "pad_length", "data"]
)

_CLASSES: dict[str, dict[type, type]] = {}


def _rebuild(impl_name: str, state: dict, kind: str = "DataFrame"):
    """Unpickle (or copy) a frame of class ``kind`` built by ``impl_name``'s scanner."""
    from . import get_implementation

    cls = next(c for c in frame_classes(get_implementation(impl_name)) if c.__name__ == kind)
    frame = cls.__new__(cls)
    frame.__dict__.update(state)
    return frame


def _subclass(base: type, impl_name: str) -> type:
    kind = base.__name__
    return type(
        kind,
        (base,),
        {
            "__slots__": (),
            "__module__": __name__,
            "__qualname__": kind,
            "__doc__": f"hyperframe's {kind}, built by the {impl_name} frame scanner (see {__name__}).",
            # Two classes share the name, so pickle by implementation, not by name.
            "__reduce__": lambda self, name=impl_name, kind=kind: (_rebuild, (name, self.__dict__, kind)),
        },
    )


def frame_classes(impl: ModuleType) -> dict[type, type]:
    """``{subclass: hyperframe class}`` for the frames ``impl``'s ``H2Scanner.next_frame``
    builds (registered with ``impl`` on first use); empty when the fast path is off."""
    name = impl.IMPLEMENTATION
    if name not in _CLASSES:
        if not FAST_PATH_AVAILABLE:
            _CLASSES[name] = {}
        else:
            cls = _subclass(_HyperframeDataFrame, name)
            classes = {cls: _HyperframeDataFrame}
            if HEADERS_FAST_PATH_AVAILABLE:
                headers = _subclass(_HyperframeHeadersFrame, name)
                impl.register_h2_frame_classes(
                    cls,
                    Flags,
                    ("END_STREAM", "PADDED"),
                    Frame.__repr__,
                    headers,
                    ("END_STREAM", "END_HEADERS", "PADDED", "PRIORITY"),
                )
                classes[headers] = _HyperframeHeadersFrame
            else:
                impl.register_h2_frame_classes(cls, Flags, ("END_STREAM", "PADDED"), Frame.__repr__)
            _CLASSES[name] = classes
    return _CLASSES[name]
