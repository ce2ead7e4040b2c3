"""Chromium's two request schedulers, as the page-load model's ``resource_scheduler="chromium"``.
Written by hand (no library models a browser's request scheduling).

Chromium decides twice when a subresource request goes to the network:

1. **Blink's ResourceLoadScheduler** (the renderer, per frame).  Until the parser inserts the
   ``<body>`` (``Document::WillInsertBody`` loosens the policy) the frame is in *tight* mode: a
   request below High priority (DevTools names) starts only while fewer than
   ``TIGHT_LIMIT`` (2) requests of the frame are in flight, or, for a Medium one, while fewer
   than ``TIGHT_MEDIUM_LIMIT`` (2) Medium ones are (the first images are boosted to Medium).
   In *normal* mode up to ``NORMAL_LIMIT`` (1024) are.  Waiting requests start highest
   priority first, in the order asked within a priority; the queue's head blocks it.
2. **The network service's ResourceScheduler** (the browser).  A request to a server known to
   support request priorities starts at once.  To any other (HTTP/1.1, or before its first
   connection is up) a *delayable* request (below High) starts only while fewer than
   ``MAX_DELAYABLE_IN_FLIGHT`` (10) delayable requests are in flight, and not while
   ``MAX_PER_HOST`` (6) requests to its host are.  A server is known to support priorities
   (``HttpServerProperties::SupportsRequestPriority``) once the browser has an HTTP/2
   connection to it, or an ``Alt-Svc`` for HTTP/3 from it (how HTTP/3 is found in deployment);
   HTTP/3 forced by a command-line flag (``--origin-to-force-quic-on``, as the lab's Chromium
   runs) teaches it nothing, so such a host's delayable requests stay held all load long
   (``LoadParams.h3_discovery="forced"``).
3. **Layout raises images in the viewport** (``ImageLoader``/``ResourceFetcher``: Blink updates
   the priorities of the images still loading after each layout, a visible one to High; the
   first layout comes once the render-blocking set is ready).  An image the capture recorded
   in the viewport (``Resource.in_viewport``, the lab's ``_viewportImages``) is raised to High,
   and a capture's ``_priority`` above an image's initial one is that raise too (to the
   captured one): the model asks for the image at its initial priority and raises it at the
   first layout (``layout()``), at once if the image is asked for after it; a raised request
   is no longer delayable, so the network service's scan then starts requests it held.  A
   capture's priorities alone show the raise only for images still loading at its layout,
   which a fast load's were not.

The model's "body reached" is the document arrived with every parser-blocking script of it
(the document's render-blocking scripts) run.  A request's priority is Chromium's initial one
for its type (stylesheets and the document VeryHigh, fonts, fetches and parser-blocking scripts
High, other scripts Low, images Low but the first ``BOOSTED_IMAGES`` (5) Medium), or the
captured one where that is lower: a capture's ``_priority`` is the last one, after Chromium
raised the images in the viewport, so a higher captured priority is not the start's (for an
image it is the raise at layout, 3. above).
A 103 preload and the navigation are not scheduled here (the browser process makes them).

Where the model departs: one frame (no iframes), no network-quality experiments (Chromium
delays requests on multiplexed connections only on slow-2G/2G estimates), and the ``<body>``
is taken as reached when the head's scripts have run, not at the parser's exact position.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable

__all__ = ["ChromiumScheduler", "PRIORITY_RANK"]

# DevTools priority names, lowest to highest (net::IDLE .. net::HIGHEST).
PRIORITY_RANK = {"VeryLow": 0, "Low": 1, "Medium": 2, "High": 3, "VeryHigh": 4}
HIGH = PRIORITY_RANK["High"]
MEDIUM = PRIORITY_RANK["Medium"]

TIGHT_LIMIT = 2  # blink kTightLimitForRendererSideResourceScheduler
TIGHT_MEDIUM_LIMIT = 2  # blink kBoostImagePriorityTightMediumLimit
NORMAL_LIMIT = 1024  # blink kLimitForRendererSideResourceScheduler
MAX_DELAYABLE_IN_FLIGHT = 10  # network service: delayable requests in flight per client
MAX_PER_HOST = 6  # network service: requests in flight to one host per client
BOOSTED_IMAGES = 5  # blink BoostImagePriority: the first images asked are Medium

_TYPE_PRIORITY = {
    "document": "VeryHigh",
    "stylesheet": "VeryHigh",
    "font": "High",
    "fetch": "High",
    "xhr": "High",
    "image": "Low",
    "media": "Low",
}


class ChromiumScheduler:
    """The two schedulers of one page load.  ``send(index)`` puts a request on the network;
    the page load calls ``ask`` for a request it wants to make, ``finished`` when its response
    arrived, ``connected`` when the browser learns a host supports priorities, and
    ``body_reached`` and ``layout`` once each."""

    def __init__(self, send: Callable[[int], None], host_of: Callable[[int], str]) -> None:
        self._send, self._host_of = send, host_of
        self.tight = True
        self._seq = 0
        self._images = 0
        self._priority: dict[int, int] = {}
        self._blink_waiting: list[tuple[int, int, int]] = []  # a heap of (-priority, seq, index)
        self._net_waiting: list[tuple[int, int, int]] = []
        self._blink_running: set[int] = set()
        self._net_running: set[int] = set()
        self._delayable_running: set[int] = set()  # started while their host was not known
        self._medium_running = 0  # Medium ones among _blink_running
        self._host_running: Counter = Counter()  # host -> of _net_running
        self._multiplexed: set[str] = set()  # hosts known to support priorities
        self._raise: dict[int, int] = {}  # index -> the priority layout raises it to
        self.laid_out = False
        self._running = self._again = False

    def initial_priority(self, resource_type: str, render_blocking: bool, captured: str | None) -> int:
        """Chromium's initial priority of a request (see the module docstring)."""
        if resource_type == "script":
            name = "High" if render_blocking else "Low"
        elif resource_type == "image":
            self._images += 1
            name = "Medium" if self._images <= BOOSTED_IMAGES else "Low"
        else:
            name = _TYPE_PRIORITY.get(resource_type, "Low")
        rank = PRIORITY_RANK[name]
        return min(rank, PRIORITY_RANK[captured]) if captured in PRIORITY_RANK else rank

    @staticmethod
    def layout_priority(
        resource_type: str, initial: int, captured: str | None, in_viewport: bool | None = None
    ) -> int | None:
        """The priority layout raises an image to: High when it is in the viewport
        (``ResourceFetcher::ComputeLoadPriority``: visible images High) or its captured one
        when that is above ``initial`` (a capture's last priority: the raise it saw), the
        higher of the two; None when neither raises it."""
        if resource_type != "image":
            return None
        rank = PRIORITY_RANK.get(captured, -1)  # -1: no captured priority, or one not named
        if in_viewport:
            rank = max(rank, HIGH)
        return rank if rank > initial else None

    def ask(self, index: int, priority: int, raised: int | None = None) -> None:
        """The page wants resource ``index`` at ``priority`` (a ``PRIORITY_RANK`` value);
        ``raised``: the priority the first layout raises it to (``layout_priority``)."""
        if raised is not None:
            if self.laid_out:
                priority = raised
            else:
                self._raise[index] = raised
        self._priority[index] = priority
        self._seq += 1
        heapq.heappush(self._blink_waiting, (-priority, self._seq, index))
        self._run()

    def finished(self, index: int) -> None:
        """Resource ``index``'s response arrived: it is no longer in flight."""
        if index in self._blink_running:
            self._blink_running.discard(index)
            self._medium_running -= self._priority[index] == MEDIUM
            if index in self._net_running:
                self._net_running.discard(index)
                self._host_running[self._host_of(index)] -= 1
                self._delayable_running.discard(index)
            self._run()

    def connected(self, host: str) -> None:
        """The browser has an HTTP/2 or HTTP/3 connection to ``host``: it supports priorities."""
        if host not in self._multiplexed:
            self._multiplexed.add(host)
            self._run()

    def body_reached(self) -> None:
        """The parser is at the ``<body>``: Blink leaves tight mode."""
        if self.tight:
            self.tight = False
            self._run()

    def layout(self) -> None:
        """The first layout: the images in the viewport are raised (waiting or in flight; a
        raised request in flight no longer counts as delayable, as Chromium's
        ``ReprioritizeRequest`` re-derives its attributes)."""
        if self.laid_out:
            return
        self.laid_out = True
        raise_to, self._raise = self._raise, {}
        if not raise_to:
            return
        for index, priority in raise_to.items():
            if index in self._blink_running:
                self._medium_running += (priority == MEDIUM) - (self._priority[index] == MEDIUM)
            self._priority[index] = priority
            if priority >= HIGH:
                self._delayable_running.discard(index)

        def raised(queue):
            return [(-self._priority[i], seq, i) if i in raise_to else (p, seq, i) for p, seq, i in queue]

        self._blink_waiting = raised(self._blink_waiting)
        heapq.heapify(self._blink_waiting)
        self._net_waiting = raised(self._net_waiting)
        self._run()

    # -- the two schedulers ----------------------------------------------------------
    def _blink_may_run(self, priority: int) -> bool:
        if self.tight and priority < HIGH:
            if priority == MEDIUM and self._medium_running < TIGHT_MEDIUM_LIMIT:
                return True
            return len(self._blink_running) < TIGHT_LIMIT
        return len(self._blink_running) < NORMAL_LIMIT

    def _net_may_start(self, index: int) -> str:
        """ "start", "skip" (another host may go) or "stop" (none may)."""
        host = self._host_of(index)
        if host in self._multiplexed or self._priority[index] >= HIGH:
            return "start"
        if len(self._delayable_running) >= MAX_DELAYABLE_IN_FLIGHT:
            return "stop"
        if self._host_running[host] >= MAX_PER_HOST:
            return "skip"
        return "start"

    def _run(self) -> None:
        # Sending can call back (a new connection is up at once): run again instead of inside.
        if self._running:
            self._again = True
            return
        self._running = True
        try:
            self._again = True
            while self._again:
                self._again = False
                self._pass()
        finally:
            self._running = False

    def _pass(self) -> None:
        while self._blink_waiting and self._blink_may_run(-self._blink_waiting[0][0]):
            entry = heapq.heappop(self._blink_waiting)
            self._blink_running.add(entry[2])
            self._medium_running += -entry[0] == MEDIUM
            self._net_waiting.append(entry)
        self._net_waiting.sort()
        kept = []
        for at, entry in enumerate(self._net_waiting):
            verdict = self._net_may_start(entry[2])
            if verdict == "stop":
                kept.extend(self._net_waiting[at:])
                break
            if verdict == "skip":
                kept.append(entry)
                continue
            index = entry[2]
            host = self._host_of(index)
            self._net_running.add(index)
            self._host_running[host] += 1
            if self._priority[index] < HIGH and host not in self._multiplexed:
                self._delayable_running.add(index)
            self._send(index)
        self._net_waiting = kept
