"""Small file helpers shared by the trace loaders and writers."""

from __future__ import annotations

import os
import stat

from ..errors import InputError

__all__ = ["atomic_write", "read_bytes", "read_input"]


def atomic_write(path: str, data: bytes) -> None:
    """Write the output file ``path``: a regular file replaced atomically (temporary file in
    the same folder, then ``os.replace``), a device, FIFO or symlink written through, never
    replaced (``simulator.outfiles.write_output``)."""
    from ..outfiles import write_output

    write_output(path, data)


def read_bytes(path: str) -> bytes:
    """The whole file at ``path``."""
    with open(path, "rb") as f:
        return f.read()


def read_input(path: str, limit: int | None = None, what: str = "trace file") -> bytes:
    """An input file's bytes; a missing file, a folder, a FIFO or device (read forever, or
    never), a file over ``limit`` bytes (``limits.MAX_TRACE_BYTES``) or an unreadable file
    is an ``InputError``."""
    from .limits import MAX_TRACE_BYTES

    limit = MAX_TRACE_BYTES if limit is None else limit
    try:
        st = os.stat(path)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError
        if not stat.S_ISREG(st.st_mode):
            kind = "a FIFO" if stat.S_ISFIFO(st.st_mode) else "a device or socket"
            raise InputError(f"is {kind}, not a {what} (read from regular files only).", path=path)
        if st.st_size > limit:
            raise InputError(f"is {st.st_size} bytes, above the limit of {limit} (simulator.traces.limits).", path=path)
        with open(path, "rb") as f:
            data = f.read(limit + 1)  # the file may have grown since the stat
    except FileNotFoundError:
        raise InputError("no such file.", path=path) from None
    except IsADirectoryError:
        raise InputError(f"is a directory, not a {what}.", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot be read ({exc.strerror}).", path=path) from None
    if len(data) > limit:
        raise InputError(f"is above the limit of {limit} bytes (simulator.traces.limits).", path=path)
    return data
