"""The command-line flags every study that loads one page of a HAR shares (push,
coalescing): the page, the server's think times, the browser cache, the model server's
response order and the seeds to take medians over."""

from __future__ import annotations

import argparse

from .. import argtypes
from ..units import parse_duration
from .cache import parse_cache

__all__ = ["add_page_flags", "think_from_args"]


def add_page_flags(p: argparse.ArgumentParser) -> None:
    """``--trace`` (a HAR), ``--page``, ``--think``, ``--asset-think``, ``--cache``,
    ``--scheduler`` and ``--seeds``."""
    p.add_argument("--trace", required=True, help="HAR of a page load (Chrome's _initiator gives the graph)")
    p.add_argument("--page", help="page id in the HAR (default: the first page)")
    p.add_argument(
        "--think",
        default="trace",
        type=argtypes.duration_or("trace"),
        help="document think time, or 'trace' (its HAR wait)",
    )
    p.add_argument("--asset-think", default="0ms", type=argtypes.duration, help="think time of every sub-resource")
    p.add_argument(
        "--cache",
        default="cold",
        type=argtypes.checked(parse_cache, "cache"),
        help="cold, warm, a per-resource hit probability, or 'list:URL URL ...' (an explicit cached set)",
    )
    p.add_argument(
        "--scheduler",
        default="urgency",
        choices=["urgency", "round-robin", "fifo"],
        help="model server's response order: RFC 9218 urgency, round-robin (aioquic) or fifo (h2 stack)",
    )
    p.add_argument(
        "--seeds",
        default=1,
        type=argtypes.count(1, 1000),
        help="run seeds SEED..SEED+N-1 and report medians (at most 1000)",
    )


def think_from_args(args: argparse.Namespace) -> dict:
    """``think_s`` (None: the trace's wait for the document) and ``asset_think_s``."""
    think = None if str(args.think).lower() == "trace" else parse_duration(args.think)
    return {"think_s": think, "asset_think_s": parse_duration(args.asset_think)}
