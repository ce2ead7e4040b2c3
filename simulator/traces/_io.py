"""Small file helpers shared by the trace loaders and writers."""

from __future__ import annotations

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


def read_input(path: str) -> bytes:
    """An input file's bytes; a missing file, a folder or an unreadable file is an ``InputError``."""
    try:
        return read_bytes(path)
    except FileNotFoundError:
        raise InputError("no such file.", path=path) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a trace file.", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot be read ({exc.strerror}).", path=path) from None
