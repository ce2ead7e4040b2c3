"""Newest values only, on one worker thread: the update queue of the Explore panels
(``explore.py``; why a worker thread and not the kernel's own is in its docstring).
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable


class LatestOnly:
    """Runs ``work(job)`` on one worker thread for the newest job only.

    ``submit(job)`` returns the job's generation (1, 2, ...).  The worker waits until no
    job has come for ``debounce_s``, takes the newest, runs it, and calls
    ``publish(generation, ok, value)`` (``ok`` False: ``value`` is the exception) unless
    a newer job was submitted meanwhile: then the result is dropped (``dropped`` counts
    them).  Jobs submitted while a run is under way replace each other; only the last
    runs.  ``on_busy(generation, elapsed_s)`` is called once a run has taken
    ``busy_after_s``, then every half second until it ends (a progress indicator); the
    last ``on_busy`` of a run returns before its ``publish`` is called.
    """

    def __init__(
        self,
        work: Callable[[Any], Any],
        publish: Callable[[int, bool, Any], None],
        *,
        debounce_s: float = 0.2,
        busy_after_s: float = 0.5,
        on_busy: Callable[[int, float], None] | None = None,
    ):
        self.work, self.publish, self.on_busy = work, publish, on_busy
        self.debounce_s, self.busy_after_s = debounce_s, busy_after_s
        self.generation = 0  # of the newest job submitted
        self.ran: list[int] = []  # generations that ran, in order
        self.published: list[int] = []
        self.dropped = 0
        self._pending: tuple[int, Any] | None = None
        self._due = 0.0
        self._running = False
        self._closed = False
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    def submit(self, job) -> int:
        """Queue ``job`` as the newest (it replaces any not yet started) and return its generation."""
        with self._cond:
            self.generation += 1
            self._pending = (self.generation, job)
            self._due = time.monotonic() + self.debounce_s
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="explore-worker", daemon=True)
                self._thread.start()
            self._cond.notify_all()
            return self.generation

    def idle(self) -> bool:
        """True when no job is waiting or running."""
        with self._cond:
            return self._pending is None and not self._running

    def wait(self, timeout: float = 30.0) -> bool:
        """Block until no job is pending or running; False on timeout."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._pending is not None or self._running:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
            return True

    def close(self) -> None:
        """Stop the worker once its current job ends; later submissions are not run."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def _tick(self, generation: int, done: threading.Event) -> None:
        """``on_busy(generation, elapsed_s)`` after ``busy_after_s``, then twice a second."""
        t0 = time.monotonic()
        if done.wait(self.busy_after_s):
            return
        while True:
            self.on_busy(generation, time.monotonic() - t0)
            if done.wait(0.5):
                return

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._closed and (self._pending is None or time.monotonic() < self._due):
                    self._cond.wait(None if self._pending is None else max(self._due - time.monotonic(), 0.001))
                if self._closed:
                    return
                generation, job = self._pending
                self._pending = None
                self._running = True
                self.ran.append(generation)
            done, ticker = threading.Event(), None
            if self.on_busy is not None:
                ticker = threading.Thread(target=self._tick, args=(generation, done), daemon=True)
                ticker.start()
            try:
                ok, value = True, self.work(job)
            except Exception as exc:  # noqa: BLE001 - shown in the panel, the worker lives on
                ok, value = False, exc
            done.set()
            if ticker is not None:
                # A tick already past its wait would otherwise write "running..." over the
                # published status, and nothing would ever write it back.
                ticker.join()
            with self._cond:
                stale = generation != self.generation
                if stale:
                    self.dropped += 1
            if not stale:
                try:
                    self.publish(generation, ok, value)
                finally:
                    self.published.append(generation)
            with self._cond:
                self._running = False
                self._cond.notify_all()
