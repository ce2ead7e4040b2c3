"""How long a browser the lab launched needs to become idle: its processes' CPU time, read from
``/proc``, and ``wait_idle``, which returns once they have been quiet for a while (see
``capture.browser``'s docstring: a page loaded in a cold browser's first second is slowed by
its start-up).  Linux only, as the lab is.  Written by hand."""

from __future__ import annotations

import asyncio
import os

__all__ = ["tree_cpu_s", "wait_idle", "IDLE_WINDOW_S", "IDLE_BUSY_FRACTION", "IDLE_MAX_S"]


def tree_cpu_s(root_pid: int) -> float:
    """CPU seconds (user + system) used so far by the live descendants of ``root_pid``, read
    from ``/proc`` (Linux: ``proc(5)``, a process's ``stat`` fields 4, 14 and 15)."""
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    cpu: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:  # gone since the listing
            continue
        fields = stat[stat.rindex(b")") + 2 :].split()  # after "pid (comm) ": comm may hold spaces
        pid = int(name)
        children.setdefault(int(fields[1]), []).append(pid)
        cpu[pid] = int(fields[11]) + int(fields[12])
    total, todo = 0, list(children.get(root_pid, ()))
    while todo:
        pid = todo.pop()
        total += cpu.get(pid, 0)
        todo.extend(children.get(pid, ()))
    return total / tick


IDLE_WINDOW_S = 0.2  # how long the browser must stay quiet
IDLE_BUSY_FRACTION = 0.1  # quiet: under a tenth of one core used over that window
IDLE_MAX_S = 5.0  # a browser never quiet (a busy machine) is used after this long


async def wait_idle(
    cpu_s=lambda: tree_cpu_s(os.getpid()),
    *,
    window_s: float = IDLE_WINDOW_S,
    busy_fraction: float = IDLE_BUSY_FRACTION,
    max_s: float = IDLE_MAX_S,
) -> float:
    """Wait until the processes ``cpu_s`` measures used under ``busy_fraction`` of a core over
    ``window_s``, or ``max_s`` has passed; returns the seconds waited."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    before = cpu_s()
    while True:
        await asyncio.sleep(window_s)
        now = cpu_s()
        if now - before < busy_fraction * window_s or loop.time() - start >= max_s:
            return loop.time() - start
        before = now
