"""The lab's network namespaces: made, entered and removed here, and nothing else touched.

The lab makes two namespaces per run, named ``wblab-<pid>-client`` and ``wblab-<pid>-server``
after the process that owns them, so that a run whose owner died (SIGKILL, a crash, a
machine that lost power) can be told apart from a live one: ``sweep_stale`` removes the
namespaces of owners that are gone, and every lab start calls it.  Removing a namespace
first ends every process inside it (``ip netns pids``), then deletes it, which takes its
devices with it.

Addresses are RFC 5737 documentation ranges only, and only inside these namespaces:
192.0.2.0/24 for the two ends of the link, 198.51.100.0/24 and 203.0.113.0/24 for the
servers of a rebuilt page.  The namespaces have no route anywhere else, so nothing a lab
process sends can leave them.

Entering a namespace is ``ip netns exec`` for a command, or ``setns(2)`` for the relay
(which opens a TUN device in each; Python 3.11 has no ``os.setns``, hence ``ctypes``).
Written by hand around iproute2.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import re
import shutil
import signal
import subprocess
import time

from ..errors import InputError

__all__ = [
    "PREFIX",
    "LINK_NET",
    "CLIENT_ADDR",
    "SERVER_ADDR",
    "SERVER_NETS",
    "check_can_run",
    "names_for",
    "create",
    "remove",
    "sweep_stale",
    "lab_namespaces",
    "exec_argv",
    "setns",
    "entered",
]

PREFIX = "wblab"
LINK_NET = "192.0.2.0/24"  # RFC 5737 TEST-NET-1: the link's two ends
CLIENT_ADDR = "192.0.2.1"
SERVER_ADDR = "192.0.2.2"
SERVER_NETS = ("198.51.100.0/24", "203.0.113.0/24")  # TEST-NET-2 and -3: a rebuilt page's origins
_NAME = re.compile(rf"^{PREFIX}-(\d+)-(client|server)$")
_CLONE_NEWNET = 0x40000000


def check_can_run() -> None:
    """Refuse in one line where the lab cannot run: not root, no TUN device, no iproute2."""
    if not os.path.exists("/proc/self/ns/net"):
        raise InputError("the lab needs Linux network namespaces, and this system has none.")
    if os.geteuid() != 0:
        raise InputError("the lab makes network namespaces and TUN devices, which needs root: run it as root.")
    if not os.path.exists("/dev/net/tun"):
        raise InputError("the lab needs /dev/net/tun (the TUN driver), and this system has none.")
    if shutil.which("ip") is None:
        raise InputError("the lab needs iproute2's `ip` command (Debian: apt-get install iproute2).")


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], check=check, capture_output=True, text=True)


def names_for(owner_pid: int) -> tuple[str, str]:
    """The client and server namespace names of the lab run owned by ``owner_pid``."""
    return f"{PREFIX}-{owner_pid}-client", f"{PREFIX}-{owner_pid}-server"


def lab_namespaces() -> list[str]:
    """Every namespace on this machine that a lab run made (and has not removed)."""
    out = _ip("netns", "list", check=False).stdout
    return sorted(line.split()[0] for line in out.splitlines() if line.split() and _NAME.match(line.split()[0]))


def create(name: str) -> None:
    """Make namespace ``name`` with its loopback up and IPv6 off (no router or neighbour
    solicitations on the emulated link: every packet on it is the measured traffic's)."""
    _ip("netns", "add", name)
    _ip("-n", name, "link", "set", "lo", "up")
    subprocess.run(
        [
            "ip",
            "netns",
            "exec",
            name,
            "sysctl",
            "-q",
            "-w",
            "net.ipv6.conf.all.disable_ipv6=1",
            "net.ipv6.conf.default.disable_ipv6=1",
        ],
        check=False,
        capture_output=True,
    )


def _pids(name: str) -> list[int]:
    out = _ip("netns", "pids", name, check=False).stdout
    return [int(p) for p in out.split() if p.isdigit() and int(p) != os.getpid()]


def remove(name: str, *, grace_s: float = 2.0) -> None:
    """End every process in namespace ``name`` (SIGTERM, then SIGKILL after ``grace_s``)
    and delete it.  Safe to call twice, or on a namespace that is already gone."""
    if name not in lab_namespaces():
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        pids = _pids(name)
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        deadline = time.monotonic() + grace_s
        while _pids(name) and time.monotonic() < deadline:
            time.sleep(0.02)
    _ip("netns", "del", name, check=False)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale() -> list[str]:
    """Remove the namespaces of lab runs whose owner process is gone; returns their names."""
    gone = [name for name in lab_namespaces() if not _alive(int(_NAME.match(name).group(1)))]
    for name in gone:
        remove(name, grace_s=0.5)
    return gone


def exec_argv(name: str, argv: list[str]) -> list[str]:
    """``argv`` run inside namespace ``name``."""
    return ["ip", "netns", "exec", name, *argv]


_libc = None


def setns(fd: int) -> None:
    """Move the calling thread into the network namespace open at ``fd`` (setns(2))."""
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    if _libc.setns(fd, _CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


@contextlib.contextmanager
def entered(name: str):
    """Inside namespace ``name`` for the block, back in the caller's afterwards (this thread)."""
    home = os.open("/proc/self/ns/net", os.O_RDONLY)
    target = os.open(f"/run/netns/{name}", os.O_RDONLY)
    try:
        setns(target)
        try:
            yield
        finally:
            setns(home)
    finally:
        os.close(target)
        os.close(home)
