"""The frame scanner, end to end on the paths users run, and one step at a time.

**End to end** (what a user waits for: CPU time of the whole path), each candidate in
the same run, interleaved:

- *h2 receive*: a real h2 client receives a real h2 server's response stream in 64 KiB
  reads (``receive_data``, handing every DATA byte back with
  ``acknowledge_received_data`` and writing what h2 sends, as a client does), with h2's
  own buffer ("stock h2") and with ``simulator.frames.h2buffer.install`` (C, and the
  pure-Python twin).  Two streams: 200 responses of 100 kB in full 16 KiB DATA frames
  (about 20 MB: a bulk download), and 200 responses of 10 kB in DATA frames of 0-256 B
  (small frames: per-frame costs only).  A diagnostic line (not a user path) gives the
  C buffer with hyperframe's own ``repr`` on the frames it builds, to show how much of
  the gain is that repr (h2 formats ``repr(frame)`` for its trace log on every frame,
  logged or not).  Every candidate must deliver the same events and body bytes.
- *HOL study*: one ``hol.run`` (three schemes, 1% loss; the run alone: trace loaded
  before, the DataFrames made after) over HTTP/2-over-TCP (its receivers feed each read
  to one ``H2Scanner`` per connection) and over QUIC (one ``H3Scanner`` per request
  stream), C against the twin.  The receivers keep no buffer of their own:
  ``feed_frames`` hands back each completed frame's payload and the scanner holds the
  one incomplete frame, so reading, framing and copying a payload out are all the
  scanner's (in C, one copy straight out of the read).
- *workbench frames*: the command's listing of a 25 MB capture (27,354 frames) to
  /dev/null, C against the twin (in process: interpreter start-up not counted).
- *h2 replay*: ``workbench replay --stack h2`` on the bundled synthetic page (real h2
  over the TCP model), stock h2 against the scanner buffer (C, twin).

In the HOL study and the replay the frame path is a few percent of the run (the
simulation, hpack/QPACK, h2's state machine and TLS are the rest), less than the
spread between two runs of the same candidate on a shared machine; so these rows also
print the range of the ratio round by round, and two rows under each:

- *one step: its frame path alone*: the reads of that very run, recorded once (the
  chunks the study's receivers fed their scanners; the reads h2 handed its incoming
  buffer), fed again to each candidate as the run does (a new scanner per stream or
  connection, ``feed_frames``; ``add_data``, every frame, ``repr(frame)``), many rounds;
- *end to end, noise taken out of the shared part*: the best run less its own frame
  path (everything the candidates share, measured as undisturbed as this machine
  allows), plus each candidate's frame path alone.

**One step** (not a user path on its own): the boundary scan alone -- one mixed HTTP/2
byte stream of about 25 MB (HEADERS, DATA of varied sizes, SETTINGS, WINDOW_UPDATE,
PING; built with hyperframe, deterministic) fed in 64 KiB chunks to

- h2's ``FrameBuffer`` (what ``H2Connection.receive_data`` uses),
- hyperframe directly (``parse_frame_header`` + ``parse_body`` over one memoryview),
- the pure-Python twin ``simulator.frames.scanner.H2Scanner`` (``feed`` + ``results``),
- the C ``H2Scanner``: ``feed`` + ``results_into`` (each chunk's records copied into
  reused arrays: the native path, the ``c_vs_h2`` figure) and ``feed`` + ``results``
  (one Python tuple per frame: ``c_tuples_vs_h2``), and the C bulk ``parse_h2`` (whole
  buffer into arrays),

every candidate finding the same number of frames; and Huffman decoding of the same
corpus of Huffman-coded header values by hpack's pure-Python decoder, the C decoder
and the twin, results checked equal.

Each timing is the best of a few repetitions (CPU time of the benchmark process,
``time.process_time``), candidates interleaved, in reversed order every other round,
each from a collected heap.  Ratios are what matters (see README).
"""

from __future__ import annotations

import gc
import random
import time
from pathlib import Path

CHUNK = 64 * 1024

# CPU seconds of this process: on a machine shared with other work this is disturbed far
# less than wall time, and for this single-threaded code it is what a user waits for.
_clock = time.process_time


