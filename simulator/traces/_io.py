"""Small file helpers shared by the trace loaders and writers."""

from __future__ import annotations

import os
import tempfile

from ..errors import InputError

__all__ = ["atomic_write", "read_bytes", "read_input"]


def atomic_write(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically: a temporary file in the same folder, then ``os.replace``."""
    path = str(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix="-" + os.path.basename(path))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, _mode(path))  # mkstemp makes 0600; give the usual permissions
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _mode(path: str) -> int:
    try:
        return os.stat(path).st_mode & 0o777
    except FileNotFoundError:
        return 0o644


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
