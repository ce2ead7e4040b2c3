"""The lab's loads start from an idle browser (``capture.idle.wait_idle``): a cold Chromium's
start-up work would otherwise slow a page's first requests and parsing, the more the sooner
they come, and move the measured effect of anything that shifts them in time (a server time,
a 103)."""

import asyncio
import subprocess
import sys

from simulator.capture.idle import tree_cpu_s, wait_idle


def _run(coro):
    return asyncio.run(coro)


def test_wait_idle_returns_after_the_first_quiet_window():
    # busy (a whole core) for three windows, then quiet: four windows waited
    readings = iter([0.0, 0.05, 0.10, 0.15, 0.151, 0.152])
    waited = _run(wait_idle(lambda: next(readings), window_s=0.05, busy_fraction=0.1, max_s=5.0))
    assert 0.15 <= waited < 1.0


def test_wait_idle_gives_up_on_a_browser_never_quiet():
    clock = {"cpu": 0.0}

    def busy():
        clock["cpu"] += 0.05  # a full core over every 50 ms window
        return clock["cpu"]

    waited = _run(wait_idle(busy, window_s=0.05, busy_fraction=0.1, max_s=0.3))
    assert 0.3 <= waited < 1.0


def test_tree_cpu_counts_a_busy_child_and_not_an_idle_one():
    import os

    before = tree_cpu_s(os.getpid())
    spin = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\ntime.sleep(5)"
    busy = subprocess.Popen([sys.executable, "-c", spin])
    idle = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"])
    try:
        import time

        deadline = time.monotonic() + 10
        while tree_cpu_s(os.getpid()) - before < 0.25 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert tree_cpu_s(os.getpid()) - before >= 0.25  # the spinning child's 0.3 s (ticks of 10 ms)
        assert tree_cpu_s(idle.pid) == 0.0  # a process with no children: nothing below it
    finally:
        busy.kill()
        idle.kill()
        busy.wait()
        idle.wait()
