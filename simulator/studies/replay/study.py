"""The replay study: a trace's exchanges over a real stack (``stacks.replay``: h2 or
aioquic HTTP/3) or over that stack's transport model (``http.model_replay``), in
virtual time; one row per exchange and a summary."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import ClassVar

import pandas as pd

from ...errors import InputError
from ...net.conditions import handing_over
from ...stacks.common import Result, StackParams
from ...traces.model import Trace
from ..base import StudyParams, StudyResult

__all__ = ["ReplayParams", "ReplayResult", "run"]


@dataclass(frozen=True)
class ReplayParams(StackParams, StudyParams):
    """The stack's parameters, and whether to replay over its transport model instead."""

    model: bool = False  # h2: the TCP model, h3: the QUIC model (``http.model_replay``)
    # What the real stack writes besides its result (``stacks.replay.run``'s options): files, not parameters.
    qlog_dir: str | None = None  # qlog files, simulated time (h3)
    pcap_path: str | None = None  # every simulated packet
    keylog_path: str | None = None  # the TLS secrets, SSLKEYLOGFILE format

    NOT_PARAMETERS: ClassVar[tuple[str, ...]] = ("qlog_dir", "pcap_path", "keylog_path")

    def stack_params(self) -> StackParams:
        """The drivers' own parameters (without ``model``)."""
        with handing_over(self.network):
            return StackParams(**{f.name: getattr(self, f.name) for f in fields(StackParams)})

    def to_dict(self) -> dict:
        """Every parameter (the output files left out)."""
        return StudyParams.to_dict(self)

    def outputs(self) -> dict:
        """The real stack's output options (``stacks.replay.run``), those given."""
        return {name: getattr(self, name) for name in self.NOT_PARAMETERS if getattr(self, name) is not None}


@dataclass
class ReplayResult(Result, StudyResult):
    """One row per exchange (and pushed response), the totals in ``summary``."""

    JSON_INDENT = None

    def to_dict(self) -> dict:
        """The replay's own JSON form (``Result.to_json_dict``)."""
        return self.to_json_dict()

    def tables(self) -> dict[str, pd.DataFrame]:
        """The summary as one row (None as NaN) and the exchanges, without the parameter columns the batch adds."""
        # The row carries `stack` and `model` as parameters: the summary's own "stack" label
        # ("h3", "quic-model", ...) would only repeat them.  None (nothing completed) -> NaN,
        # so a column keeps one type across jobs.  The replay copies its parameters into
        # every exchange row; the batch adds them all (with the seed), so they are dropped.
        summary = {k: (math.nan if v is None else v) for k, v in self.summary.items() if k != "stack"}
        params = {f.name for f in fields(StackParams)}
        exchanges = self.exchanges.drop(columns=[c for c in self.exchanges.columns if c in params or c == "stack"])
        return {"summary": pd.DataFrame([summary]), "exchanges": exchanges.reset_index(drop=True)}


def run(trace: Trace, params: ReplayParams | None = None, *, progress: bool = False) -> ReplayResult:
    """Replay ``trace`` over ``params.stack`` (or its transport model with ``params.model``).
    The output files of ``params`` (``qlog_dir``, ``pcap_path``, ``keylog_path``) go to the
    real stack's ``stacks.replay.run``; the model writes none."""
    from ...http import model_replay
    from ...stacks import replay

    params = params or ReplayParams()
    driver = model_replay if params.model else replay
    if params.model and params.outputs():
        raise InputError(f"{next(iter(params.outputs()))} records a real stack's packets: not with model=True")
    result = driver.run(trace, params.stack_params(), **({} if params.model else params.outputs()))
    return ReplayResult(**{f.name: getattr(result, f.name) for f in fields(Result)})
