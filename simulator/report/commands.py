"""``workbench slides NOTEBOOK -o DIR``: an offline reveal.js deck of a notebook."""

from __future__ import annotations

import ast
import argparse
import os

from .. import argtypes
from ..errors import InputError


def _value(text: str):
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        value = text
    # The notebook runs in its own folder; a path given on the command line is relative to
    # where the user is: one that names an existing file or folder from here goes in absolute.
    if isinstance(value, str) and value and not os.path.isabs(value) and os.path.exists(value):
        return os.path.abspath(value)
    return value


def _cmd(args: argparse.Namespace) -> int:
    from .slides import build_slides

    params = {}
    for name, value in args.parameter or []:
        if not name.isidentifier():
            raise InputError(f"-p {name}: not a parameter name.")
        params[name] = _value(value)
    result = build_slides(
        args.notebook, args.output, parameters=params, execute=not args.no_execute, timeout=args.timeout
    )
    print(result)
    return 0


def add_commands(sub) -> None:
    """Register ``workbench slides`` (run a notebook, write an offline reveal.js deck) on ``sub``."""
    p = sub.add_parser(
        "slides",
        help="a notebook as an offline reveal.js deck (figures also as PNG and PDF)",
        description="Run NOTEBOOK (nbclient) and write a reveal.js deck that loads nothing from "
        "the network: DIR/index.html, DIR/revealjs/, DIR/figures/fig-NN.png|pdf.  "
        "Markdown headings start slides, each figure is a slide, code is hidden "
        "unless its cell is tagged 'show' ('show-output': outputs only; "
        "'skip-slides': left out).",
    )
    p.add_argument("notebook", metavar="NOTEBOOK")
    p.add_argument(
        "-o", "--output", required=True, metavar="DIR", type=argtypes.output_folder, help="deck folder (created)"
    )
    p.add_argument(
        "-p",
        "--parameter",
        nargs=2,
        action="append",
        metavar=("NAME", "VALUE"),
        help="override a parameter of the 'parameters' cell (Python literal or string); repeatable",
    )
    p.add_argument("--no-execute", action="store_true", help="use the outputs stored in the notebook")
    p.add_argument("--timeout", type=argtypes.count(1, 86_400), default=600, help="seconds per cell (default 600)")
    p.set_defaults(func=_cmd)