def build_stream(target_bytes: int, seed: int = 1) -> tuple[bytes, int]:
    from hyperframe.frame import DataFrame, HeadersFrame, PingFrame, SettingsFrame, WindowUpdateFrame

    rnd = random.Random(seed)
    # DATA payload sizes: mostly small and medium (as on a busy connection), some full frames.
    sizes = [0, 8, 16, 40, 64, 100, 100, 200, 300, 300, 500, 700, 1000, 1400, 1400, 4096, 16384]
    payload = rnd.randbytes(16384)
    parts, total, count, sid = [], 0, 0, 1
    parts.append(SettingsFrame(0, settings={1: 4096, 4: 65535, 5: 16384}).serialize())
    while total < target_bytes:
        r = rnd.random()
        if r < 0.25:
            f = HeadersFrame(sid, data=payload[: rnd.randrange(20, 300)], flags=["END_HEADERS"])
            sid += 2
        elif r < 0.80:
            f = DataFrame(
                rnd.randrange(1, sid + 1, 2),
                data=payload[: rnd.choice(sizes)],
                flags=["END_STREAM"] if rnd.random() < 0.1 else [],
            )
        elif r < 0.93:
            f = WindowUpdateFrame(rnd.choice([0, 1]), window_increment=rnd.randrange(1, 1 << 20))
        elif r < 0.98:
            f = PingFrame(0, opaque_data=payload[:8], flags=["ACK"] if rnd.random() < 0.5 else [])
        else:
            f = (
                SettingsFrame(0, settings={4: rnd.randrange(1 << 16, 1 << 20)})
                if rnd.random() < 0.5
                else SettingsFrame(0, flags=["ACK"])
            )
        b = f.serialize()
        parts.append(b)
        total += len(b)
        count += 1
    return b"".join(parts), count + 1


def _best(fn, repeat: int) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        t0 = _clock()
        result = fn()
        best = min(best, _clock() - t0)
    return best, result


def _h2_framebuffer(data: bytes) -> int:
    from h2.frame_buffer import FrameBuffer

    fb = FrameBuffer(server=False)
    fb.max_frame_size = 16384
    n = 0
    for i in range(0, len(data), CHUNK):
        fb.add_data(data[i : i + CHUNK])
        for _ in fb:
            n += 1
    return n


def _hyperframe(data: bytes) -> int:
    from hyperframe.frame import Frame

    mv = memoryview(data)
    pos, n, end = 0, 0, len(data)
    while pos + 9 <= end:
        frame, length = Frame.parse_frame_header(mv[pos : pos + 9])
        frame.parse_body(mv[pos + 9 : pos + 9 + length])
        pos += 9 + length
        n += 1
    return n


def _scanner(impl, data: bytes) -> int:
    """feed + results(): one Python tuple per frame."""
    sc = impl.H2Scanner(16384)
    mv = memoryview(data)
    n = 0
    for i in range(0, len(data), CHUNK):
        if sc.feed(mv[i : i + CHUNK]):
            n += len(sc.results())
    sc.finish()
    return n


def _scanner_arrays(impl, data: bytes) -> int:
    """feed + results_into(): each chunk's records copied into reused arrays (no object per frame)."""
    from array import array

    cap = CHUNK // 9 + 1
    out = (
        array("B", bytes(cap)),
        array("B", bytes(cap)),
        array("I", [0]) * cap,
        array("Q", [0]) * cap,
        array("I", [0]) * cap,
    )
    sc = impl.H2Scanner(16384)
    mv = memoryview(data)
    n = 0
    for i in range(0, len(data), CHUNK):
        if sc.feed(mv[i : i + CHUNK]):
            n += sc.results_into(out)
    sc.finish()
    return n


