"""Real HAR files, mutated (fields dropped, wrong types, -1, huge numbers, unicode, cut short),
through the trace import and the studies: a result, or exit status 2 with one line that
names the file; never a traceback, never a hang (hypothesis drives the mutations)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simulator.cli import main

ROOT = Path(__file__).resolve().parents[1]
SOURCES = [
    ROOT / "traces" / "har-real" / "sitespeed_browsertime-recalculate-style.har",
    ROOT / "traces" / "har-real" / "http_http2-firefox.har",
    ROOT / "traces" / "har-real" / "redirect_www.sitespeed.io-redirecting-to-https.har",
]
DOCS = {p.name: json.loads(p.read_text()) for p in SOURCES}
REPLACEMENTS = [
    None,
    -1,
    0,
    2**63,
    -(2**63),
    1e308,
    float("nan"),
    "",
    "\u00e9\u4e2d\U0001f600\x00",
    "-1",
    [],
    {},
    True,
    "1.1",
    "not a date",
]


def _paths(node, prefix=()):
    """Every place in the document (dict keys and list items), with the page and the first entries only."""
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for k, v in node.items():
            if prefix == ("log", "entries") or (
                len(prefix) >= 2
                and prefix[:2] == ("log", "entries")
                and isinstance(prefix[2] if len(prefix) > 2 else 0, int)
                and prefix[2] > 3
            ):
                continue
            out += _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node[:4]):
            out += _paths(v, prefix + (i,))
    return out


# Not the whole log (that is one refusal, tested elsewhere): the places inside it.
PATHS = {name: [p for p in _paths(doc) if len(p) > 1] for name, doc in DOCS.items()}


@st.composite
def mutated_har(draw):
    name = draw(st.sampled_from(sorted(DOCS)))
    doc = copy.deepcopy(DOCS[name])
    for _ in range(draw(st.integers(1, 4))):
        path = draw(st.sampled_from(PATHS[name]))
        parent = doc
        try:
            for key in path[:-1]:
                parent = parent[key]
            op = draw(st.sampled_from(["drop", "replace"]))
            if op == "drop" and isinstance(parent, dict):
                parent.pop(path[-1], None)
            elif op == "drop" and isinstance(parent, list) and path[-1] < len(parent):
                del parent[path[-1]]
            else:
                parent[path[-1]] = draw(st.sampled_from(REPLACEMENTS))
        except (KeyError, IndexError, TypeError):
            continue  # an earlier mutation removed the way there
    text = json.dumps(doc, allow_nan=True).encode("utf-8", "surrogatepass")
    if draw(st.booleans()) and draw(st.integers(0, 9)) == 0:
        text = text[: draw(st.integers(0, len(text) - 1))]  # cut short
    return text


STUDIES = [
    ["trace", "info"],
    ["push", "--policy", "none,hints", "--rtt", "100ms", "--trace"],
    ["hol", "--transport", "quic", "--loss", "0.01", "--trace"],
    ["fidelity"],
]


@settings(max_examples=40, deadline=30000, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=mutated_har(), study=st.sampled_from(range(len(STUDIES))))
def test_mutated_real_hars_give_a_result_or_one_line(tmp_path_factory, data, study):
    path = tmp_path_factory.mktemp("fuzz") / "mutated.har"
    path.write_bytes(data)
    args = [*STUDIES[study], str(path)]
    import io
    from contextlib import redirect_stderr, redirect_stdout

    err, out = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        status = main(args)
    assert status in (0, 2), (args, status)
    if status == 2:
        lines = err.getvalue().strip().splitlines()
        assert len(lines) == 1 and str(path) in lines[0], err.getvalue()


@pytest.mark.parametrize("value", [-1, None])
def test_every_size_and_time_field_takes_not_known(value):
    """The size and timing fields every producer fills its own way: HAR 1.2's "not available"
    (-1) and a missing value are read as unknown, never a crash."""
    from simulator.traces.har import parse_har
    from simulator.traces.pagegraph import page_graph

    doc = _odd(value)
    g = page_graph(parse_har(doc, path="odd.har"))
    assert len(g) == len(doc["log"]["entries"]) and all(r.body_bytes >= 0 for r in g.resources)


@pytest.mark.parametrize("value", ["x", "\u0661\u0662", 10**30, 1e308, float("nan"), float("inf"), [], {}, True])
def test_a_size_or_time_that_is_no_plain_number_is_one_line(value):
    """RFC 8259 section 6 numbers, finite and within simulator.traces.limits: a string that
    is not ASCII digits (Python's int() takes Arabic-Indic ones), a list, an object, a
    boolean, a non-finite or a huge value is refused once, at the import, in one line
    naming the file, the entry and the field; no study meets it."""
    from simulator.errors import InputError
    from simulator.traces.har import parse_har

    with pytest.raises(InputError) as err:
        parse_har(_odd(value), path="odd.har")
    message = str(err.value)
    assert "\n" not in message and message.startswith("odd.har: entry ")
    assert any(f in message for f in ("bodySize", "_transferSize", "content.size", "timings."))


def _odd(value) -> dict:
    doc = copy.deepcopy(DOCS[SOURCES[0].name])
    for e in doc["log"]["entries"]:
        e["response"]["bodySize"] = value
        e["response"]["_transferSize"] = value
        e["response"]["content"]["size"] = value
        e["timings"] = {k: value for k in ("blocked", "dns", "connect", "ssl", "send", "wait", "receive")}
        e["_priority"] = value
    doc["log"]["pages"][0]["pageTimings"]["onLoad"] = value
    return doc
