"""Hostile and huge input through the trace import and the studies: an answer or one line.

A seeded mutation generator (``random.Random``, no hypothesis: a case is its seed, so a
failure is replayed by its number) makes HAR, QIF and QPACK offline-interop files the way
a hostile or broken producer would: wrong types, huge and non-finite numbers, Unicode
digits, deep nesting, header values past the limits, bad URL hosts, truncation, bit flips,
CRLF and CR-only line ends.  Each goes through ``workbench trace info`` and one study,
in-process.  The rules (``simulator.errors``, ``simulator.traces.limits``):

* exit status 0 or 2, never a traceback;
* a refusal is one line on stderr naming the file;
* an answer's ``--json`` holds no ``NaN`` or ``Infinity`` (not JSON, RFC 8259 section 6);
* no case runs past ``CASE_SECONDS`` (SIGALRM) or takes the process past ``MAX_RSS_BYTES``.

``make test`` runs a few dozen cases; ``-m slow`` a few hundred.  Past failures (the
issue's reproducers) are kept as files in ``tests/data/hostile/`` and run every time.
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import resource
import signal
from pathlib import Path

import pytest

from simulator.cli import main

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(__file__).resolve().parent / "data" / "hostile"
HARS = [
    ROOT / "traces" / "har-real" / n
    for n in ("sitespeed_browsertime-recalculate-style.har", "http_http2-firefox.har", "http_http2-chrome.har")
]
QIF = ROOT / "traces" / "qif" / "netbsd-hq.qif"
INTEROP = ROOT / "traces" / "qpack-interop" / "ls-qpack" / "netbsd-hq.out.256.100.1"

CASE_SECONDS = 60
MAX_RSS_BYTES = 2 << 30
# One study per case, in turn (each reads its trace through the one import).
HAR_STUDIES = [
    ["hol", "--json", "--trace"],
    ["push", "--json", "--policy", "none,hints", "--trace"],
    ["fidelity", "--json"],
    ["trailers", "--json", "--trace"],
    ["coalescing", "--json", "--trace"],
]

HOSTILE_VALUES = [
    "\u0661\u0662\u0663",
    "\uff11\uff12",
    "12",
    "",
    "x",
    True,
    None,
    [],
    {},
    [1, 2],
    -1,
    -5,
    10**30,
    2**63,
    1e308,
    2e9,
    9e15,
    0.5,
    "NaN",
    "Infinity",
]
RAW_NUMBERS = ["NaN", "Infinity", "-Infinity", "1e309", "1" * 5000, "-0", "5e-324"]
BAD_URLS = [
    "https://[::1/x",
    "https://[zz::1]/x",
    "https://a\uff03b.example/",
    "https://" + "a" * 300 + ".example/",
    "https://" + "b" * 64 + ".example/",
    "https://a..example/",
    "https://a.example:99999/",
    "https://\u0080.example/",
    "https:///x",
    "https://user@/x",
]


def _run(argv: list[str]) -> tuple[int, str]:
    """``main(argv)`` in-process: (status, stderr); a traceback or a hang fails the test, and
    so does a ``--json`` answer that is not JSON (``NaN``, ``Infinity``)."""
    err, out = io.StringIO(), io.StringIO()

    def timeout(signum, frame):
        raise TimeoutError(f"{argv} ran past {CASE_SECONDS} s")

    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    previous = signal.signal(signal.SIGALRM, timeout)
    signal.alarm(CASE_SECONDS)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(argv)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    # The process's high-water mark: a case fails when it raised it past the limit (an
    # earlier test in the same worker may have set it higher; that is not this case's).
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    assert rss <= max(peak_before, MAX_RSS_BYTES), f"{argv}: peak memory {rss / 2**20:.0f} MiB"
    if status == 0 and "--json" in argv:
        json.loads(out.getvalue(), parse_constant=_not_json)
    return status, err.getvalue()


def _not_json(constant: str):
    raise AssertionError(f"--json output holds {constant}, which is not JSON")


def _answered(argv: list[str], path: Path) -> tuple[int, str]:
    status, err = _run(argv)
    assert status in (0, 2), (argv, status, err)
    if status == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and str(path) in lines[0], (argv, err)
        assert "Traceback" not in err
    return status, err


# ---------------------------------------------------------------------------------------
# The mutations


def _places(node, prefix=()):
    """Every (container, key) in a JSON document, the first entries only (for speed)."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield node, k
            yield from _places(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node[:3]):
            yield node, i
            yield from _places(v, prefix + (i,))