def build_huffman_corpus(target_bytes: int, seed: int = 2) -> list[bytes]:
    from hpack.huffman import HuffmanEncoder
    from hpack.huffman_constants import REQUEST_CODES, REQUEST_CODES_LENGTH

    enc = HuffmanEncoder(REQUEST_CODES, REQUEST_CODES_LENGTH)
    rnd = random.Random(seed)
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=;:, "
    samples = [
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36",
        "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8",
        "gzip, deflate, br",
        "en-US,en;q=0.9",
        "max-age=0",
        "https://www.example.com/index.html",
    ]
    out, total = [], 0
    while total < target_bytes:
        if rnd.random() < 0.4:
            s = rnd.choice(samples)
        elif rnd.random() < 0.5:
            s = "/" + "/".join("".join(rnd.choices(alphabet[:36], k=rnd.randrange(3, 12))) for _ in range(4))
        else:
            s = "; ".join(
                f"{''.join(rnd.choices(alphabet[:52], k=6))}={''.join(rnd.choices(alphabet[:62], k=24))}"
                for _ in range(rnd.randrange(1, 6))
            )
        coded = enc.encode(s.encode())
        out.append(coded)
        total += len(coded)
    return out


# ---------------------------------------------------------------------------------
# End to end: h2 receive

N_STREAMS = 200


def _request(i: int):
    return [(":method", "GET"), (":path", f"/r/{i}"), (":scheme", "https"), (":authority", "example.com")]


def _h2_client(impl=None):
    """A client that asked for N_STREAMS responses (generous windows and stream limit, so
    the server's stream is not shaped by flow control); ``impl``: the scanner buffer."""
    import h2.config
    import h2.connection
    import h2.settings

    from simulator.frames.h2buffer import install

    c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding=None))
    c.local_settings = h2.settings.Settings(
        client=True,
        initial_values={
            h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 2**31 - 1,
            h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: 1000,
        },
    )
    if impl is not None:
        install(c, impl=impl)
    c.initiate_connection()
    c.increment_flow_control_window(2**31 - 1 - 65535)
    for i in range(N_STREAMS):
        c.send_headers(1 + 2 * i, _request(i), end_stream=True)
    return c


def build_response_stream(body_bytes: int, frame_sizes: list[int] | None, seed: int = 1) -> bytes:
    """A real h2 server's bytes answering ``_h2_client``'s requests: N_STREAMS responses of
    ``body_bytes``, interleaved round-robin, DATA frames of the largest size h2 allows or
    of sizes drawn from ``frame_sizes``."""
    import h2.config
    import h2.connection
    import h2.settings

    rnd = random.Random(seed)
    client = _h2_client()
    server = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False, header_encoding=None))
    server.local_settings = h2.settings.Settings(
        client=False, initial_values={h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: 1000}
    )
    server.initiate_connection()
    server.receive_data(client.data_to_send())
    out = [server.data_to_send()]
    for i in range(N_STREAMS):
        server.send_headers(
            1 + 2 * i,
            [(":status", "200"), ("content-type", "application/octet-stream"), ("content-length", str(body_bytes))],
        )
    body = rnd.randbytes(16384)
    sent = [0] * N_STREAMS
    while min(sent) < body_bytes:
        for i in range(N_STREAMS):
            if sent[i] >= body_bytes:
                continue
            size = server.max_outbound_frame_size if frame_sizes is None else rnd.choice(frame_sizes)
            n = min(size, body_bytes - sent[i])
            server.send_data(1 + 2 * i, body[:n], end_stream=sent[i] + n >= body_bytes)
            sent[i] += n
        out.append(server.data_to_send())
    return b"".join(out)


def _h2_receive(data: bytes, impl=None, hyperframe_repr: bool = False) -> tuple[float, tuple]:
    """Seconds for a client to receive ``data`` in 64 KiB reads; (events, body bytes)."""
    import h2.events

    from simulator.frames.h2frames import frame_classes

    client = _h2_client(impl)
    client.data_to_send()
    saved = {}
    if hyperframe_repr:  # the diagnostic: hyperframe's repr on the scanner's frames
        from hyperframe.frame import Frame

        for cls in frame_classes(impl):
            saved[cls] = cls.__repr__
            cls.__repr__ = Frame.__repr__
    events = body = 0
    view = memoryview(data)
    try:
        t0 = _clock()
        for i in range(0, len(data), CHUNK):
            for event in client.receive_data(view[i : i + CHUNK]):
                events += 1
                if type(event) is h2.events.DataReceived:
                    body += len(event.data)
                    client.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            client.data_to_send()
        elapsed = _clock() - t0
    finally:
        for cls, method in saved.items():
            cls.__repr__ = method
    return elapsed, (events, body)


