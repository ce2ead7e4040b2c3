"""``workbench crossstream`` and ``crossstream-bodies``: the cross-stream study's flags,
its commands, and its registration."""

from __future__ import annotations

import argparse
import sys

import pandas as pd

from ... import argtypes
from ...errors import InputError
from ...units import parse_integer, parse_size
from ..base import Study, add_network_flags, comma_list, network_from_args
from . import bodies as body_gen
from .bodies import parse_codecs
from .study import LEAK_ATTACKS, SCHEMES, SCOPINGS, TRANSPORTS, CrossstreamParams, check_dictionary_bytes, run

__all__ = ["STUDY", "add_arguments", "params_from_args"]


def _ints(text: str) -> tuple[int, ...]:
    text = str(text).strip()
    if text in ("", "0", "none"):
        return ()
    try:
        return tuple(parse_integer(x) for x in text.split(",") if x.strip())
    except InputError:
        raise InputError(f"--leak-lengths takes comma-separated integers, got {text!r}") from None


def _leak_lengths(text: str) -> tuple[int, ...]:
    lengths = _ints(text)
    if any(n < 1 or n > 64 for n in lengths):
        raise InputError(f"secret lengths must be between 1 and 64 characters, got {text!r}")
    return lengths


def params_from_args(args: argparse.Namespace) -> CrossstreamParams:
    """The study's parameters from its parsed flags (units applied)."""
    attack = getattr(args, "leak", None) or "quick"
    if attack not in LEAK_ATTACKS:
        raise InputError(f"--leak takes {' or '.join(LEAK_ATTACKS)}, got {attack!r}")
    lengths = LEAK_ATTACKS[attack]["lengths"] if args.leak_lengths is None else _ints(args.leak_lengths)
    return CrossstreamParams(
        schemes=comma_list(args.scheme),
        codecs=args.codecs,
        scopings=comma_list(args.scoping),
        releases=int(args.releases),
        static_dictionary_bytes=parse_size(args.static_dict),
        dictionary_bytes=parse_size(args.dict_size),
        transport=args.transport,
        leak_lengths=lengths,
        leak_alignments=int(args.alignments),
        leak_codecs=LEAK_ATTACKS[attack]["codecs"],
        measure_cpu=bool(getattr(args, "cpu", False)),
        **network_from_args(args),
    )


def _cmd(args: argparse.Namespace) -> int:
    params = params_from_args(args)
    if args.trace and args.bodies:
        raise InputError("give --trace or --bodies, not both")
    if args.bodies:
        source = body_gen.load_folder(args.bodies)
    elif args.trace:
        from ...traces import load

        source = load(args.trace)
    else:
        source = None
    result = run(source, params.derive(leak_in_background=True), progress=not args.json and sys.stderr.isatty())
    if args.responses:
        from ...outfiles import write_output

        write_output(args.responses, result.responses.to_csv(index=False).encode("utf-8"))
    if args.json:
        print(result.to_json())
        return 0
    src = result.source
    print(
        f"bodies {src['source']} ({src['bodies']} bodies, {src['raw_bytes']:,} bytes, {src['visits']} visits), "
        f"{params.transport}, RTT {params.rtt_s * 1000:g} ms, loss {params.loss}, seed {params.seed}"
    )
    cols = [
        "scheme",
        "codec",
        "scoping",
        "total_bytes",
        "ratio",
        "gain_vs_per_response",
        "repeat_ratio",
        "server_dictionary_peak_bytes",
        "first_visit_s",
        "repeat_visit_s",
    ]
    with pd.option_context("display.width", 200, "display.max_rows", 500, "display.float_format", "{:.4f}".format):
        print(result.summary[cols].to_string(index=False))
        if not result.leak.empty:
            scope = (
                "the first codec each scheme can use (--leak full: every codec)"
                if params.leak_codecs == "first"
                else "every codec"
            )
            lengths = " and ".join(str(n) for n in params.leak_lengths)
            print(
                f"\nleak (BREACH-style size oracle; requests = attacker-induced responses observed; "
                f"{lengths}-character secrets, {scope}):"
            )
            print(result.leak.to_string(index=False))
        if result.cpu is not None:
            print("\nCPU (wall time of this machine, not deterministic):")
            print(result.cpu.to_string(index=False))
    for u in result.unavailable:
        print(f"unavailable: {u['scheme']} {u['codec']}: {u['reason']}")
    ref = result.reference
    if "brotli5_dict_vs_brotli8" in ref:
        print(
            f"\n2017 reference: Brotli-5 with dynamic dictionary vs Brotli-8 per response: "
            f"{ref['brotli5_dict_vs_brotli8']:.2f}x (published 1.30x)"
        )
    for k, v in ref.get("delta_saving_percent_vs_plain", {}).items():
        scheme, codec = k.split(" ", 1)
        print(f"RFC 9842 delta {scheme} {codec}: saving % vs plain {codec} per response, per type (repeat visits): {v}")
    return 0


