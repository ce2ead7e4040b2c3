"""The same page and scheduler on the real h2 stack and on the model: the order in which the
server sends the responses' data.  Written by hand.

``data_orders`` loads a page twice with one browser profile and one scheduler: on the
page-load model (``http.network.ModelNetwork``, its writer logging every chunk it writes,
``priority_qlog.QlogScheduledWriter``) and on the real ``h2`` stack with the scheduled
server (``http.priority_stacks.ScheduledH2Server``, whose DATA frames are read back from
its bytes).  Per connection it gives the resources whose body bytes each DATA frame (real)
or chunk (model) carries, in the order the server wrote them.  Responses without a body
are left out (they have HEADERS only).

The measure (``compare_orders``): each sequence with runs of one resource collapsed into one
entry (``collapse``): the order in which the server switches between responses.  Without
loss the two are the same sequence for rfc9218, fifo, rr and tree on a small page (tests);
with loss, with TLS and with a PRIORITY_UPDATE the runs can part (docs/studies/priorities.md
says where and why), and three closeness figures are reported: ``same_position_share``
(entries equal at the same place, over the longer sequence: one shift costs every later
place), ``edit_similarity`` (1 - Levenshtein distance over the longer length: a shift costs
two edits) and ``completion_tau`` (Kendall's tau-b between the orders in which the
responses' last DATA frames were written).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import groupby

from ...http.priority import PriorityPlan
from ...http.priority_qlog import QlogTrace, data_frames
from ...http.priority_stacks import DATA_FRAME
from .compare import kendall_tau_b
from .study import PrioritiesParams, load_with

__all__ = ["data_orders", "collapse", "compare_orders", "completion_order", "edit_similarity"]


class _ChunkLog:
    """Collects the model's chunks per connection (a ``QlogTrace`` each, by connection key)."""

    def __init__(self) -> None:
        self.by_key: dict[str, QlogTrace] = {}
        self.label = ""

    def trace(self, connection: str, clock) -> QlogTrace:
        t = self.by_key[connection] = QlogTrace(connection, clock)
        return t


@dataclass(frozen=True)
class _ChunkPlan(PriorityPlan):
    """``PriorityPlan`` whose writers log their chunks over TCP too (qlog events are HTTP/3's;
    here they are only read back, never written out)."""

    def qlog_trace(self, connection: str, sim, transport: str):
        return self.qlog.trace(connection, lambda: sim.now)


def collapse(seq) -> list:
    """``seq`` with every run of equal entries made one."""
    return [k for k, _ in groupby(seq)]


def completion_order(seq) -> list:
    """The entries of ``seq`` ordered by their last occurrence (a response's last DATA frame)."""
    last = {k: i for i, k in enumerate(seq)}
    return sorted(last, key=last.get)


def edit_similarity(a, b) -> float:
    """1 minus the Levenshtein distance between ``a`` and ``b`` over the longer length: one
    response sent a turn early costs two edits, not every later place."""
    if not a and not b:
        return 1.0
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i]
        for j, y in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return 1.0 - prev[-1] / max(len(a), len(b))


def data_orders(graph, params: PrioritiesParams, browser: str, scheduler: str) -> dict:
    """Per connection key, ``{"model": [...], "real": [...]}``: the resource of every
    chunk (model) and DATA frame (real h2) with body bytes, in the order written."""
    model_params = replace(params, backend="model", qlog=None)
    real_params = replace(params, backend="stacks", qlog=None)
    nets: dict[str, object] = {}
    log = _ChunkLog()
    load_with(
        graph,
        model_params,
        browser,
        scheduler,
        qlog=log,
        plan_cls=_ChunkPlan,
        on_network=lambda n: nets.__setitem__("model", n),
    )
    load_with(graph, real_params, browser, scheduler, on_network=lambda n: nets.__setitem__("real", n))
    has_body = {r.index for r in graph.resources if r.body_bytes > 0}
    out: dict[str, dict] = {}
    for key, conn in nets["model"].conns.items():
        trace = log.by_key.get(key)
        frames = data_frames(trace.to_dict()) if trace is not None else []
        index = {sid: spec.index for sid, spec in conn.requests.items()}
        out.setdefault(key, {"model": [], "real": []})["model"] = [
            index[sid] for sid, _ in frames if index.get(sid) in has_body
        ]
    for key, session in nets["real"].sessions.items():
        index = {sid: spec.index for sid, (spec, _) in session.client_rows.items() if spec is not None}
        out.setdefault(key, {"model": [], "real": []})["real"] = [
            index[sid]
            for sid, ftype, n in session.server.response_frames
            if ftype == DATA_FRAME and n and index.get(sid) in has_body
        ]
    return out


def compare_orders(orders: dict) -> dict:
    """The measure of the module docstring over every connection: ``identical`` (the
    collapsed sequences equal on every connection), ``same_position_share``,
    ``completion_tau``, and the collapsed lengths."""
    same = total = edits = 0
    model_all, real_all = [], []
    identical = True
    for key in sorted(orders):
        m, r = collapse(orders[key]["model"]), collapse(orders[key]["real"])
        identical &= m == r
        same += sum(a == b for a, b in zip(m, r))
        total += max(len(m), len(r))
        edits += (1.0 - edit_similarity(m, r)) * max(len(m), len(r))
        model_all += [(key, i) for i in completion_order(orders[key]["model"])]
        real_all += [(key, i) for i in completion_order(orders[key]["real"])]
    common = [x for x in model_all if x in set(real_all)]
    real_rank = {x: i for i, x in enumerate(real_all)}
    tau = kendall_tau_b(range(len(common)), [real_rank[x] for x in common]) if len(common) > 1 else 1.0
    return {
        "identical": identical,
        "same_position_share": same / total if total else 1.0,
        "edit_similarity": 1.0 - edits / total if total else 1.0,
        "completion_tau": tau,
        "model_switches": sum(len(collapse(o["model"])) for o in orders.values()),
        "real_switches": sum(len(collapse(o["real"])) for o in orders.values()),
    }
