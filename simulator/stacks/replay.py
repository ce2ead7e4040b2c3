"""Replay a trace's exchanges over a real stack (h2 or aioquic HTTP/3) in virtual time.

Written by hand.  The study-module shape: ``run(trace, params) -> Result`` with one
row per exchange (``Result.exchanges``, a pandas DataFrame) and a ``summary`` dict.

What is replayed, per exchange: the request header list (sanitised for the wire, see
``request_headers_for``), the start time (gaps between consecutive starts capped at
``max_gap_s``, so a long idle period in a capture does not trip the idle timeout),
and the response: the trace's status and header list with a ``content-length`` that
matches the body we send, and ``response_body_bytes`` of body (0 -> ``StackParams.
default_body_bytes``, except for statuses that have no body).  One connection per
origin, each on its own simulated path with the same parameters (its own loss
stream), as browsers do without coalescing.

``specs`` (a list of ``ExchangeSpec``) can be given instead of a trace: that is how
tests and studies ask for 103s, pushes, trailers and resets.

The header lists' clean-up loop (``_clean_split``), and ``request_headers_for`` and
``response_headers_for`` whole, have a C twin, ``simulator.stacks._headers``
(also hand-written), used when it is built; the Python loop is the reference, and
``tests/test_page_size_cost.py`` checks that the two agree.  ``WORKBENCH_PURE_PYTHON=1`` selects the
reference; ``WORKBENCH_REPLAY_EXT`` loads the extension from another build (``make asan``).
"""

from __future__ import annotations

import itertools
import math
import os
import statistics
from contextlib import ExitStack

from .. import __version__
from .._extension import load_extension
from ..engine import Simulator
from ..errors import InputError
from ..net.transport import timer_counts
from ..traces.model import Trace
from .common import (
    ExchangeSpec,
    Recorder,
    Result,
    StackParams,
    StackStalled,
    idle_safe_until,
    run_until,
    schedule_requests,
)

__all__ = [
    "run",
    "run_specs",
    "specs_from_trace",
    "request_headers_for",
    "response_headers_for",
    "exchange_headers",
]

# RFC 9113 section 8.2.2 / RFC 9114 section 4.2: connection-specific fields are malformed.
_CONNECTION_SPECIFIC = {
    b"connection",
    b"keep-alive",
    b"proxy-connection",
    b"transfer-encoding",
    b"upgrade",
    b"te",
    b"host",
}
_REQUEST_PSEUDO = (b":method", b":scheme", b":authority", b":path")
_NO_BODY_STATUS = (204, 304)


def _clean(headers) -> list[tuple[bytes, bytes]]:
    cache = _CLEANED
    if type(headers) is tuple:
        # Looked up at C speed; most lists of a page hold a field or two not met before.
        try:
            done = list(map(cache.get, headers, itertools.repeat(_UNSEEN)))
        except TypeError:  # a field given as a list: the loop below
            done = None
        if done is not None:
            if _UNSEEN in done:
                for i, cleaned in enumerate(done):
                    if cleaned is _UNSEEN:
                        field = headers[i]
                        cleaned = done[i] = _clean_field(*field)
                        if len(cache) >= _CLEANED_MAX:
                            cache.clear()
                        cache[field] = cleaned
            return list(filter(None, done))  # None: a field left out
    out = []
    for field in headers or ():
        # Memoized per field (a page repeats most of its fields from request to request);
        # a field given as a list is not hashable and is cleaned each time.
        try:
            cleaned = cache.get(field, _UNSEEN)
        except TypeError:
            cleaned = _clean_field(*field)
        if cleaned is _UNSEEN:
            cleaned = _clean_field(*field)
            if len(cache) >= _CLEANED_MAX:
                cache.clear()
            cache[field] = cleaned
        if cleaned is not None:
            out.append(cleaned)
    return out


def _clean_field(name: bytes, value: bytes) -> tuple[bytes, bytes] | None:
    """One field as sent: the name lower-case, no CR, LF or NUL in the value, no surrounding
    whitespace; None for a field without a name or a connection-specific one."""
    name = name.strip().lower()
    value = value.strip().replace(b"\r", b"").replace(b"\n", b"").replace(b"\x00", b"")
    if not name or name in _CONNECTION_SPECIFIC:
        return None
    return name, value