def _cmd_bodies(args: argparse.Namespace) -> int:
    corpus = body_gen.generate(seed=int(args.seed), releases=int(args.releases))
    written = body_gen.write_folder(corpus, args.out)
    print(f"wrote {len(written)} bodies ({corpus.raw_bytes:,} bytes, {args.releases} releases) under {args.out}")
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The study's flags: the command line's, and the batch grid's parameters."""
    p.add_argument("--trace", help="a trace file: its text responses get generated bodies (URLs, types, sizes)")
    p.add_argument("--bodies", metavar="DIR", help="a folder of real files (sub-folders are later releases)")
    p.add_argument(
        "--scheme",
        default=",".join(SCHEMES),
        type=argtypes.names(SCHEMES, "scheme"),
        help="comma-separated: " + ",".join(SCHEMES),
    )
    p.add_argument(
        "--codecs",
        default=CrossstreamParams.codecs,
        type=argtypes.checked(parse_codecs, "codecs"),
        help="LIBRARY:LEVEL list, e.g. brotli:5,zstd:1-19,zlib:6 (libraries: zlib, brotli, zstd)",
    )
    p.add_argument(
        "--scoping",
        default=",".join(SCOPINGS),
        type=argtypes.names(SCOPINGS, "scoping"),
        help="comma-separated: " + ",".join(SCOPINGS),
    )
    p.add_argument(
        "--releases", default=3, type=argtypes.count(1, 100), help="releases (visits) of generated bodies (at most 100)"
    )
    p.add_argument("--static-dict", default="32KiB", type=argtypes.size, help="static dictionary size per MIME type")
    p.add_argument(
        "--dict-size",
        default="128KiB",
        type=argtypes.checked(check_dictionary_bytes, "size"),
        help="dynamic dictionary size in bytes, a power of two (the draft's 2^DSize), e.g. 128KiB",
    )
    p.add_argument(
        "--transport",
        default="tcp",
        choices=list(TRANSPORTS),
        help="transport model for transfer times: tcp (HTTP/2) or quic (HTTP/3)",
    )
    add_network_flags(p, rtt="100ms", bw="10mbit", loss="0", seed=1)
    p.add_argument(
        "--leak",
        default="quick",
        choices=list(LEAK_ATTACKS),
        help="the leak's attack: quick (default: a 4-character secret against the first codec each "
        "scheme can use, every scheme and scoping) or full (4- and 8-character secrets against "
        "every codec, about 6x the oracle queries; the default before)",
    )
    p.add_argument(
        "--leak-lengths",
        default=None,
        type=argtypes.checked(_leak_lengths, "lengths"),
        help="secret lengths for the leak, overriding --leak's (0 = no leak experiment)",
    )
    p.add_argument(
        "--alignments",
        default=8,
        type=argtypes.count(1, 1024),
        help="leak: rounds (fresh pads and alignment) per character before giving up",
    )
    p.add_argument("--cpu", action="store_true", help="also measure CPU time (wall time of this machine)")
    p.add_argument(
        "--responses", metavar="CSV", type=argtypes.output_file, help="also write the per-response table to CSV"
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")


def _add_bodies_command(sub) -> None:
    b = sub.add_parser("crossstream-bodies", help="write the generated body corpus (releases in rNN/ folders)")
    b.add_argument("out", metavar="DIR", type=argtypes.output_folder, help="folder to write (created)")
    b.add_argument("--seed", default=1, type=argtypes.seed)
    b.add_argument("--releases", default=3, type=argtypes.count(1, 100))
    b.set_defaults(func=_cmd_bodies)


STUDY = Study(
    name="crossstream",
    help="cross-stream compression: shared contexts, dictionaries, RFC 9842, the leak",
    add_arguments=add_arguments,
    params_from_args=params_from_args,
    run=run,
    command=_cmd,
    optional_tables=("leak", "responses"),
    cli_only=frozenset({"bodies", "cpu", "responses"}),
    more_commands=_add_bodies_command,
)
