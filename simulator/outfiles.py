"""Writing the files a command produces, without ever replacing what is not a regular file.

Written by hand.  Every file a command writes (``trace convert OUT``, ``interop encode -o``,
``coalescing --write-topology``, the CSVs of ``--rows`` / ``--blocks`` / ``--responses``,
``replay --pcap``, ``capture --out``, a batch folder's tables) goes through ``write_output``,
and every such flag is checked up front by ``check_output_file`` (``argtypes.output_file``).
What the path names decides how it is written:

* a regular file, or a new name: a temporary file in the same folder, then ``os.replace``
  (POSIX ``rename``: readers see the old file or the whole new one, never a part, and a
  failed write leaves nothing behind);
* a symbolic link: the file it points to is written as above, the link itself stays (a
  dangling link gets its target created); links under ``/dev`` and ``/proc`` are the
  kernel's "magic" links (``/dev/stdout`` is ``/proc/self/fd/1``) and are written through,
  like the shell's ``>`` does;
* a character device (``/dev/null``, a terminal) or a FIFO: written through, opened
  without ``O_CREAT``; ``rename`` onto it would turn ``/dev/null`` into a regular file for
  every program on the machine.  A FIFO nobody reads is refused (opened with
  ``O_NONBLOCK``, POSIX open(2) gives ``ENXIO``) rather than waited on forever;
* a block device, a socket or a folder: refused in one line.  A HAR written over a disk is
  never what was meant.

``check_output_file`` is the same classification done before any work, plus a probe: a
temporary file is created and removed in the folder that will receive the output, the one
test that also holds for root (``os.access`` says yes to root everywhere), for ``/proc``
and for a read-only mount; a file system with no free block is refused too (``statvfs``).
A disk that fills while the file is written is found by writing: an ``InputError`` naming
the path, and the temporary file removed.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import tempfile

from .errors import InputError

__all__ = ["write_output", "check_output_file", "check_output_folder", "open_output_stream", "staged_output"]

_REPLACE, _THROUGH = "replace", "through"
_MAGIC_LINK_ROOTS = ("/dev/", "/proc/")


def _why(exc: OSError) -> str:
    return exc.strerror or exc.__class__.__name__


def _classify(path: str) -> tuple[str, str]:
    """(how, the path to write): ``replace`` an ordinary file at the returned path atomically,
    or write ``through`` the given path; an ``InputError`` for what must not be written."""
    try:
        lst = os.lstat(path)
    except FileNotFoundError:
        return _REPLACE, path
    except OSError as exc:
        raise InputError(f"cannot be written ({_why(exc)}).", path=path) from None
    if stat.S_ISLNK(lst.st_mode):
        try:
            st = os.stat(path)
        except FileNotFoundError:  # a dangling link: create what it names
            return _REPLACE, os.path.realpath(path)
        except OSError as exc:
            raise InputError(f"cannot be written ({_why(exc)}).", path=path) from None
    else:
        st = lst
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        raise InputError("is a folder; give a file name.", path=path)
    if stat.S_ISBLK(mode):
        raise InputError(
            "is a block device; refusing to write onto it (give a regular file or a character "
            "device such as /dev/null).",
            path=path,
        )
    if stat.S_ISSOCK(mode):
        raise InputError("is a socket; give a regular file.", path=path)
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return _THROUGH, path
    if stat.S_ISLNK(lst.st_mode):
        if os.path.abspath(path).startswith(_MAGIC_LINK_ROOTS):
            return _THROUGH, path  # /dev/stdout and the like: the shell's ">"
        return _REPLACE, os.path.realpath(path)
    return _REPLACE, path


def _open_through(path: str) -> int:
    """A descriptor writing through ``path`` (a device or a FIFO): no create, no truncate;
    a FIFO without a reader is refused instead of blocking (POSIX open(2), ENXIO)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise InputError("is a FIFO that no program is reading; start the reader first.", path=path) from None
        raise InputError(f"cannot be written ({_why(exc)}).", path=path) from None
    flags = fcntl.fcntl(fd, fcntl.F_GETFL)
    fcntl.fcntl(fd, fcntl.F_SETFL, flags & ~os.O_NONBLOCK)
    return fd


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def write_output(path, data: bytes, *, fsync: bool = False) -> None:
    """Write ``data`` as the output file ``path`` (see the module docstring for how)."""
    path = str(path)
    how, target = _classify(path)
    if how == _THROUGH:
        fd = _open_through(path)
        try:
            _write_all(fd, data)
        except OSError as exc:
            raise InputError(f"cannot be written ({_why(exc)}).", path=path) from None
        finally:
            os.close(fd)
        return
    folder = os.path.dirname(os.path.abspath(target))
    try:
        # hidden, and ending in .tmp: what a batch folder sweeps after a killed run
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(target)}.", suffix=".tmp")
    except OSError as exc:
        raise InputError(f"cannot be written ({_why(exc)}).", path=path) from None
    try:
        try:
            _write_all(fd, data)
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.chmod(tmp, _mode(target))  # mkstemp makes 0600; give the usual permissions
        os.replace(tmp, target)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise InputError(f"cannot be written ({_why(exc)}).", path=path) from None
        raise
    if fsync:
        _fsync_dir(folder)