_CLEANED: dict = {}
_AUTHORITIES: dict = {}  # origin -> its :authority (request_headers_for)
_UNSEEN = object()
_CLEANED_MAX = 1 << 17


def _clean_split(headers) -> tuple[list, list]:
    """The cleaned fields of ``headers`` (``_clean``), split into the pseudo-header fields and
    the regular ones but content-length, each in order (the fields themselves kept, not rebuilt)."""
    if _NATIVE is not None and type(headers) is tuple:
        found = _NATIVE.clean_split(headers, _CLEANED, _clean_field, _CLEANED_MAX, _CONNECTION_SPECIFIC)
        if found is not None:
            return found
    pseudo, regular = [], []
    for field in _clean(headers):
        name = field[0]
        if name[:1] == b":":
            pseudo.append(field)
        elif name != b"content-length":
            regular.append(field)
    return pseudo, regular


def _load_native():
    """The C twin of ``_clean_split``'s loop, or None (not built, or the reference asked for)."""
    if os.environ.get("WORKBENCH_PURE_PYTHON", "") not in ("", "0"):
        return None
    return load_extension("simulator.stacks._headers", "WORKBENCH_REPLAY_EXT")


_NATIVE = _load_native()


def request_headers_for(headers, origin: str | None, body_bytes: int = 0) -> tuple:
    """Pseudo-header fields first (RFC 9113 section 8.3), all four present, regular fields
    lower-case without connection-specific ones, content-length matching the body we send."""
    authority = _AUTHORITIES.get(origin)
    if authority is None:
        authority = (origin or "https://server.example").split("://", 1)[-1].encode()
        if len(_AUTHORITIES) >= _CLEANED_MAX:
            _AUTHORITIES.clear()
        _AUTHORITIES[origin] = authority
    if _NATIVE is not None and type(headers) is tuple:  # the C twin of all of it (below: the reference)
        found = _NATIVE.request_headers(
            headers, _CLEANED, _clean_field, _CLEANED_MAX, _CONNECTION_SPECIFIC, authority, body_bytes
        )
        if found is not None:
            return found
    pseudo_fields, regular = _clean_split(headers)
    get = dict(pseudo_fields).get  # the last of a name given twice
    if body_bytes:
        regular.append((b"content-length", str(body_bytes).encode()))
    # _REQUEST_PSEUDO's order; a value is never None (a field's value is bytes)
    return (
        (b":method", get(b":method", b"GET")),
        (b":scheme", get(b":scheme", b"https")),
        (b":authority", get(b":authority", authority)),
        (b":path", get(b":path") or b"/"),
        *regular,
    )


def response_headers_for(headers, body_bytes: int) -> tuple[tuple, int]:
    """``:status`` first, the trace's other fields, and a content-length matching the body.
    Returns ``(headers, body_bytes)`` (a 204 or 304 gets no body)."""
    if _NATIVE is not None and type(headers) is tuple:  # the C twin of all of it (below: the reference)
        found = _NATIVE.response_headers(
            headers, _CLEANED, _clean_field, _CLEANED_MAX, _CONNECTION_SPECIFIC, body_bytes
        )
        if found is not None:
            return found
    pseudo, regular = _clean_split(headers)
    if pseudo and pseudo[0][0] == b":status":  # most lists: it comes first
        status = pseudo[0][1]
    else:
        status = next((value for name, value in pseudo if name == b":status"), None)  # the first
    if status is None:
        status = b"200"
    if not (status.isdigit() and len(status) == 3) or status.startswith(b"1"):
        status = b"200"  # an interim or odd status cannot end an exchange
    if int(status) in _NO_BODY_STATUS:
        body_bytes = 0
    else:
        regular.append((b"content-length", str(body_bytes).encode()))
    return ((b":status", status), *regular), body_bytes


# ``exchange_headers``' memo: id(request list) -> (request list, response list, (origin, body),
# request, response, body).  Looked up by identity (an int's hash, not two header lists'), and
# held to the lists themselves (the entry keeps them alive, so no other list has that id): a page
# loaded again (a sweep, a benchmark) meets the same lists; one load meets each once.
_EXCHANGES: dict = {}
_EXCHANGES_MAX = 1 << 14