def _interleaved(candidates: dict, repeat: int, rounds: dict | None = None) -> dict:
    """Best time of each candidate over ``repeat`` rounds, candidates interleaved; every
    candidate's result must be the same.  ``rounds``: filled with every round's time per
    candidate (for the spread of the paired ratios).

    The order is reversed every other round (A B C, C B A, ...), so no candidate always
    runs first (imports, caches) or right after the same neighbour, and the heap is
    collected before every timed call, so each starts from the same garbage collector
    state: otherwise a full collection that one candidate's garbage made due lands,
    run after run, in the time of the candidate after it."""
    best, results = {}, {}
    names = list(candidates)
    for round_ in range(repeat):
        for name in names if round_ % 2 == 0 else names[::-1]:
            gc.collect()
            t, result = candidates[name]()
            best[name] = min(best.get(name, float("inf")), t)
            results[name] = result
            if rounds is not None:
                rounds.setdefault(name, []).append(t)
    first = next(iter(results.values()))
    for name, result in results.items():
        if result != first:
            raise AssertionError(f"{name} gave {result!r}, expected {first!r}")
    return best


def h2_receive_figures(quick: bool) -> dict:
    from simulator.frames import implementations
    from simulator.frames.h2buffer import uninstall_huffman

    impls = implementations()
    streams = {
        "large DATA (16 KiB frames)": (10_000 if quick else 100_000, None),
        "small frames (0-256 B DATA)": (1_000 if quick else 10_000, [0, 16, 64, 128, 256]),
    }
    out = {}
    for label, (body_bytes, sizes) in streams.items():
        data = build_response_stream(body_bytes, sizes)
        candidates = {"stock h2": lambda d=data: _h2_receive(d)}
        if "c" in impls:
            candidates["scanner buffer, C"] = lambda d=data: _h2_receive(d, impls["c"])
            candidates["  (C, hyperframe's repr)"] = lambda d=data: _h2_receive(d, impls["c"], hyperframe_repr=True)
        candidates["scanner buffer, Python twin"] = lambda d=data: _h2_receive(d, impls["python"])
        best = _interleaved(candidates, 3 if quick else 7)
        uninstall_huffman()
        frames = len(__import__("simulator.frames", fromlist=["parse_h2"]).parse_h2(data, preface=False))
        out[label] = {"bytes": len(data), "frames": frames, "seconds": best}
    return out


# ---------------------------------------------------------------------------------
# End to end: the HOL study's receivers, `workbench frames`, `workbench replay --stack h2`


def hol_figures(quick: bool) -> dict:
    from dataclasses import replace

    from simulator.frames import implementations
    from simulator.studies import hol
    from simulator.http import blocks as hol_model  # hol's header blocks' frame scanners live there
    from simulator.traces import load

    root = Path(__file__).resolve().parent.parent
    candidates = [root / "traces" / "qif" / "fb-req-hq.qif", root / "traces" / "synthetic-session.har"]
    path = next(p for p in candidates if p.exists())
    trace = load(path)
    impls = implementations()
    saved = (hol_model.H2Scanner, hol_model.H3Scanner)
    out = {"trace": path.name}

    def with_impl(impl, params):
        def run():
            hol_model.H2Scanner, hol_model.H3Scanner = impl.H2Scanner, impl.H3Scanner
            try:
                t0 = _clock()
                result = hol.run(trace, params)
                return _clock() - t0, result.summary.to_json()
            finally:
                hol_model.H2Scanner, hol_model.H3Scanner = saved

        return run

    base = hol.HolParams(schemes=("hpack", "qpack", "qcram"), loss="0.01", seed=1)
    for transport, label in (("tcp", "HOL study, HTTP/2 over TCP"), ("quic", "HOL study, HTTP/3 over QUIC")):
        params = replace(base, transport=transport)
        candidates = {f"{name}": with_impl(impl, params) for name, impl in sorted(impls.items())}
        rounds: dict = {}
        out[label] = {"seconds": _interleaved(candidates, 2 if quick else 9, rounds), "rounds": rounds}
        # The same run's frame path alone: every chunk its receivers fed to a scanner,
        # recorded once, fed again to each implementation as the study's receivers do.
        log: list = []
        hol_model.H2Scanner, hol_model.H3Scanner = (
            _recorder(impls["python"].H2Scanner, log),
            _recorder(impls["python"].H3Scanner, log),
        )
        try:
            hol.run(trace, params)
        finally:
            hol_model.H2Scanner, hol_model.H3Scanner = saved
        alone = {name: (lambda impl=impl: _hol_frame_path(impl, log)) for name, impl in sorted(impls.items())}
        out[label]["alone"] = _interleaved(alone, 3 if quick else 15)
        out[label]["reads"] = sum(len(chunks) for _, _, chunks in log)
    return out