def _mutate_har(rng: random.Random, doc: dict) -> bytes:
    kind = rng.choice(
        ["value", "value", "value", "raw-number", "url", "url", "header", "deep", "delete", "bytes", "truncate", "crlf"]
    )
    entries = doc["log"]["entries"]
    if kind == "url":  # the request URL, the initiator, a redirect, :authority
        e, bad = rng.choice(entries), rng.choice(BAD_URLS)
        place = rng.choice(["url", "initiator", "location", "authority"])
        if place == "url":
            e["request"]["url"] = bad
        elif place == "initiator":
            e["_initiator"] = {"type": "parser", "url": bad}
        elif place == "location":
            e["response"]["status"] = 302
            e["response"]["redirectURL"] = bad
        else:
            e["request"].setdefault("headers", []).insert(0, {"name": ":authority", "value": bad[8:].split("/")[0]})
    elif kind == "header":
        e = rng.choice(entries)
        side = e[rng.choice(["request", "response"])]
        side.setdefault("headers", []).append({"name": "x-big", "value": "v" * rng.choice([70_000, 300_000])})
    elif kind == "deep":
        depth = rng.choice([2_000, 10_000, 50_000])
        rng.choice(entries)["_initiator_detail"] = "[" * depth + "]" * depth
    elif kind == "delete":
        places = list(_places(doc))
        container, key = rng.choice(places)
        del container[key]
    elif kind in ("value", "raw-number"):
        places = [(c, k) for c, k in _places(doc) if not isinstance(c[k], (dict, list)) or rng.random() < 0.1]
        container, key = rng.choice(places)
        if kind == "value":
            container[key] = rng.choice(HOSTILE_VALUES)
        else:
            container[key] = "@@RAW@@"
            text = json.dumps(doc)
            return text.replace('"@@RAW@@"', rng.choice(RAW_NUMBERS), 1).encode()
    data = json.dumps(doc).encode()
    if kind == "deep" and rng.random() < 0.5:  # nested in the document itself, not in a string
        depth = rng.choice([2_000, 10_000])
        data = b'{"log":' + b"[" * depth + b"]" * depth + b"}"
    if kind == "bytes":
        data = _flip(rng, data)
    elif kind == "truncate":
        data = data[: rng.randrange(1, len(data))]
    elif kind == "crlf":
        data = data.replace(b",", b",\r\n")
    return data


def _flip(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.choice([1, 1, 4, 32])):
        i = rng.randrange(len(out))
        out[i] ^= 1 << rng.randrange(8)
    return bytes(out)


def _mutate_qif(rng: random.Random, data: bytes) -> bytes:
    kind = rng.choice(["crlf", "cr", "flip", "truncate", "big-value", "no-tab", "many-lists", "authority"])
    if kind == "authority":  # a host no client could connect to
        bad = rng.choice(BAD_URLS)[8:].split("/")[0].encode("utf-8", "surrogateescape")
        return data.replace(b":authority\t", b":authority\t" + bad + b"x", 1)
    if kind == "crlf":
        return data.replace(b"\n", b"\r\n")
    if kind == "cr":
        return data.replace(b"\n", b"\r")
    if kind == "flip":
        return _flip(rng, data)
    if kind == "truncate":
        return data[: rng.randrange(1, len(data))]
    if kind == "big-value":
        return b"x-big\t" + b"v" * rng.choice([70_000, 300_000]) + b"\n\n" + data
    if kind == "no-tab":
        lines = data.split(b"\n")
        i = rng.randrange(len(lines))
        lines[i] = lines[i].replace(b"\t", b" ")
        return b"\n".join(lines)
    return b"a\tb\n\n" * rng.choice([1_000, 60_000])


def _mutate_interop(rng: random.Random, data: bytes) -> bytes:
    kind = rng.choice(["flip", "truncate", "length", "stream"])
    if kind == "flip":
        return _flip(rng, data)
    if kind == "truncate":
        return data[: rng.randrange(1, len(data))]
    out = bytearray(data)
    if kind == "length":  # the first record's u32 length
        out[8:12] = rng.choice([b"\xff\xff\xff\xff", b"\x00\x10\x00\x00", b"\x00\x00\x00\x00"])
    else:  # the first record's u64 stream id
        out[0:8] = rng.choice([b"\xff" * 8, b"\x00\x00\x00\x00\xff\xff\xff\xff", b"\x00" * 7 + b"\x05"])
    return bytes(out)


