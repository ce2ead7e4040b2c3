"""Every flag that writes a file writes it safely (``simulator.outfiles``).

POSIX ``rename`` (what ``os.replace`` is) swaps the directory entry: onto ``/dev/null`` it
leaves a regular file where the null device was, for every program on the machine.  The
rules held here, for every flag that writes a file:

* a character device or a FIFO is written through and stays what it was;
* a symbolic link stays a link, and the file it names receives the output;
* a regular file is replaced whole (a new inode, its permissions kept, no temporary left);
* a block device, a socket, a path under ``/proc`` and a FIFO nobody reads are refused in
  one line naming the path; the first three before any work starts.

Device nodes are made with ``os.mknod`` in the test's own folder (root only; the tests
skip otherwise): the character device has the null device's numbers (1, 3), so writing
through it writes nothing anywhere.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
from pathlib import Path

import pytest

from simulator.cli import main
from simulator.errors import InputError
from simulator.outfiles import check_output_file, write_output

ROOT = Path(__file__).resolve().parents[1]
PAGE = str(ROOT / "traces" / "synthetic-page.har")
QIF = str(ROOT / "traces" / "qif" / "fb-req-hq.qif")

# Every flag that writes one file, with arguments that make its run small.  ``capture
# --out`` and ``--netlog`` need a browser: their up-front check is tested below.
WRITERS = {
    "trace convert OUT": ["trace", "convert", PAGE, "{out}", "--to", "qif"],
    "trace synth OUT": ["trace", "synth", "{out}", "--requests", "5", "--format", "har"],
    "interop encode -o": ["interop", "encode", QIF, "-o", "{out}", "--table", "0", "--blocked", "0", "--ack", "0"],
    "coalescing --write-topology": ["coalescing", "--trace", PAGE, "--write-topology", "{out}", "--json"],
    "hol --blocks": ["hol", "--trace", PAGE, "--blocks", "{out}", "--json"],
    "demux --rows": ["demux", "--streams", "2", "--size", "10KiB", "--part", "model", "--rows", "{out}", "--json"],
    "trailers --rows": ["trailers", "--rows", "{out}", "--json"],
    "crossstream --responses": [
        "crossstream",
        "--releases",
        "2",
        "--scheme",
        "per-response",
        "--scoping",
        "none",
        "--codecs",
        "zlib:6",
        "--responses",
        "{out}",
        "--json",
    ],
    "replay --pcap": ["replay", "--trace", PAGE, "--stack", "h2", "--pcap", "{out}", "--json"],
    "replay --keylog": ["replay", "--trace", PAGE, "--stack", "h2", "--keylog", "{out}", "--json"],
}
# The same check guards these, before the browser starts.
CHECKED_ONLY = {
    "capture --out": ["capture", "--synth", "5", "--proto", "h2", "--out", "{out}"],
    "capture --netlog": ["capture", "--synth", "5", "--proto", "h2", "--out", "{tmp}/x.har", "--netlog", "{out}"],
}
FOLDER_WRITERS = {
    "slides -o": ["slides", PAGE, "-o", "{out}"],
    "demo --out": ["demo", "--out", "{out}"],
    "crossstream-bodies DIR": ["crossstream-bodies", "{out}"],
    "batch --out": ["batch", "hol", "--traces", PAGE, "--out", "{out}"],
    "replay --qlog": ["replay", "--trace", PAGE, "--stack", "h3", "--qlog", "{out}"],
}


def _run(capsys, argv, out, tmp_path):
    code = main([a.format(out=out, tmp=tmp_path) for a in argv])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.err


def _mknod(path: Path, kind: int, major: int, minor: int) -> None:
    try:
        os.mknod(path, kind | 0o666, os.makedev(major, minor))
    except PermissionError:
        pytest.skip("making a device node needs root (CAP_MKNOD)")
    except OSError as exc:
        if exc.errno in (errno.EPERM, errno.EACCES):
            pytest.skip(f"cannot make a device node here ({exc.strerror})")
        raise


@pytest.mark.parametrize("name", WRITERS)
def test_character_device_is_written_through_not_replaced(capsys, tmp_path, name):
    """POSIX rename(2) would put a regular file where the device node was: the output goes
    through the device (the null device's numbers: nothing is kept) and the node stays."""
    node = tmp_path / "null"
    _mknod(node, stat.S_IFCHR, 1, 3)
    before = os.stat(node)
    code, err = _run(capsys, WRITERS[name], node, tmp_path)
    assert code == 0, err
    after = os.lstat(node)
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev and after.st_ino == before.st_ino
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null"], "a temporary file was left behind"


@pytest.mark.parametrize("name", WRITERS)
def test_symlink_stays_a_link_and_its_target_gets_the_output(capsys, tmp_path, name):
    """A link is the user's pointer to where the output belongs: the link survives, the file
    it names is written (and replaced whole)."""
    target = tmp_path / "real-output"
    target.write_bytes(b"old contents\n")
    link = tmp_path / "link"
    link.symlink_to(target)
    code, err = _run(capsys, WRITERS[name], link, tmp_path)
    assert code == 0, err
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_bytes() not in (b"", b"old contents\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "real-output"]


def test_dangling_symlink_creates_what_it_names(capsys, tmp_path):
    """Like the shell's ``>``: a link to a file not yet there gets that file, and stays a link."""
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "new.qif")
    code, err = _run(capsys, WRITERS["trace convert OUT"], link, tmp_path)
    assert code == 0, err
    assert link.is_symlink() and (tmp_path / "new.qif").stat().st_size > 0


@pytest.mark.parametrize("name", [*WRITERS, *CHECKED_ONLY])
def test_block_device_is_refused_before_any_work(capsys, tmp_path, name):
    """A trace or a table written over a disk is never what was meant: refused while the
    flags are read (one line naming the flag), the node untouched."""
    node = tmp_path / "disk"
    _mknod(node, stat.S_IFBLK, 7, 255)  # a loop device number; never opened
    argv = {**WRITERS, **CHECKED_ONLY}[name]
    code, err = _run(capsys, argv, node, tmp_path)
    assert code == 2 and err.count("\n") == 1 and "block device" in err, err
    assert "argument" in err, "refused after the work started"
    assert stat.S_ISBLK(os.lstat(node).st_mode)


@pytest.mark.parametrize("name", [*WRITERS, *CHECKED_ONLY])
def test_path_under_proc_is_refused_before_any_work(capsys, tmp_path, name):
    """``os.access`` says yes to root everywhere; a file created and removed in the folder
    is the check that holds: /proc takes no new files."""
    if not os.path.isdir("/proc/self"):
        pytest.skip("no /proc here")
    code, err = _run(capsys, {**WRITERS, **CHECKED_ONLY}[name], "/proc/workbench-out.qif", tmp_path)
    assert code == 2 and err.count("\n") == 1 and "argument" in err and "/proc/workbench-out.qif" in err, err


@pytest.mark.parametrize("name", FOLDER_WRITERS)
def test_folder_under_proc_is_refused_before_any_work(capsys, tmp_path, name):
    """The same probe for the flags that write a folder."""
    if not os.path.isdir("/proc/self"):
        pytest.skip("no /proc here")
    code, err = _run(capsys, FOLDER_WRITERS[name], "/proc/workbench-out", tmp_path)
    assert code == 2 and err.count("\n") == 1 and "/proc/workbench-out" in err, err


def test_fifo_without_a_reader_is_refused_not_waited_on(capsys, tmp_path):
    """POSIX open(2) of a FIFO for writing blocks until a reader comes; with O_NONBLOCK it
    says ENXIO at once: one line, never a hang."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    code, err = _run(capsys, WRITERS["trace convert OUT"], fifo, tmp_path)
    assert code == 2 and err.count("\n") == 1 and str(fifo) in err and "FIFO" in err, err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


@pytest.mark.parametrize("name", ["trace convert OUT", "replay --pcap", "hol --blocks"])
def test_fifo_with_a_reader_gets_the_whole_output(capsys, tmp_path, name):
    """A FIFO with a reader is written through (more than a pipe buffer, for the trace)."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    keep = os.open(fifo, os.O_WRONLY)  # holds the FIFO open: EOF only after the command
    os.set_blocking(rfd, True)
    got = []
    reader = threading.Thread(target=lambda: got.append(b"".join(iter(lambda: os.read(rfd, 1 << 16), b""))))
    reader.start()
    try:
        code, err = _run(capsys, WRITERS[name], fifo, tmp_path)
    finally:
        os.close(keep)
        reader.join(timeout=60)
        os.close(rfd)
    assert code == 0, err
    assert got and len(got[0]) > 0
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_full_device_is_one_line_naming_the_file(capsys, tmp_path):
    """/dev/full answers every write with ENOSPC, the one way to meet a full disk on
    purpose: an ``InputError`` naming the path, no traceback."""
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    code, err = _run(capsys, WRITERS["trace convert OUT"], "/dev/full", tmp_path)
    assert code == 2 and err.count("\n") == 1 and "/dev/full" in err and "space" in err.lower(), err
    assert stat.S_ISCHR(os.lstat("/dev/full").st_mode)


def test_regular_file_is_replaced_whole_with_its_permissions(tmp_path):
    """rename(2) is atomic: a new inode takes the name, the old file's mode is kept."""
    out = tmp_path / "out.csv"
    out.write_bytes(b"old\n")
    os.chmod(out, 0o640)
    inode = out.stat().st_ino
    write_output(out, b"new\n")
    assert out.read_bytes() == b"new\n" and out.stat().st_ino != inode
    assert stat.S_IMODE(out.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["out.csv"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    """ENOSPC mid-write (a full disk): the old file is intact, the temporary removed, and
    the error names the path."""
    out = tmp_path / "out.har"
    out.write_bytes(b"old\n")

    def full(fd, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(InputError, match="out.har.*No space left"):
        write_output(out, b"x" * 1000)
    monkeypatch.undo()
    assert out.read_bytes() == b"old\n" and [p.name for p in tmp_path.iterdir()] == ["out.har"]


def test_socket_is_refused(tmp_path):
    """A UNIX socket is no file to write a trace into."""
    import socket

    path = tmp_path / "sock"
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(path))
        with pytest.raises(InputError, match="socket"):
            check_output_file(path)


def test_a_failed_replay_leaves_no_partial_key_log(capsys, tmp_path, monkeypatch):
    """The key log is written as the TLS handshakes go (OpenSSL appends to it): into a
    temporary file that becomes the key log only when the replay ends well, so a replay
    that fails half-way leaves the old file as it was and nothing else."""
    import simulator.stacks.replay as replay

    out = tmp_path / "keys.log"
    out.write_bytes(b"old\n")

    def fail(*args, **kwargs):
        raise InputError("the replay failed half-way")

    monkeypatch.setattr(replay, "schedule_requests", fail)
    code, err = _run(capsys, WRITERS["replay --keylog"], out, tmp_path)
    assert code == 2 and "half-way" in err
    assert out.read_bytes() == b"old\n" and sorted(p.name for p in tmp_path.iterdir()) == ["keys.log"]


def test_full_file_system_is_refused_before_any_work(capsys, tmp_path, monkeypatch):
    """statvfs(3) says how many blocks are free: with none, the flag is refused while it is
    read, not after the simulation."""
    real = os.statvfs

    class Full:
        def __init__(self, st):
            self.f_blocks, self.f_bavail = st.f_blocks or 1, 0

    monkeypatch.setattr(os, "statvfs", lambda p: Full(real(p)))
    code, err = _run(capsys, WRITERS["hol --blocks"], tmp_path / "blocks.csv", tmp_path)
    assert code == 2 and err.count("\n") == 1 and "argument --blocks" in err and "full" in err, err
