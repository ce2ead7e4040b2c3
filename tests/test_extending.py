"""``docs/extending.md``'s worked examples, run as written: every ``# file:`` block becomes a
module of a scratch package (``wbext`` standing for ``simulator``), every ``# register in``
line is applied to the registry it names, and each extension is then used the way the page
says: a study through the CLI and the batch runner, a compression scheme in the HOL study,
a push policy in the push study, a receiver strategy in the demux study."""

from __future__ import annotations

import importlib
import json
import re
import sys
from pathlib import Path

import pytest

from simulator import batch
from simulator.cli import main
from simulator.compression import factory
from simulator.http import priority
from simulator.studies import registry
from simulator.studies.demux import receivers
from simulator.browser import server as plan

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "extending.md"
PAGE = str(ROOT / "traces" / "synthetic-page.har")
REGISTRIES = {
    ("simulator/studies/registry.py", "STUDIES"): registry.STUDIES,
    ("simulator/compression/factory.py", "ADDED_SCHEMES"): factory.ADDED_SCHEMES,
    ("simulator/browser/server.py", "POLICIES"): plan.POLICIES,
    ("simulator/studies/demux/receivers.py", "RECEIVERS"): receivers.RECEIVERS,
    ("simulator/http/priority.py", "ADDED_SCHEDULERS"): priority.ADDED_SCHEDULERS,
}


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)


@pytest.fixture
def extended(tmp_path, monkeypatch):
    """The page's files in a scratch package on ``sys.path`` and its registration lines applied."""
    registered = []
    for block in _blocks():
        first, _, body = block.partition("\n")
        if first.startswith("# file: simulator/"):
            path = tmp_path / "wbext" / first[len("# file: simulator/") :]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body, encoding="utf-8")
        elif first.startswith("# register in "):
            target = tuple(first[len("# register in ") :].split())
            name, module = re.fullmatch(r'"([^"]+)": "([^"]+)",\s*', body).groups()
            assert module.startswith("simulator."), module
            monkeypatch.setitem(REGISTRIES[target], name, "wbext." + module[len("simulator.") :])
            registered.append(name)
    for folder in [tmp_path / "wbext", *(p for p in (tmp_path / "wbext").rglob("*") if p.is_dir())]:
        (folder / "__init__.py").touch(exist_ok=True)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield registered
    for name in [m for m in sys.modules if m == "wbext" or m.startswith("wbext.")]:
        del sys.modules[name]
    importlib.invalidate_caches()


def test_the_page_has_five_examples_each_one_registration_line(extended):
    assert extended == ["setup", "deflate-block", "preconnect", "copy-out", "newest-first"]


def test_the_added_study_is_a_command_and_a_batch_study_rfc9293_rfc8446_rfc9001(extended, capsys, tmp_path):
    """A fresh connection's first response: h2 over TLS 1.3 after 3 RTT (TCP handshake, then
    TLS 1.3's full handshake), cleartext h2 and HTTP/3 after 2, plus serialisation."""
    assert main(["setup", "--rtt", "50ms", "--json"]) == 0
    rows = {r["setup"]: r for r in json.loads(capsys.readouterr().out)["summary"]}
    for setup, rtts in {"h2 + TLS 1.3": 3, "h2 cleartext": 2, "HTTP/3": 2}.items():
        assert rtts <= rows[setup]["rtts"] <= rtts + 0.1, rows[setup]
    assert main(["setup", "--rtt", "slow"]) == 2
    report = batch.run_batch(
        "setup", None, {"rtt": ["20ms", "200ms"]}, seeds=1, out=tmp_path / "res", workers=0, progress=False
    )
    assert (report.jobs, report.ok) == (2, 2)
    df = batch.load(tmp_path / "res")
    assert sorted(set(df["rtt_s"])) == [0.02, 0.2] and len(df) == 6


def test_the_added_scheme_never_blocks_in_the_hol_study_rfc9204_section2_1_2(extended, capsys):
    """DEFLATE per block shares no state between blocks, so no block waits for another: no
    head-of-line blocking over QUIC, where HPACK's in-order decoding makes blocks wait; the
    blocks round-trip (the HOL study checks every decoded list) and cost more bytes than
    HPACK's shared table."""
    assert (
        main(
            [
                "hol",
                "--trace",
                PAGE,
                "--scheme",
                "hpack,deflate-block",
                "--transport",
                "quic",
                "--loss",
                "0.02",
                "--json",
            ]
        )
        == 0
    )
    schemes = json.loads(capsys.readouterr().out)["schemes"]
    assert schemes["deflate-block"]["blocked"] == 0 and schemes["deflate-block"]["hol_total_ms"] == 0
    assert schemes["hpack"]["blocked"] > 0
    assert schemes["deflate-block"]["header_bytes"] > schemes["hpack"]["header_bytes"]


def test_the_added_push_policy_preconnects_and_helps_rfc8297(extended, capsys):
    """The 103 carries rel=preconnect Links only; the render-blocking resources are ready
    sooner than with no help (their connections open in the think time) and no sooner
    than with full hints (which also preload them)."""
    from simulator.studies import push
    from simulator.traces import load

    graph_trace = load(PAGE)
    params = push.PushParams(policies=("none", "hints", "preconnect"))
    result = push.run(graph_trace, params)
    s = result.summary
    assert s.loc["preconnect", "hints_sent"] > 0 and s.loc["preconnect", "hinted_fetches"] == 0
    assert s.loc["preconnect", "preconnects"] > 0
    assert (
        s.loc["hints", "render_blocking_s"]
        <= s.loc["preconnect", "render_blocking_s"]
        < s.loc["none", "render_blocking_s"]
    )
    assert main(["push", "--trace", PAGE, "--policy", "none,preconnect", "--json"]) == 0


def test_the_added_receiver_copies_what_direct_does_not(extended):
    """Same byte stream, same frames and dispatches; copy-out copies every payload byte, direct
    none.  The real part runs both over a socket pair, its consumers CRC every byte and the
    study checks each stream's checksum (a corrupted or reordered stream raises)."""
    from simulator.studies import demux

    params = demux.DemuxParams(
        streams=4,
        stream_bytes=256 * 1024,
        window_bytes=64 * 1024,
        part="both",
        strategies=("direct", "copy-out"),
        interleavings=("runs",),
        work="crc32",
        rtts_s=(0.01,),
        repeat=1,
    )
    summary = demux.run(None, params).summary
    assert set(summary["part"]) == {"model", "real"}
    s = summary[summary["part"] == "model"].set_index("strategy")
    assert s.loc["copy-out", "copied_bytes"] == s.loc["copy-out", "bytes"] == 4 * 256 * 1024
    assert s.loc["direct", "copied_bytes"] == 0
    assert s.loc["copy-out", "dispatches"] == s.loc["direct", "dispatches"] == s.loc["direct", "data_frames"]


def test_the_added_scheduler_serves_the_newest_request_of_an_urgency_first_rfc9218_s4(extended, capsys):
    from simulator.http.priority import PrioritySignal, make_scheduler

    s = make_scheduler("newest-first")
    for order, sid in enumerate((1, 3, 5), 1):
        s.add(sid, PrioritySignal(urgency=3), order)
    s.add(7, PrioritySignal(urgency=4), 4)
    assert s.pick() == 5
    assert (
        main(["priorities", "--trace", PAGE, "--scheduler", "rfc9218,newest-first", "--browser", "chromium", "--json"])
        == 0
    )
    rows = json.loads(capsys.readouterr().out)["schedulers"]
    assert [r["scheduler"] for r in rows] == ["rfc9218", "newest-first"]
