"""The input files of the fresh mutation corpus (``tests/fuzz_fresh.py``).  Written by hand.

Each function takes a seeded ``random.Random`` and returns the bytes of one mutated input;
the kinds are the ones ``tests/test_hostile_inputs.py`` does not make (that generator
mutates the first entries of three HARs, QIF line ends and the first interop record):

* HAR: later entries (past the first three), ``pages`` (duplicate or missing ids, a
  ``pageref`` to nowhere, non-finite page timings), ``_initiator`` stacks (deep
  ``parent`` chains, call frames of the wrong type), entry counts up to and past
  ``MAX_ENTRIES``, ``content.text`` with bad base64 and odd ``encoding`` values, redirect
  loops, duplicate request ids and connection ids, dates that are not ISO 8601;
* QIF: comment lines, upper-case and empty names, NUL bytes, invalid UTF-8, a value that
  holds a tab, many small lists;
* interop files: a record's length pointing past the end or into the next record, stream
  ids repeated, records cut in the middle of the header block;
* grid files (TOML) for ``batch``: wrong types, ``nan`` and ``inf``, huge arrays, unknown
  keys, deep nesting, Unicode digits;
* DNS and certificate tables for ``coalescing``: the same kinds, JSON and TOML;
* notebooks for ``slides``: not JSON, wrong ``nbformat``, cells of the wrong shape, figures
  with bad base64, deep nesting.
"""

from __future__ import annotations

import base64
import json
import random

HOSTILE = [
    "\u0661\u0662",
    "\uff13",
    "12",
    "",
    "x",
    True,
    None,
    [],
    {},
    [1],
    -1,
    -7,
    10**30,
    2**64,
    1e308,
    4e9,
    0.25,
    "NaN",
    "Infinity",
    "1e309",
    "\u00b2",
    "1_000",
    " 5 ",
    "0x10",
]
RAW = ["NaN", "Infinity", "-Infinity", "1e309", "-1e309", "9" * 400, "-0", "5e-324", "1E400", "-0.0"]
DATES = [
    "",
    "yesterday",
    "2024-13-45T99:99:99Z",
    "0000-01-01T00:00:00Z",
    "9999-12-31T23:59:59Z",
    "2024-06-01T09:00:00.000+25:00",
    "2024-06-01",
    "\u0662\u0660\u0662\u0664-06-01T09:00:00Z",
    1717232400,
    "1970-01-01T00:00:00Z",
    "2024-06-01T09:00:00.0000000000000000001Z",
]


def _raw(doc, container, key, rng: random.Random) -> bytes:
    """``doc`` as JSON with ``container[key]`` written as a raw token JSON does not allow."""
    container[key] = "@@RAW@@"
    return json.dumps(doc).replace('"@@RAW@@"', rng.choice(RAW), 1).encode()


def _later_entry(rng: random.Random, entries: list) -> dict:
    return entries[rng.randrange(min(3, len(entries) - 1), len(entries))] if len(entries) > 1 else entries[0]


def _leaf_places(node, out, depth=0):
    if isinstance(node, dict):
        for k, v in node.items():
            out.append((node, k))
            _leaf_places(v, out, depth + 1)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out.append((node, i))
            _leaf_places(v, out, depth + 1)
    return out


