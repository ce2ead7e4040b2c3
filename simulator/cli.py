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
import gc
import importlib
import sys

from .argtypes import ArgParser
from .errors import InputError

COMMAND_MODULES = [
    "simulator.traces.commands",  # workbench trace info|convert|synth
    "simulator.studies.registry",  # workbench hol, push, trailers, ... (every study of simulator.studies.registry)
    "simulator.compression.commands",  # workbench interop decode|encode
    "simulator.frames.commands",  # workbench frames
    "simulator.capture.commands",  # workbench capture
    "simulator.lab.commands",  # workbench lab shell|clean
    "simulator.batch.commands",  # workbench batch
    "simulator.report.commands",  # workbench slides
    "simulator.bench",  # workbench bench
    "simulator.demo",  # workbench demo
]


# Which module registers each command, so that ``workbench X`` imports only X's code
# (importing every study costs about 0.4 s of start-up, a fifth of a small run);
# ``workbench --help`` and an unknown command still import them all.  A study's commands
# come from its registration (``study:NAME``).  tests/test_cli_inputs.py holds this
# table to what each module registers.
COMMAND_HOMES = {
    "trace": "simulator.traces.commands",
    "interop": "simulator.compression.commands",
    "frames": "simulator.frames.commands",
    "capture": "simulator.capture.commands",
    "lab": "simulator.lab.commands",
    "batch": "simulator.batch.commands",
    "slides": "simulator.report.commands",
    "bench": "simulator.bench",
    "demo": "simulator.demo",
    "crossstream-bodies": "study:crossstream",
}


def _home(command: str | None) -> str | None:
    from .studies.registry import STUDIES

    if command in STUDIES:
        return f"study:{command}"
    return COMMAND_HOMES.get(command)


class _Parser(ArgParser):
    def error(self, message: str) -> None:
        # argparse's own errors (bad flag values included): one line, exit 2, like InputError.
        print(f"workbench: error: {message} (see: {self.prog} --help)", file=sys.stderr)
        sys.exit(2)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole CLI, or only ``command``'s part when its home is known."""
    parser = _Parser(prog="workbench", description="HTTP protocol research workbench.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    home = _home(command)
    if home is None:
        for name in COMMAND_MODULES:
            importlib.import_module(name).add_commands(sub)
    elif home.startswith("study:"):
        from .studies.registry import get

        get(home[len("study:") :]).add_commands(sub)
    else:
        importlib.import_module(home).add_commands(sub)
    return parser


def main(argv: list[str] | None = None, *, own_process: bool = False) -> int:
    """Run the ``workbench`` command line; the exit status (2 for a bad flag or bad input, said in one line).
    ``own_process``: the command is the process's own, which ends with it (``entry``)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv[0] if argv else None)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # a bad flag (already said in one line) or --help: a status, as below
        return exc.code if isinstance(exc.code, int) else 2
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    if own_process and getattr(args, "collector", True) is False:
        # A command whose objects live to its end (``collector=False`` in its defaults): the
        # cyclic collector's passes over them would find only the cycles its runs leave,
        # which the process's end frees (``fidelity`` of a 20,000-resource page: 0.7 s).
        gc.disable()
    try:
        return int(args.func(args) or 0)
    except InputError as exc:
        print(f"workbench: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `workbench ... | head`
        return 0


def entry() -> None:
    """The ``workbench`` process (its console script, ``python -m simulator.cli``): ``main`` on
    the command line, then the exit without the collector's last pass: every object made so
    far moves where no collection looks (``gc.freeze``), since that full collection, over all
    the command made (about 1 s after a 20,000-resource ``fidelity``), would free only memory
    the exit returns anyway."""
    status = main(own_process=True)
    gc.freeze()
    sys.exit(status)


if __name__ == "__main__":
    entry()