def _recorder(cls, log: list):
    """A scanner class that logs, per instance, its constructor's arguments and every chunk fed."""

    class Recording:
        def __init__(self, *args, **kwargs) -> None:
            self._scanner = cls(*args, **kwargs)
            self._chunks: list = []
            log.append((cls.__name__, (args, kwargs), self._chunks))

        def feed(self, data) -> int:
            self._chunks.append(bytes(data))
            return self._scanner.feed(data)

        def feed_frames(self, data) -> list:
            self._chunks.append(bytes(data))
            return self._scanner.feed_frames(data)

        def __getattr__(self, name):
            return getattr(self._scanner, name)

    return Recording


def _hol_frame_path(impl, log: list) -> tuple[float, int]:
    """CPU seconds of the HOL receivers' scanner calls on the recorded chunks: a scanner
    made per stream (HTTP/3) or connection (HTTP/2), then ``feed_frames`` on each chunk."""
    frames = 0
    t0 = _clock()
    for kind, (args, kwargs), chunks in log:
        sc = getattr(impl, kind)(*args, **kwargs)
        for chunk in chunks:
            frames += len(sc.feed_frames(chunk))
    return _clock() - t0, frames


def frames_command_figures(data: bytes, quick: bool) -> dict:
    import argparse
    import contextlib
    import os
    import tempfile

    import simulator.frames as F
    from simulator.frames import commands

    impls = F.implementations()
    fd, path = tempfile.mkstemp(suffix=".h2")
    os.write(fd, data)
    os.close(fd)
    saved = commands.parse_h2
    args = argparse.Namespace(file=path, h3=False, json=False, max_frame_size=16384, kind=None)

    def with_impl(impl):
        def run():
            commands.parse_h2 = lambda d, **kw: F.parse_h2(d, impl=impl, **kw)
            try:
                with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
                    t0 = _clock()
                    commands.frames_command(args)
                    return _clock() - t0, None
            finally:
                commands.parse_h2 = saved

        return run

    try:
        best = _interleaved({name: with_impl(impl) for name, impl in sorted(impls.items())}, 1 if quick else 3)
    finally:
        os.unlink(path)
    return {"seconds": best}


