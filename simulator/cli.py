"""The ``workbench`` command line.

Each command lives with the code it drives: a module in ``COMMAND_MODULES`` exposes
``add_commands(subparsers)`` and registers its sub-commands, each with
``set_defaults(func=...)``; ``func(args)`` returns the exit status.  The studies come
from their one registry (``simulator.studies.registry``).  Every module listed must be
there: a missing one is a broken install, and the CLI stops with the import error.

Bad input (``InputError``) prints one line to stderr and exits with status 2; a bug
tracebacks.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from .argtypes import ArgParser
from .errors import InputError

COMMAND_MODULES = [
    "simulator.traces.commands",       # workbench trace info|convert|synth
    "simulator.studies.registry",      # workbench hol, push, trailers, ... (every study of simulator.studies.registry)
    "simulator.compression.commands",  # workbench interop decode|encode
    "simulator.frames.commands",       # workbench frames
    "simulator.capture.commands",      # workbench capture
    "simulator.batch.commands",        # workbench batch
    "simulator.report.commands",       # workbench slides
    "simulator.bench",                 # workbench bench
    "simulator.demo",                  # workbench demo
]


class _Parser(ArgParser):
    def error(self, message: str) -> None:
        # argparse's own errors (bad flag values included): one line, exit 2, like InputError.
        print(f"workbench: error: {message} (see: {self.prog} --help)", file=sys.stderr)
        sys.exit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="workbench", description="HTTP protocol research workbench.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMAND_MODULES:
        importlib.import_module(name).add_commands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # a bad flag (already said in one line) or --help: a status, as below
        return exc.code if isinstance(exc.code, int) else 2
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except InputError as exc:
        print(f"workbench: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `workbench ... | head`
        return 0


if __name__ == "__main__":
    sys.exit(main())