def _case(seed: int, tmp: Path) -> tuple[Path, list[list[str]]]:
    """Case ``seed``: the mutated file and the commands to run on it."""
    rng = random.Random(seed)
    fmt = rng.choice(["har", "har", "har", "qif", "interop"])
    if fmt == "har":
        source = rng.choice(HARS)
        path = tmp / f"case{seed}.har"
        path.write_bytes(_mutate_har(rng, json.loads(source.read_text())))
        study = HAR_STUDIES[seed % len(HAR_STUDIES)]
    elif fmt == "qif":
        path = tmp / f"case{seed}.qif"
        path.write_bytes(_mutate_qif(rng, QIF.read_bytes()))
        study = ["hol", "--trace"]
    else:
        path = tmp / f"case{seed}.out.256.100.1"
        path.write_bytes(_mutate_interop(rng, INTEROP.read_bytes()))
        study = ["hol", "--trace"]
    return path, [["trace", "info", str(path)], [*study, str(path)]]


def _check_case(seed: int, tmp: Path) -> None:
    path, commands = _case(seed, tmp)
    for argv in commands:
        _answered(argv, path)


@pytest.mark.parametrize("seed", range(24))
def test_mutated_trace_is_answered_or_refused_in_one_line(tmp_path, seed):
    """simulator.errors: exit 0 or 2, a refusal one line naming the file, no traceback, no
    hang, no memory blow-up, for every trace format and a study that reads it."""
    _check_case(seed, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(24, 424))
def test_mutated_trace_is_answered_or_refused_in_one_line_many(tmp_path, seed):
    """The same rule over a few hundred more cases (``make test-slow``)."""
    _check_case(seed, tmp_path)


# ---------------------------------------------------------------------------------------
# The kept reproducers: each file and what its one line must say

REGRESSIONS = {
    "bodysize-unicode-digits.har": "response.bodySize",
    "bodysize-nan.har": "response.bodySize",
    "bodysize-2e9.har": "response.bodySize",
    "content-size-9e15.har": "response.content.size",
    "timings-string.har": "timings.wait",
    "timings-list.har": "timings.receive",
    "onload-infinity.har": "pageTimings.onLoad",
    "url-bad-ipv6.har": "IPv6",
    "url-nfkc-host.har": "NFKC",
    "url-long-host.har": "253",
    "initiator-bad-ipv6.har": "_initiator url",
    "location-nfkc-host.har": "redirect location",
    "authority-long-label.har": ":authority",
    "header-100kb-value.har": "x-big",
    "nested-10000.har": "nested",
    "initiator-detail-nested.har": None,  # a nested string field is ignored, not a crash
    "netbsd-hq-cr-only.qif": None,  # CR-only line ends read as lines
    "interop-huge-length.out.256.100.1": "byte offset 0",
}


@pytest.mark.parametrize("name", REGRESSIONS)
def test_kept_reproducers(name):
    """Each past failure of the issue, kept: refused in one line naming the file and the
    field (or read, where the rule is to read it)."""
    path = CORPUS / name
    for argv in (["trace", "info", str(path)], ["hol", "--trace", str(path)]):
        status, err = _answered(argv, path)
        needle = REGRESSIONS[name]
        if needle is None:
            assert status == 0, err
        else:
            assert status == 2 and needle in err, err


def test_cr_only_qif_matches_the_interop_decode():
    """QIF with CR-only line ends (old Mac text) is the same header lists: ls-qpack's
    encoding of netbsd-hq decodes to all 18 (RFC 9204 offline interop)."""
    encoded = ROOT / "traces" / "qpack-interop" / "ls-qpack" / "netbsd-hq.out.4096.100.0"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["interop", "decode", str(encoded), "--qif", str(CORPUS / "netbsd-hq-cr-only.qif")]) == 0
    assert "18/18 header lists match" in out.getvalue()


def test_fifo_as_a_trace_is_refused_not_read_forever(tmp_path):
    """A FIFO (or /dev/zero) never ends: refused before it is opened, in one line, as a
    trace, a DNS table or a grid file."""
    import os

    fifo = tmp_path / "trace.har"
    os.mkfifo(fifo)
    status, err = _answered(["trace", "info", str(fifo)], fifo)
    assert status == 2 and "FIFO" in err
    status, err = _run(["trace", "info", "/dev/zero"])
    assert status == 2 and err.count("\n") == 1 and "/dev/zero" in err
    page = str(HARS[0])
    for argv in (
        ["coalescing", "--trace", page, "--dns", str(fifo)],
        ["batch", "hol", "--traces", page, "--grid", str(fifo), "--out", str(tmp_path / "res")],
    ):
        status, err = _answered(argv, fifo)  # a DNS table and a grid file the same way
        assert status == 2 and "FIFO" in err