def replay_figures(quick: bool) -> dict:
    import simulator.stacks.h2 as stack_h2
    from simulator.frames import implementations
    from simulator.frames.h2buffer import ScannerFrameBuffer, install, uninstall_huffman
    from simulator.frames.h2frames import frame_classes
    from simulator.stacks import replay
    from simulator.stacks.common import StackParams
    from simulator.traces import load

    trace = load(Path(__file__).resolve().parent.parent / "traces" / "synthetic-page.har")
    saved = stack_h2.install

    def with_install(fn):
        def run():
            uninstall_huffman()
            stack_h2.install = fn
            try:
                t0 = _clock()
                result = replay.run(trace, StackParams(stack="h2", loss="0.01"))
                return _clock() - t0, result.summary["exchanges"]
            finally:
                stack_h2.install = saved
                uninstall_huffman()

        return run

    candidates = {"stock h2": with_install(lambda conn: conn)}
    for name, impl in sorted(implementations().items()):
        candidates[f"scanner buffer, {name}"] = with_install(lambda conn, impl=impl: install(conn, impl=impl))
    rounds: dict = {}
    out = {"seconds": _interleaved(candidates, 2 if quick else 9, rounds), "rounds": rounds}

    # The same run's frame path alone: every read h2 handed its incoming buffer, recorded
    # once (stock h2), then given to each buffer as H2Connection.receive_data does.
    from h2.frame_buffer import FrameBuffer

    log: dict = {}
    original = FrameBuffer.add_data

    def recording(buffer, data):
        log.setdefault(id(buffer), (type(buffer) is FrameBuffer and buffer._preamble_len == 24, []))[1].append(
            bytes(data)
        )
        return original(buffer, data)

    FrameBuffer.add_data = recording
    try:
        with_install(lambda conn: conn)()
    finally:
        FrameBuffer.add_data = original
    reads = list(log.values())
    alone = {"stock h2": lambda: _buffer_frame_path(lambda server: FrameBuffer(server=server), reads)}
    for name, impl in sorted(implementations().items()):
        frame_classes(impl)  # as install() does: the scanner builds DATA frames
        alone[f"scanner buffer, {name}"] = lambda impl=impl: _buffer_frame_path(
            lambda server: ScannerFrameBuffer(server=server, impl=impl), reads
        )
    out["alone"] = _interleaved(alone, 3 if quick else 15)
    out["reads"] = sum(len(chunks) for _, chunks in reads)
    return out


def _buffer_frame_path(make, reads: list) -> tuple[float, int]:
    """CPU seconds of an incoming buffer on recorded reads, as ``receive_data`` drives it:
    ``add_data``, then every frame it yields, and ``repr(frame)``, which h2 evaluates for
    its trace log on every frame it receives (``H2Connection._receive_frame``)."""
    from h2.settings import Settings

    max_frame = Settings().max_frame_size  # h2's SETTINGS_MAX_FRAME_SIZE (the replay keeps the default)
    frames = 0
    t0 = _clock()
    for server, chunks in reads:
        buffer = make(server)
        for chunk in chunks:
            buffer.add_data(chunk)
            buffer.max_frame_size = max_frame
            for frame in buffer:
                repr(frame)
                frames += 1
    return _clock() - t0, frames


def _print_e2e(
    title: str, seconds: dict, base_name: str, note: str = "", indent: int = 0, rounds: dict | None = None
) -> dict:
    """One table: each candidate's best time and its ratio to ``base_name``'s; with
    ``rounds``, also the range of the ratio round by round (the two timed back to back)."""
    base = seconds[base_name]
    print(f"{title}{note}")
    ratios = {}
    for name, t in seconds.items():
        ratios[name] = base / t
        spread = ""
        if rounds and name != base_name:
            paired = sorted(b / x for b, x in zip(rounds[base_name], rounds[name]))
            spread = f"   rounds {paired[0]:.2f}-{paired[-1]:.2f}x, median {paired[len(paired) // 2]:.2f}x"
        print(f"{' ' * (indent + 2)}{name:<{34 - indent}}{t * 1e3:>10.1f} ms{ratios[name]:>9.2f}x{spread}")
    return ratios


def _less_noise(seconds: dict, alone: dict) -> dict:
    """Each candidate's end-to-end time with the machine's noise taken out of the part
    they share: the best run less its own frame path (the least disturbed measure of
    everything else), plus the candidate's frame path alone."""
    rest = min(seconds[name] - alone[name] for name in seconds)
    return {name: rest + alone[name] for name in seconds}