def exchange_headers(request, response, origin: str, body_bytes: int) -> tuple:
    """``(request_headers_for(request, origin), *response_headers_for(response, body_bytes))``:
    the header lists a page resource's exchange sends, memoized for header lists given as tuples."""
    known = _EXCHANGES.get(id(request))
    if known is not None and known[0] is request and known[1] is response and known[2] == (origin, body_bytes):
        return known[3:]
    out_response, out_body = response_headers_for(response, body_bytes)
    out = (request_headers_for(request, origin), out_response, out_body)
    if type(request) is tuple and type(response) is tuple:
        if len(_EXCHANGES) >= _EXCHANGES_MAX:
            _EXCHANGES.clear()
        _EXCHANGES[id(request)] = (request, response, (origin, body_bytes), *out)
    return out


def specs_from_trace(trace: Trace, params: StackParams, *, max_gap_s: float = 10.0) -> list[ExchangeSpec]:
    """The trace's exchanges as request specs in start order, gaps capped at ``max_gap_s`` seconds."""
    exchanges = [e for e in trace.exchanges if e.request_headers is not None]
    if not exchanges:
        raise InputError("the trace has no request header lists to replay", path=trace.source)
    ordered = sorted(exchanges, key=lambda e: (e.start_s or 0.0, e.index))
    specs, prev_raw, prev_t = [], None, 0.0
    for e in ordered:
        raw = e.start_s or 0.0
        t = 0.0 if prev_raw is None else prev_t + min(max(raw - prev_raw, 0.0), max_gap_s)
        prev_raw, prev_t = raw, t
        body = e.response_body_bytes or params.default_body_bytes
        response, body = response_headers_for(e.response_headers or ((b":status", b"200"),), body)
        request = request_headers_for(e.request_headers, e.origin, e.request_body_bytes)
        specs.append(
            ExchangeSpec(
                index=e.index,
                request_headers=request,
                request_body_bytes=e.request_body_bytes,
                response_headers=response,
                response_body_bytes=body,
                start_s=t,
                origin=e.origin or "https://server.example",
            )
        )
    return specs


def _session_class(stack: str):
    if stack == "h2":
        from .h2 import H2Session

        return H2Session
    from .h3 import H3Session

    return H3Session


def run_specs(
    specs: list[ExchangeSpec],
    params: StackParams,
    *,
    qlog_dir: str | None = None,
    pcap_path: str | None = None,
    keylog_path: str | None = None,
    check_every_event: bool = False,
) -> Result:
    """Replay ``specs`` over ``params.stack``; see the module docstring.

    ``check_every_event``: the reference run loop, which checks for a stall after every
    event (walking every session); the same result, only slower.  For the tests that
    hold the event-driven checks to it, and the benchmark."""
    if not specs:
        raise InputError("nothing to replay: no exchanges")
    sim = Simulator(seed=params.seed)
    recorder = Recorder(sim)
    session_cls = _session_class(params.stack)
    sessions: dict[str, object] = {}
    pcap = None
    with ExitStack() as stack:
        keylog = tls = None
        if keylog_path is not None:
            if params.stack == "h2" and not params.tls:
                raise InputError("a key log needs TLS: the h2 stack runs cleartext with tls=False (--no-tls)")
            from ..outfiles import staged_output

            # Written into a temporary file as the handshakes go, then made the key log whole
            # (a device or FIFO written through): a failed replay leaves no partial key log.
            staged = stack.enter_context(staged_output(keylog_path))
            keylog = stack.enter_context(_open(staged, "w"))
            if params.stack == "h2":
                from .tls import TlsContexts

                tls = TlsContexts(params.seed, staged)  # OpenSSL appends to the emptied file
        if pcap_path is not None:
            from .pcap import PcapRecorder

            pcap = PcapRecorder(sim)
        origins = list(dict.fromkeys(s.origin for s in specs))
        for i, origin in enumerate(origins):
            path = params.network.path(sim, name=f"path{i}")
            kwargs = {}
            if params.stack == "h3":
                kwargs = {"qlog_dir": qlog_dir, "keylog": keylog}
            elif tls is not None:
                kwargs = {"tls": tls}
            session = session_cls(sim, path, params, recorder, origin, name=f"{params.stack}{i}", **kwargs)
            sessions[origin] = session
            if pcap is not None:
                pcap.attach(session, index=i)

        last_start = schedule_requests(sim, specs, sessions, recorder)

        # Looked at only when an observer calls sim.stop() (a session whose connection
        # terminated, the recorder with no exchange open) and past the idle horizon:
        # never a walk over every session after every event (run_until).
        def check() -> None:
            for session in sessions.values():
                session.check()
            if sim.now >= last_start and sim.now - recorder.last_progress_s > params.idle_timeout_s:
                raise StackStalled(
                    f"idle timeout reached: no exchange progressed for {params.idle_timeout_s:g} s "
                    f"(at {sim.now:.3f} s of virtual time, {recorder.open_requests} of "
                    f"{len(specs)} exchanges still open)"
                )

        started = [False]

        def all_started() -> None:
            started[0] = True
            sim.stop()

        sim.call_at(last_start, all_started)
        recorder.on_all_done = sim.stop
        run_until(
            sim,
            lambda: started[0] and recorder.done,
            check=check,
            deadline_s=last_start + 100 * params.idle_timeout_s,
            safe_until=None if check_every_event else idle_safe_until(recorder, last_start, params.idle_timeout_s),
        )
        for session in sessions.values():
            session.close()
        if pcap is not None:
            pcap.write(pcap_path)
    return _result(specs, params, sim, recorder, sessions)


