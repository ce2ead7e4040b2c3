"""hyperframe-compatible DATA frame objects that the frame scanner builds.

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

Written by hand: hyperframe has no cheaper constructor and h2 no hook for one.  If the
installed hyperframe's ``DataFrame`` ever changes its flags, no class is registered and
every frame goes through hyperframe.
"""

from __future__ import annotations

from types import ModuleType

from hyperframe.flags import Flag, Flags
from hyperframe.frame import DataFrame as _HyperframeDataFrame
from hyperframe.frame import Frame

__all__ = ["frame_classes", "FAST_PATH_AVAILABLE"]

# The layout the builders replicate (hyperframe 6: DataFrame.defined_flags).
FAST_PATH_AVAILABLE = list(_HyperframeDataFrame.defined_flags) == [Flag("END_STREAM", 0x01), Flag("PADDED", 0x08)]

_CLASSES: dict[str, dict[type, type]] = {}


def _rebuild(impl_name: str, state: dict):
    """Unpickle (or copy) a frame built by ``impl_name``'s scanner."""
    from . import get_implementation

    cls = next(iter(frame_classes(get_implementation(impl_name))))
    frame = cls.__new__(cls)
    frame.__dict__.update(state)
    return frame


def frame_classes(impl: ModuleType) -> dict[type, type]:
    """``{subclass: hyperframe class}`` for the frames ``impl``'s ``H2Scanner.next_frame``
    builds (registered with ``impl`` on first use); empty when the fast path is off."""
    name = impl.IMPLEMENTATION
    if name not in _CLASSES:
        if not FAST_PATH_AVAILABLE:
            _CLASSES[name] = {}
        else:
            cls = type("DataFrame", (_HyperframeDataFrame,), {
                "__slots__": (),
                "__module__": __name__,
                "__qualname__": "DataFrame",
                "__doc__": f"hyperframe's DataFrame, built by the {name} frame scanner (see {__name__}).",
                # Two classes share the name, so pickle by implementation, not by name.
                "__reduce__": lambda self, name=name: (_rebuild, (name, self.__dict__)),
            })
            impl.register_h2_frame_classes(cls, Flags, ("END_STREAM", "PADDED"), Frame.__repr__)
            _CLASSES[name] = {cls: _HyperframeDataFrame}
    return _CLASSES[name]
