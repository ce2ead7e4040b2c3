"""The schedulers' choices as qlog HTTP/3 events (``simulator.http.priority_qlog``,
draft-ietf-quic-qlog-h3-events): the event names and fields, the Priority field values of
RFC 9218 section 5, the PRIORITY_UPDATE of section 7, and a load that logs sends the same
bytes in the same order as one that does not."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from simulator.browser import page_graph
from simulator.cli import main
from simulator.http.priority import PrioritySignal
from simulator.http.priority_qlog import PriorityQlog, data_frames, priority_field_value
from simulator.studies import priorities as pr
from simulator.traces import load

PAGE = "traces/synthetic-page.har"
NAMES = {"http3:priority_updated", "http3:frame_created", "http3:frame_parsed"}


@pytest.fixture(scope="module")
def graph():
    return page_graph(load(PAGE))


def _run(graph, scheduler: str, qlog=None):
    params = pr.PrioritiesParams(schedulers=(scheduler,), browsers=("chromium",), protocol="h3", qlog=qlog)
    return pr.run(graph, params)


def test_rfc9218_s5_priority_field_values_of_the_signals():
    assert priority_field_value(PrioritySignal(urgency=0, incremental=True)) == "u=0, i"
    assert priority_field_value(PrioritySignal(urgency=5)) == "u=5"


def test_qlog_h3_events_names_and_fields_rfc9218_s7(graph):
    """Every event is one of the http3 schema's (draft-ietf-quic-qlog-h3-events); each response
    takes its signals (``priority_updated``) before its first DATA frame; the LCP image's
    PRIORITY_UPDATE (RFC 9218 section 7) is parsed on the client's control stream and changes
    that stream's priority from its old value to the new one."""
    qlog = PriorityQlog()
    _run(graph, "rfc9218", qlog)
    doc = json.loads(json.dumps(qlog.to_dict()))
    assert doc["file_schema"] == "urn:ietf:params:qlog:file:contained"
    updates = []
    for trace in doc["traces"]:
        assert trace["event_schemas"] == ["urn:ietf:params:qlog:events:http3"]
        events = trace["events"]
        assert {e["name"] for e in events} <= NAMES
        assert [e["time"] for e in events] == sorted(e["time"] for e in events)
        signalled = set()
        for e in events:
            data = e["data"]
            if e["name"] == "http3:priority_updated":
                assert data["trigger"] == "client_signal_received" and data["new"].startswith("u=")
                signalled.add(data["stream_id"])
            elif e["name"] == "http3:frame_created":
                assert data["frame"]["frame_type"] == "data" and data["frame"]["raw"]["payload_length"] > 0
                assert data["stream_id"] in signalled and data["stream_id"] % 4 == 0  # client bidi streams
            else:
                assert data["stream_id"] == 2 and data["frame"]["frame_type"] == "priority_update"
                updates.append((trace["title"], data["frame"]))
                after = events[events.index(e) + 1]
                assert after["name"] == "http3:priority_updated"
                assert after["data"]["stream_id"] == data["frame"]["stream_id"]
                assert after["data"]["new"] == data["frame"]["priority_field_value"] == "u=1, i"
                assert after["data"]["old"] != after["data"]["new"]
    assert len(updates) == 1  # Chromium boosts one LCP image


def test_logging_leaves_the_load_unchanged_rfc9218_s4(graph):
    """The logging writer writes the same chunks in the same order: every resource time equal."""
    qlog = PriorityQlog()
    logged = _run(graph, "rfc9218", qlog).resources
    plain = _run(graph, "rfc9218").resources
    pd.testing.assert_frame_equal(logged, plain)


def test_data_frames_give_the_per_stream_byte_order(graph):
    """``data_frames`` reads the order the scheduler chose: under ``fifo`` each stream's frames
    form one run; under ``rr`` streams of one connection interleave; the same number of
    responses either way (not the same bytes per stream id: the order of discovery moves, and
    with it the header blocks' sizes under the dynamic table, RFC 9204 section 3.2)."""
    runs = {}
    for scheduler in ("fifo", "rr"):
        qlog = PriorityQlog()
        _run(graph, scheduler, qlog)
        trace = max(qlog.to_dict()["traces"], key=lambda t: len(t["events"]))
        runs[scheduler] = data_frames(trace)
    fifo_order = [sid for i, (sid, _) in enumerate(runs["fifo"]) if i == 0 or runs["fifo"][i - 1][0] != sid]
    assert len(fifo_order) == len(set(fifo_order))
    rr_order = [sid for i, (sid, _) in enumerate(runs["rr"]) if i == 0 or runs["rr"][i - 1][0] != sid]
    assert len(rr_order) > len(set(rr_order))
    assert len(set(fifo_order)) == len(set(rr_order))


def test_data_frames_read_aioquics_qlog_too():
    """aioquic names its events ``http:frame_created`` with the frame's ``length`` beside it."""
    trace = {
        "events": [
            {"name": "http:frame_created", "data": {"stream_id": 0, "length": 10, "frame": {"frame_type": "headers"}}},
            {"name": "http:frame_created", "data": {"stream_id": 0, "length": 700, "frame": {"frame_type": "data"}}},
        ]
    }
    assert data_frames(trace) == [(0, 700)]


def test_cli_qlog_writes_the_file_and_needs_h3(tmp_path, capsys):
    path = tmp_path / "run.qlog"
    assert (
        main(
            [
                "priorities",
                "--trace",
                PAGE,
                "--scheduler",
                "rfc9218",
                "--browser",
                "chromium",
                "--protocol",
                "h3",
                "--qlog",
                str(path),
                "--json",
            ]
        )
        == 0
    )
    doc = json.loads(path.read_text())
    assert doc["traces"] and doc["traces"][0]["title"].startswith("chromium rfc9218 ")
    capsys.readouterr()
    assert main(["priorities", "--trace", PAGE, "--qlog", str(tmp_path / "h2.qlog")]) == 2
    err = capsys.readouterr().err.strip()
    assert "--qlog needs --protocol h3" in err and "\n" not in err