def _mode(path: str) -> int:
    try:
        return os.stat(path).st_mode & 0o777
    except OSError:
        return 0o644


def _fsync_dir(folder: str) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _probe_folder(folder: str, path: str) -> None:
    """Create and remove a temporary file in ``folder``: the test that holds for root too."""
    if not os.path.isdir(folder):
        raise InputError(f"cannot be written: folder {folder} does not exist.", path=path)
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".probe-")
    except OSError as exc:
        raise InputError(
            f"cannot be written: folder {folder} does not take new files ({_why(exc)}).", path=path
        ) from None
    os.close(fd)
    os.unlink(tmp)
    try:
        fs = os.statvfs(folder)
    except OSError:
        return
    if fs.f_bavail == 0 and fs.f_blocks > 0:  # a full file system: refused now, not after the work
        raise InputError(f"cannot be written: the file system of {folder} is full.", path=path)


def check_output_file(path) -> None:
    """Refuse, before any work, an output file ``write_output`` could not write."""
    path = str(path)
    if not path.strip():
        raise InputError("give a file name.")
    how, target = _classify(path)
    if how == _THROUGH:
        if not os.access(path, os.W_OK):
            raise InputError("cannot be written (permission denied).", path=path)
        return
    if os.path.exists(target) and not os.access(target, os.W_OK):
        raise InputError("cannot be written: the file is not writable.", path=path)
    _probe_folder(os.path.dirname(os.path.abspath(target)), path)


def check_output_folder(path) -> None:
    """Refuse, before any work, a folder that cannot be created or written into."""
    path = str(path)
    if not path.strip():
        raise InputError("give a folder name.")
    try:
        os.lstat(path)  # os.path.isdir and lexists say False for a name too long (ENAMETOOLONG)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise InputError(f"cannot be written ({_why(exc)}).", path=path) from None
    if os.path.isdir(path):
        _probe_folder(path, path)
        return
    if os.path.lexists(path):
        raise InputError("is a file, not a folder.", path=path)
    _probe_folder(os.path.dirname(os.path.abspath(path)), path)


@contextlib.contextmanager
def staged_output(path):
    """A temporary file to write an output into as the work goes (a TLS key log, which
    OpenSSL appends to by name): when the work ends well its bytes become ``path`` through
    ``write_output``; when it fails, nothing is left behind and ``path`` is untouched."""
    path = str(path)
    how, target = _classify(path)
    folder = os.path.dirname(os.path.abspath(target)) if how == _REPLACE else None
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(target)}.", suffix=".tmp")
    except OSError as exc:
        raise InputError(f"cannot be written ({_why(exc)}).", path=path) from None
    os.close(fd)
    try:
        yield tmp
        with open(tmp, "rb") as f:
            data = f.read()
        write_output(path, data)
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def open_output_stream(path, mode: str = "w"):
    """A file object for an output written as the work goes (a TLS key log): a regular file
    or new name is opened (and emptied) in place, a device or FIFO written through, the
    rest refused as ``write_output`` does."""
    path = str(path)
    how, _ = _classify(path)
    if how == _THROUGH:
        return os.fdopen(_open_through(path), mode)
    try:
        return open(path, mode)
    except OSError as exc:
        raise InputError(f"cannot be written ({_why(exc)}).", path=path) from None