def run(quick: bool = False) -> dict:
    import simulator.frames as F
    from hpack.huffman_table import decode_huffman as hpack_decode

    impls = F.implementations()
    c = impls.get("c")
    py = impls["python"]
    size = 2_500_000 if quick else 25_000_000
    repeat_slow, repeat_fast = (1, 3) if quick else (2, 5)
    data, nframes = build_stream(size)

    rows = {}
    t, n = _best(lambda: _h2_framebuffer(data), repeat_slow)
    rows["h2 FrameBuffer"] = (t, n)
    t, n = _best(lambda: _hyperframe(data), repeat_slow)
    rows["hyperframe"] = (t, n)
    t, n = _best(lambda: _scanner(py, data), repeat_slow)
    rows["Python twin H2Scanner"] = (t, n)
    allocations = None
    if c is not None:
        t, n = _best(lambda: _scanner_arrays(c, data), repeat_fast)
        rows["C H2Scanner"] = (t, n)
        t, n = _best(lambda: _scanner(c, data), repeat_fast)
        rows["C H2Scanner, tuples"] = (t, n)
        t, res = _best(lambda: F.parse_h2(data, impl=c), repeat_fast)
        rows["C parse_h2 (bulk)"] = (t, len(res))
        sc = c.H2Scanner(16384)
        for i in range(0, len(data), CHUNK):
            sc.feed(data[i : i + CHUNK])
        allocations = sc.allocations
    for name, (t, n) in rows.items():
        if n != nframes:
            raise AssertionError(f"{name} found {n} frames, expected {nframes}")

    fps = {name: n / t for name, (t, n) in rows.items()}
    base = fps["h2 FrameBuffer"]

    # Huffman
    corpus = build_huffman_corpus(200_000 if quick else 2_000_000)
    hbytes = sum(len(s) for s in corpus)
    hrows = {}
    t, ref = _best(lambda: [hpack_decode(s) for s in corpus], repeat_slow)
    hrows["hpack decode_huffman"] = t
    t, got = _best(lambda: [py.huffman_decode(s) for s in corpus], repeat_slow)
    if got != ref:
        raise AssertionError("Python twin Huffman output differs from hpack")
    hrows["Python twin huffman_decode"] = t
    if c is not None:
        t, got = _best(lambda: [c.huffman_decode(s) for s in corpus], repeat_fast)
        if got != ref:
            raise AssertionError("C Huffman output differs from hpack")
        hrows["C huffman_decode"] = t

    # End to end
    receive = h2_receive_figures(quick)
    hol_runs = hol_figures(quick)
    command = frames_command_figures(data, quick)
    replays = replay_figures(quick)

    print(
        "END TO END: what a user waits for, CPU time of the whole path (best of several runs, candidates\n"
        "interleaved; ratio = baseline time / time).  Where the frame path is a few percent of the run (HOL,\n"
        "replay) the rounds' spread shows the machine's noise, and two more rows follow: the frame path\n"
        "alone (one step: the run's own reads replayed into each candidate, many rounds) and the end to end\n"
        "time with that noise taken out of the shared part (best run less its frame path, plus each\n"
        "candidate's frame path alone)."
    )
    e2e, alone, steady, diagnostic = {}, {}, {}, {}
    for label, fig in receive.items():
        seconds = dict(fig["seconds"])
        repr_row = seconds.pop("  (C, hyperframe's repr)", None)
        e2e[f"h2 receive, {label}"] = _print_e2e(
            f"h2 client receive, {label}",
            seconds,
            "stock h2",
            f": {fig['bytes'] / 1e6:.1f} MB, {fig['frames']} frames, 64 KiB reads",
        )
        if repr_row is not None:
            diagnostic[f"h2 receive, {label}"] = repr_row
            print(
                f"    diagnostic, not a user path: the C buffer with hyperframe's own repr on its frames "
                f"{repr_row * 1e3:.1f} ms ({seconds['stock h2'] / repr_row:.2f}x stock h2)"
            )
    for label in ("HOL study, HTTP/2 over TCP", "HOL study, HTTP/3 over QUIC"):
        fig = hol_runs[label]
        e2e[label] = _print_e2e(
            f"{label}",
            fig["seconds"],
            "python",
            f" ({hol_runs['trace']}, 3 schemes, 1% loss): C scanner vs the twin",
            rounds=fig["rounds"],
        )
        alone[label] = _print_e2e(
            "    one step: its frame path alone",
            fig["alone"],
            "python",
            f" (the run's {fig['reads']} scanner feeds replayed)",
            indent=4,
        )
        steady[label] = _print_e2e(
            "    end to end, noise taken out of the shared part",
            _less_noise(fig["seconds"], fig["alone"]),
            "python",
            indent=4,
        )
    e2e["workbench frames"] = _print_e2e(
        "workbench frames",
        command["seconds"],
        "python",
        f" on a {len(data) / 1e6:.0f} MB capture ({nframes} frames, listing to /dev/null): C vs the twin",
    )
    e2e["h2 replay"] = _print_e2e(
        "workbench replay --stack h2",
        replays["seconds"],
        "stock h2",
        " (synthetic-page.har: 79 exchanges, 1% loss)",
        rounds=replays["rounds"],
    )
    alone["h2 replay"] = _print_e2e(
        "    one step: its frame path alone",
        replays["alone"],
        "stock h2",
        f" (the run's {replays['reads']} reads replayed into each buffer, repr of every frame as h2 does)",
        indent=4,
    )
    steady["h2 replay"] = _print_e2e(
        "    end to end, noise taken out of the shared part",
        _less_noise(replays["seconds"], replays["alone"]),
        "stock h2",
        indent=4,
    )
    print("\nONE STEP: frame boundaries alone (no frame objects, no h2)")
    print(
        f"frames: {len(data) / 1e6:.1f} MB, {nframes} frames (HEADERS, DATA 0..16384 B, SETTINGS, "
        f"WINDOW_UPDATE, PING), fed in {CHUNK // 1024} KiB chunks; active: {F.IMPLEMENTATION}"
    )
    print(f"{'parser':<28}{'seconds':>10}{'frames/s':>14}{'vs h2':>10}")
    for name, (t, n) in rows.items():
        print(f"{name:<28}{t:>10.4f}{fps[name]:>14,.0f}{fps[name] / base:>9.1f}x")
    print(f"\nONE STEP: HPACK Huffman decoding, {len(corpus)} strings, {hbytes / 1e6:.2f} MB coded")
    print(f"{'decoder':<30}{'seconds':>10}{'MB/s':>10}{'vs hpack':>10}")
    for name, t in hrows.items():
        print(f"{name:<30}{t:>10.4f}{hbytes / t / 1e6:>10.1f}{hrows['hpack decode_huffman'] / t:>9.1f}x")
    if allocations is not None:
        print(f"\nC H2Scanner heap (re)allocations over {nframes} frames: {allocations}")

    result = {
        "end_to_end": e2e,
        "frame_path_alone": alone,
        "end_to_end_noise_taken_out": steady,
        "end_to_end_rounds_seconds": {
            **{k: v["rounds"] for k, v in hol_runs.items() if k != "trace"},
            "h2 replay": replays["rounds"],
        },
        "diagnostic_hyperframe_repr_seconds": diagnostic,
        "frame_path_alone_seconds": {
            **{k: v["alone"] for k, v in hol_runs.items() if k != "trace"},
            "h2 replay": replays["alone"],
        },
        "end_to_end_seconds": {
            **{f"h2 receive, {k}": v["seconds"] for k, v in receive.items()},
            **{k: v["seconds"] for k, v in hol_runs.items() if k != "trace"},
            "workbench frames": command["seconds"],
            "h2 replay": replays["seconds"],
        },
        "stream_bytes": len(data),
        "frames": nframes,
        "implementation": F.IMPLEMENTATION,
        "fps": {k: round(v) for k, v in fps.items()},
        "python_vs_h2": fps["Python twin H2Scanner"] / base,
        "hyperframe_vs_h2": fps["hyperframe"] / base,
        "huffman_bytes": hbytes,
        "huffman_python_vs_hpack": hrows["hpack decode_huffman"] / hrows["Python twin huffman_decode"],
    }
    if c is not None:
        result.update(
            {
                "c_vs_h2": fps["C H2Scanner"] / base,
                "c_tuples_vs_h2": fps["C H2Scanner, tuples"] / base,
                "c_bulk_vs_h2": fps["C parse_h2 (bulk)"] / base,
                "c_vs_hyperframe": fps["C H2Scanner"] / fps["hyperframe"],
                "c_vs_python": fps["C H2Scanner"] / fps["Python twin H2Scanner"],
                "huffman_c_vs_hpack": hrows["hpack decode_huffman"] / hrows["C huffman_decode"],
                "c_scanner_allocations": allocations,
            }
        )
    else:
        result.update({"c_vs_h2": None, "huffman_c_vs_hpack": None})
    return result