def mutate_har(rng: random.Random, doc: dict) -> tuple[str, bytes]:
    """(kind, bytes) of one HAR mutation at a place the first generator does not reach."""
    log = doc["log"]
    entries = log["entries"]
    pages = log.setdefault("pages", [])
    kind = rng.choice(
        [
            "later-value",
            "later-value",
            "later-raw",
            "pages",
            "initiator-stack",
            "many-entries",
            "content-text",
            "redirect-loop",
            "duplicate-ids",
            "dates",
            "headers-shape",
            "status",
            "http-version",
            "server-ip",
            "creator",
        ]
    )
    e = _later_entry(rng, entries)
    if kind in ("later-value", "later-raw"):
        places = [(c, k) for c, k in _leaf_places(e, []) if not isinstance(c[k], (dict, list)) or rng.random() < 0.2]
        container, key = rng.choice(places)
        if kind == "later-raw":
            return kind, _raw(doc, container, key, rng)
        container[key] = rng.choice(HOSTILE)
    elif kind == "pages":
        choice = rng.randrange(6)
        if choice == 0 and pages:
            pages.append(dict(pages[0]))  # a duplicate page id
        elif choice == 1:
            e["pageref"] = rng.choice(["nowhere", "", None, 5, ["page_1"]])
        elif choice == 2 and pages:
            pages[0].setdefault("pageTimings", {})["onContentLoad"] = "@@RAW@@"
            return kind, json.dumps(doc).replace('"@@RAW@@"', rng.choice(RAW), 1).encode()
        elif choice == 3:
            log["pages"] = rng.choice([None, {}, "page", [None], [[]], [{"id": {}}]])
        elif choice == 4 and pages:
            pages[0]["pageTimings"] = rng.choice([[], "fast", {"onLoad": HOSTILE[rng.randrange(len(HOSTILE))]}])
        else:
            pages.extend(
                {"id": f"p{i}", "startedDateTime": "2024-06-01T09:00:00Z", "title": "", "pageTimings": {}}
                for i in range(rng.choice([1000, 60_000]))
            )
    elif kind == "initiator-stack":
        depth = rng.choice([50, 3_000, 20_000])
        stack: dict = {"callFrames": []}
        node = stack
        for _ in range(depth if depth < 1000 else 0):
            node["parent"] = {"callFrames": [{"url": "https://x.example/a.js", "lineNumber": 1}]}
            node = node["parent"]
        if depth >= 1000:  # too deep for json.dumps: written as text
            e["_initiator"] = {"type": "script", "stack": "@@STACK@@"}
            nest = '{"parent":' * depth + "{}" + "}" * depth
            return kind, json.dumps(doc).replace('"@@STACK@@"', nest, 1).encode()
        frames = rng.choice([[{"url": 5, "lineNumber": "x"}], "frames", [None], [{"url": "https://[::1/x"}]])
        stack["callFrames"] = frames
        e["_initiator"] = {"type": rng.choice(["script", "parser", 7, None]), "stack": stack}
    elif kind == "many-entries":
        n = rng.choice([2_000, 20_000, 50_001, 120_000])
        base = entries[-1]
        # the same entry n times, its URL made unique (a page of n small resources); at most
        # about 150 MB of file (past the 128 MiB limit is refused by its size alone)
        text = json.dumps(base)
        n = min(n, (150 << 20) // len(text))
        url = base["request"]["url"]
        more = [text.replace(json.dumps(url), json.dumps(f"{url}?n={i}"), 1) for i in range(n)]
        start, end = json.dumps(doc).split('"entries": [', 1)
        return kind, (start + '"entries": [' + ",".join(more) + "," + end).encode()
    elif kind == "content-text":
        content = e["response"].setdefault("content", {})
        content["text"] = rng.choice(
            [
                "!!!not base64",
                "QUJD",
                "QUJD=",
                base64.b64encode(b"\xff" * 10).decode(),
                "A" * 1_000_001,
                "\ud800",
                5,
                None,
                ["x"],
            ]
        )
        content["encoding"] = rng.choice(["base64", "gzip", "", 5, None, "BASE64", "base64\u0000"])
        if rng.random() < 0.3:
            content["compression"] = rng.choice([-5, 1e300, "x", 2**70])
    elif kind == "redirect-loop":
        a, b = entries[0], _later_entry(rng, entries)
        a["response"]["status"] = b["response"]["status"] = rng.choice([301, 302, 307, 308])
        a["response"]["redirectURL"] = b["request"]["url"]
        b["response"]["redirectURL"] = a["request"]["url"]
        if rng.random() < 0.5:
            b["response"]["redirectURL"] = b["request"]["url"]  # to itself
    elif kind == "duplicate-ids":
        for x in entries:
            x[rng.choice(["_requestId", "connection", "_request_id", "_id"])] = rng.choice(["1", 1, "", None])
        if rng.random() < 0.5:
            entries.append(json.loads(json.dumps(entries[0])))  # the document twice
    elif kind == "dates":
        target = rng.choice([e, entries[0]] + (pages[:1] if pages else []))
        target["startedDateTime"] = rng.choice(DATES)
    elif kind == "headers-shape":
        side = e[rng.choice(["request", "response"])]
        side["headers"] = rng.choice(
            [
                None,
                {},
                "h",
                [["a", "b"]],
                [{"name": 5, "value": 6}],
                [{"name": "x"}],
                [{"name": "", "value": ""}],
                [{"name": "a\u0000b", "value": "\r\nx"}],
                [{"name": "x", "value": "v"}] * 20_000,
            ]
        )
    elif kind == "status":
        e["response"]["status"] = rng.choice([0, -1, 99, 600, 1000, 2**40, "200", 200.5, None, "\u0662\u0660\u0660"])
    elif kind == "http-version":
        e[rng.choice(["request", "response"])]["httpVersion"] = rng.choice(
            ["", "HTTP/9", "h3-29", "spdy", "http/2.0", "HTTP/1.1\u0000", 2, None, "h2c", "QUIC"]
        )
    elif kind == "server-ip":
        e["serverIPAddress"] = rng.choice(["[::1", "999.1.1.1", "::ffff:1.2.3.4", "", 5, "fe80::1%eth0", "x" * 300])
    else:
        log["creator"] = rng.choice([None, "x", {"name": 5}, {"name": "WebPagetest", "version": [1]}])
        log["version"] = rng.choice([1.2, "9.9", None, ""])
    return kind, json.dumps(doc).encode()


def mutate_qif(rng: random.Random, data: bytes) -> tuple[str, bytes]:
    """(kind, bytes) of one QIF mutation."""
    kind = rng.choice(
        ["comment", "upper", "empty-name", "nul", "utf8", "tab-value", "many-small", "blank-only", "pseudo-late"]
    )
    lines = data.split(b"\n")
    i = rng.randrange(len(lines))
    if kind == "comment":
        lines.insert(i, b"# " + rng.choice([b"a comment", b"\t\t", b"x" * 100_000]))
    elif kind == "upper":
        lines[i] = lines[i].upper()
    elif kind == "empty-name":
        lines.insert(i, b"\tvalue")
    elif kind == "nul":
        lines[i] = lines[i] + b"\x00"
    elif kind == "utf8":
        lines[i] = lines[i] + rng.choice([b"\xff\xfe", b"\xc3", b"\xed\xa0\x80"])
    elif kind == "tab-value":
        lines.insert(i, b"x-tab\ta\tb\tc")
    elif kind == "many-small":
        return kind, b"a\tb\n\n" * rng.choice([10_000, 49_999, 50_001])
    elif kind == "blank-only":
        return kind, rng.choice([b"", b"\n", b"\n\n\n", b"\t\n", b"#\n"])
    else:
        lines.insert(i, b":path\t/late")
    return kind, b"\n".join(lines)


def mutate_interop(rng: random.Random, data: bytes) -> tuple[str, bytes]:
    """(kind, bytes) of one mutation of an offline-interop file (records of u64 stream id,
    u32 length, block; RFC 9204 appendix offline format)."""
    records = []
    off = 0
    while off + 12 <= len(data):
        n = int.from_bytes(data[off + 8 : off + 12], "big")
        records.append(bytearray(data[off : off + 12 + n]))
        off += 12 + n
    kind = rng.choice(["later-length", "repeat-stream", "cut-block", "zero-stream", "encoder-garbage", "reorder"])
    if not records:
        return "empty", b""
    r = rng.choice(records)
    if kind == "later-length":
        r[8:12] = rng.choice(
            [
                len(r).to_bytes(4, "big"),
                (len(r) - 13).to_bytes(4, "big", signed=True) if len(r) > 13 else b"\x00\x00\x00\x01",
                b"\x7f\xff\xff\xff",
            ]
        )
    elif kind == "repeat-stream":
        for x in records:
            x[0:8] = records[0][0:8]
    elif kind == "cut-block":
        return kind, b"".join(records[: records.index(r)]) + bytes(r[: 12 + max(0, (len(r) - 12) // 2)])
    elif kind == "zero-stream":
        r[0:8] = b"\x00" * 8  # stream 0: the encoder stream
        r[12:] = bytes(rng.randrange(256) for _ in range(len(r) - 12))
    elif kind == "encoder-garbage":
        blob = bytes(rng.randrange(256) for _ in range(rng.choice([1, 64, 4096])))
        records.insert(0, bytearray(b"\x00" * 8 + len(blob).to_bytes(4, "big") + blob))
    else:
        rng.shuffle(records)
    return kind, b"".join(bytes(x) for x in records)


GRID_VALUES = [
    "nan",
    "inf",
    "-inf",
    "1e309",
    '"1e309ms"',
    '"nanms"',
    '"\u0661\u0660ms"',
    "[]",
    "{}",
    "true",
    '"5e-324s"',
    '"-0ms"',
    '""',
    "[[1, 2]]",
    "9" * 40,
    '"1e309mbit"',
    '"0"',
    "-1",
    '"\uff11mbit"',
]


def grid_toml(rng: random.Random, study: str, flags: list[str]) -> tuple[str, bytes]:
    """(kind, bytes) of a mutated batch grid file for ``study`` (its flags in ``flags``)."""
    kind = rng.choice(
        [
            "value",
            "value",
            "huge-array",
            "unknown-key",
            "deep",
            "truncated",
            "not-utf8",
            "table",
            "duplicate-key",
            "million-points",
        ]
    )
    flag = rng.choice(flags)
    key = flag.lstrip("-").replace("-", "_") if rng.random() < 0.5 else flag.lstrip("-")
    if kind == "value":
        return kind, f"{key} = [{rng.choice(GRID_VALUES)}]\n".encode()
    if kind == "huge-array":
        return kind, f"{key} = [{', '.join(['1'] * rng.choice([10_000, 200_000]))}]\n".encode()
    if kind == "unknown-key":
        return kind, rng.choice(
            [
                "no_such_flag = [1]\n",
                "trace = ['x']\n",
                "out = ['/tmp']\n",
                "seed = [1, 2]\n",
                "json = [true]\n",
                "[study]\nrtt = ['10ms']\n",
            ]
        ).encode()
    if kind == "deep":
        depth = rng.choice([100, 5_000])
        return kind, f"{key} = {'[' * depth}1{']' * depth}\n".encode()
    if kind == "truncated":
        text = f"{key} = ['10ms', '20ms']\n"
        return kind, text[: rng.randrange(1, len(text))].encode()
    if kind == "not-utf8":
        return kind, f"{key} = ['10ms']\n".encode() + b"\xff\xfe"
    if kind == "table":
        return kind, f"[{key}]\nx = 1\n".encode()
    if kind == "duplicate-key":
        return kind, f"{key} = ['1']\n{key} = ['2']\n".encode()
    other = rng.choice([f for f in flags if f != flag] or flags).lstrip("-")
    lines = [f"{other} = [{', '.join(['1'] * 1000)}]", f"{key} = [{', '.join(['1'] * 1000)}]"]
    return kind, ("\n".join(lines) + "\n").encode()


def topology(rng: random.Random, which: str, suffix: str) -> tuple[str, bytes]:
    """(kind, bytes) of a mutated ``--dns`` or ``--cert`` table (JSON or TOML)."""
    host = rng.choice(
        [
            "www.news-site.example",
            "static.news-site.example",
            "a" * 300,
            "[::1",
            "",
            "\u0661.example",
            "*.example",
            "a..b",
            "x\u0000y",
        ]
    )
    dns_values = [
        "192.0.2.1",
        "::1",
        "999.1.1.1",
        "",
        [],
        [None],
        5,
        None,
        {"a": 1},
        ["192.0.2.1"] * 100_000,
        "1e309",
        float("nan"),
    ]
    cert_values = [
        ["*.news-site.example"],
        "x",
        [5],
        {"san": "x"},
        {"san": [], "origin": [None]},
        {"san": ["a"], "h3": "yes"},
        [],
        ["*"],
        ["**.example"],
        ["a" * 300],
    ]
    value = rng.choice(dns_values if which == "dns" else cert_values)
    kind = rng.choice(["value", "value", "deep", "not-table", "truncated"])
    if kind == "deep":
        depth = rng.choice([500, 20_000])
        text = (
            ("{" + json.dumps(host) + ":" + "[" * depth + "]" * depth + "}")
            if suffix == ".json"
            else (f'"h" = {"[" * depth}{"]" * depth}\n')
        )
        return kind, text.encode()
    if kind == "not-table":
        return kind, rng.choice([b"[1, 2]", b"5", b"null", b'"x"', b""]) if suffix == ".json" else b"= 1\n"
    if suffix == ".json":
        text = json.dumps({host: value}, allow_nan=True)
    else:
        text = f"{json.dumps(host)} = {json.dumps(value) if not isinstance(value, float) else 'nan'}\n"
        text = text.replace("null", '""')
    if kind == "truncated":
        text = text[: rng.randrange(1, max(2, len(text)))]
    return kind, text.encode()


def notebook(rng: random.Random, source: dict) -> tuple[str, bytes]:
    """(kind, bytes) of a broken notebook for ``slides --no-execute``."""
    nb = json.loads(json.dumps(source))
    kind = rng.choice(
        [
            "not-json",
            "nbformat",
            "cells",
            "cell-shape",
            "figure-base64",
            "deep",
            "source-type",
            "outputs-shape",
            "huge-markdown",
            "metadata",
        ]
    )
    cells = nb.get("cells", [])
    if kind == "not-json":
        return kind, rng.choice([b"", b"{", b"\xff\xfe", b"[]", b"null", json.dumps(nb).encode()[:500]])
    if kind == "nbformat":
        nb["nbformat"] = rng.choice([3, 5, "4", None, 2**70, -1])
    elif kind == "cells":
        nb["cells"] = rng.choice([None, {}, "cells", [None], [[]], [5]])
    elif kind == "cell-shape" and cells:
        c = rng.choice(cells)
        c[rng.choice(["cell_type", "metadata", "source"])] = rng.choice([None, 5, "raw", {}, ["x", 5]])
    elif kind == "figure-base64":
        cells.append(
            {
                "cell_type": "code",
                "execution_count": 1,
                "metadata": {},
                "source": "x",
                "outputs": [
                    {
                        "output_type": "display_data",
                        "metadata": {},
                        "data": {
                            rng.choice(["image/png", "image/svg+xml", "image/jpeg"]): rng.choice(
                                ["!!!", "iVBORw0KGgo=", "", "A" * 5, 5, ["x"]]
                            )
                        },
                    }
                ],
            }
        )
    elif kind == "deep":
        depth = rng.choice([200, 20_000])
        text = json.dumps(nb)
        deep = '"metadata": {"deep": ' + "[" * depth + "]" * depth + ", "
        return kind, text.replace('"metadata": {', deep, 1).encode()
    elif kind == "source-type" and cells:
        rng.choice(cells)["source"] = rng.choice([5, None, [1, 2], {"a": "b"}, "\ud800"])
    elif kind == "outputs-shape":
        cells.append(
            {
                "cell_type": "code",
                "execution_count": None,
                "metadata": {"tags": rng.choice(["show", [5]])},
                "source": "1",
                "outputs": rng.choice(
                    [
                        None,
                        "x",
                        [None],
                        [{"output_type": "nope"}],
                        [{"output_type": "stream", "text": 5}],
                        [{"output_type": "error"}],
                    ]
                ),
            }
        )
    elif kind == "huge-markdown":
        cells.append(
            {
                "cell_type": "markdown",
                "metadata": {},
                "source": rng.choice(
                    [
                        "# " + "x" * 2_000_000,
                        "#" * 100_000,
                        "![](http://example.com/a.png)",
                        "<img src='https://e.example/x'>",
                        "$$" * 10_000,
                    ]
                ),
            }
        )
    else:
        nb["metadata"] = rng.choice([None, [], {"kernelspec": 5}, {"language_info": {"name": None}}])
    return kind, json.dumps(nb).encode()