def _open(path: str, mode: str):
    from ..outfiles import open_output_stream

    return open_output_stream(path, mode)  # a FIFO without a reader refused, never waited on


def _result(specs, params: StackParams, sim: Simulator, recorder: Recorder, sessions: dict) -> Result:
    df = recorder.frame()
    requests = df[df["kind"] == "request"]
    completed = requests[requests["completed"]]
    packets_sent = packets_lost = 0
    totals: dict = {}
    for session in sessions.values():
        for link in (session.path.forward, session.path.reverse):
            packets_sent += link.stats.packets_sent
            packets_lost += link.stats.packets_lost + link.stats.packets_dropped
        for k, v in session.stats().items():
            if isinstance(v, (int, float)):
                totals[k] = totals.get(k, 0) + v
    times = completed["completion_s"].tolist()
    summary = {
        "stack": params.stack,
        "exchanges": int(len(requests)),
        "completed": int(len(completed)),
        "reset": int((requests["reset"] != "").sum()),
        "pushed": int((df["kind"] == "push").sum()),
        "last_completion_s": float(completed["complete_s"].max()) if len(completed) else None,
        "median_completion_s": float(statistics.median(times)) if times else None,
        "mean_completion_s": float(sum(times) / len(times)) if times else None,
        "packets_sent": packets_sent,
        "packets_lost": packets_lost,
        **timer_counts(session.stats() for session in sessions.values()),
        "connections": len(sessions),
        "sim_end_s": sim.now,
        "events": sim.events_run,
        **totals,
    }
    for k, v in params.to_dict().items():
        df[k] = v
    return Result(exchanges=df, summary=summary, params={**params.to_dict(), "version": __version__})


def run(trace: Trace, params: StackParams | None = None, **options) -> Result:
    """Replay ``trace`` over ``params.stack``.  ``options``: ``qlog_dir``, ``pcap_path``,
    ``keylog_path``, ``max_gap_s``, ``check_every_event``."""
    params = params or StackParams()
    max_gap_s = options.pop("max_gap_s", 10.0)
    result = run_specs(specs_from_trace(trace, params, max_gap_s=max_gap_s), params, **options)
    result.trace = {
        "source": trace.source,
        "format": trace.format,
        "content_hash": trace.content_hash(),
        "exchanges": len(trace),
    }
    return result


def median_completion_s(result: Result) -> float:
    """Seconds of the run's median exchange completion, NaN when nothing completed."""
    v = result.summary.get("median_completion_s")
    return math.nan if v is None else v
