"""The cases of the fresh mutation corpus: which command, which flags, which files.  Written by hand.

``make_case(seed, folder)`` writes the case's input files into ``folder`` (its own, the
command's working folder) and returns a ``Case``: the command line, what a refusal must
name, and the paths whose kind must survive the run (a device, a symlink, a folder, a
FIFO).  The same seed makes the same case.  See ``tests/fuzz_fresh.py`` for the judge.
"""

from __future__ import annotations

import json
import os
import random
import stat
from dataclasses import dataclass, field
from pathlib import Path

from fuzz_fresh_inputs import grid_toml, mutate_har, mutate_interop, mutate_qif, notebook, topology

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT / "traces"
HARS = sorted(TRACES.rglob("*.har"))
SMALL_HAR = TRACES / "har-real" / "http_http2-chrome.har"
QIFS = sorted((TRACES / "qif").glob("*.qif"))
INTEROPS = sorted(p for p in (TRACES / "qpack-interop").rglob("*.out.*"))
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@dataclass
class Case:
    """One command line and what its answer is judged by."""

    seed: int
    family: str  # har, qif, interop, flag, output, grid, topology, notebook
    kind: str  # the mutation within the family
    argv: list[str]
    names: tuple[str, ...]  # a refusal's one line names one of these
    keep: dict[str, str] = field(default_factory=dict)  # path -> what it must stay (chr, fifo, link:T, dir)
    value: str | None = None  # a flag case's value


# Each HAR-reading command, its trace last (``{}``), fast on a valid page.
HAR_COMMANDS = [
    ["trace", "info", "--json", "{}"],
    ["trace", "convert", "{}", "out.qif"],
    ["hol", "--json", "--scheme", "hpack,qpack", "--trace", "{}"],
    ["push", "--json", "--policy", "none,hints", "--trace", "{}"],
    ["fidelity", "--json", "{}"],
    ["trailers", "--json", "--trace", "{}"],
    ["coalescing", "--json", "--trace", "{}"],
    ["priorities", "--json", "--scheduler", "rfc9218,fifo", "--browser", "chromium", "--trace", "{}"],
    ["replay", "--json", "--stack", "h2", "--model", "--trace", "{}"],
    ["replay", "--json", "--stack", "h3", "--model", "--trace", "{}"],
    ["crossstream", "--json", "--scheme", "per-response,dcz", "--codecs", "zlib:6", "--releases", "1", "--trace", "{}"],
    ["batch", "push", "--workers", "0", "--out", "results", "--traces", "{}"],
]
QIF_COMMANDS = [
    ["trace", "info", "{}"],
    ["trace", "convert", "{}", "out.har"],
    ["hol", "--json", "--trace", "{}"],
    ["interop", "encode", "{}", "-o", "out.out.256.100.1", "--table", "256", "--blocked", "100", "--ack", "1"],
    ["trailers", "--json", "--trace", "{}"],
    ["replay", "--json", "--stack", "h3", "--model", "--trace", "{}"],
]

# The fast command line of each command whose flags are mutated, and its numeric flags.
FLAG_BASE = {
    "hol": ["hol", "--json", "--trace", str(QIFS[0])],
    "push": ["push", "--json", "--policy", "none,hints", "--trace", str(SMALL_HAR)],
    "trailers": ["trailers", "--json"],
    "coalescing": ["coalescing", "--json", "--trace", str(SMALL_HAR)],
    "crossstream": ["crossstream", "--json", "--scheme", "per-response", "--codecs", "zlib:6", "--releases", "1"],
    "priorities": [
        "priorities",
        "--json",
        "--scheduler",
        "rfc9218",
        "--browser",
        "chromium",
        "--trace",
        str(SMALL_HAR),
    ],
    "fidelity": ["fidelity", "--json", str(SMALL_HAR)],
    "demux": ["demux", "--json", "--part", "model", "--streams", "2", "--size", "64KiB", "--rtt", "10ms"],
    "replay": ["replay", "--json", "--stack", "h2", "--model", "--trace", str(SMALL_HAR)],
    "synth": ["trace", "synth", "out.har", "--requests", "10"],
    "decode": [
        "interop",
        "decode",
        str(INTEROPS[0]),
        "--qif",
        str(TRACES / "qif" / INTEROPS[0].name.split(".out")[0]) + ".qif",
    ],
    "encode": [
        "interop",
        "encode",
        str(QIFS[0]),
        "-o",
        "x.out.256.10.1",
        "--table",
        "256",
        "--blocked",
        "10",
        "--ack",
        "1",
    ],
    "info": ["trace", "info", str(INTEROPS[0])],
    "frames": ["frames", "--json", "frames.bin"],
    "batch": ["batch", "hol", "--workers", "0", "--out", "results", "--traces", str(QIFS[0])],
    "slides": ["slides", "--no-execute", "-o", "deck", str(NOTEBOOKS[0])],
    "demo": ["demo", "--out", "demo"],
    "bodies": ["crossstream-bodies", "bodies"],
}
NET = [("--rtt", "dur"), ("--bw", "rate"), ("--loss", "loss"), ("--seed", "seed")]
FLAGS = {
    "hol": NET
    + [("--table", "size"), ("--blocked", "count"), ("--spacing", "dur"), ("--think", "dur"), ("--jitter", "prob")],
    "push": NET
    + [
        ("--think", "dur"),
        ("--asset-think", "dur"),
        ("--seeds", "count"),
        ("--dns", "dur"),
        ("--parse-delay", "dur"),
        ("--push-urgency", "count"),
        ("--push-set", "pushset"),
        ("--cache", "cache"),
    ],
    "trailers": NET
    + [
        ("--body", "size"),
        ("--rate", "brate"),
        ("--chunk", "size"),
        ("--hop-rtt", "dur"),
        ("--hop-bw", "rate"),
        ("--te", "prob"),
        ("--responses", "count"),
        ("--spacing", "dur"),
        ("--think", "dur"),
    ],
    "coalescing": NET
    + [
        ("--p421", "prob"),
        ("--p421-announced", "prob"),
        ("--dns-lookup", "dur"),
        ("--seeds", "count"),
        ("--think", "dur"),
    ],
    "crossstream": NET
    + [
        ("--releases", "count"),
        ("--static-dict", "size"),
        ("--dict-size", "size"),
        ("--alignments", "count"),
        ("--leak-lengths", "count"),
        ("--codecs", "codecs"),
    ],
    "priorities": NET + [("--think", "dur"), ("--parse-delay", "dur"), ("--seeds", "count")],
    "fidelity": [("--seed", "seed"), ("--document-think", "dur"), ("--at", "at")],
    "demux": [
        ("--bw", "rate"),
        ("--loss", "loss"),
        ("--streams", "count"),
        ("--size", "size"),
        ("--window", "size"),
        ("--frame", "size"),
        ("--read", "size"),
        ("--side", "size"),
        ("--rtt", "durs"),
        ("--mss", "count"),
        ("--consume-rate", "brate"),
        ("--copy-rate", "brate"),
        ("--cost-read", "dur"),
        ("--cost-frame", "dur"),
        ("--cost-wakeup", "dur"),
        ("--repeat", "count"),
    ],
    "replay": NET
    + [("--think", "dur"), ("--idle-timeout", "dur"), ("--qpack-table", "size"), ("--qpack-blocked", "count")],
    "synth": [
        ("--pages", "count"),
        ("--seed", "count"),
        ("--requests", "count"),
        ("--origins", "count"),
        ("--third-party-share", "prob"),
        ("--third-party-zipf", "float"),
    ],
    "decode": [("--table", "count"), ("--blocked", "count")],
    "encode": [("--table", "count"), ("--blocked", "count"), ("--ack", "count")],
    "info": [("--capacity", "count"), ("--blocked", "count")],
    "frames": [("--max-frame-size", "count")],
    "batch": [("--seeds", "count"), ("--workers", "count"), ("--dask-timeout", "dur")],
    "slides": [("--timeout", "count")],
    "demo": [("--seed", "seed"), ("--loss", "loss")],
    "bodies": [("--seed", "seed"), ("--releases", "count")],
}
NUMBERS = [
    "\u0661\u0660",
    "\uff11\uff10",
    "\u0967",
    "1e309",
    "-1e309",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "-0",
    "-0.0",
    "5e-324",
    "1e-320",
    "4.9e-324",
    "9" * 40,
    "",
    " ",
    "0",
    "-1",
    "1_000",
    "0x10",
    "1e308",
    "+5",
    "\u00b2",
    "1.5",
    "1e3",
    "0e0",
    "1e-9",
    "2147483648",
    "18446744073709551616",
    "1e15",
    "1\u00a0000",
    "10\n",
    "\u0660.\u0665",
    "\u0660",
    "\u00b3",
    "0.\u0665",
    "\U0001d7d9",
]
UNITS = {
    "dur": ["ms", "s", "us", "\u00b5s", "\u03bcs", "min", "MS", " ms", "msec", "h", ""],
    "rate": ["mbit", "bit", "gbit", "kbps", "Mbit", " mbit", "mbit/s", ""],
    "size": ["", "KiB", "kB", "GiB", "k", "b", " KiB", "TiB", "bit"],
    "brate": ["kB/s", "MiB/s", "mbit", "B/s", "/s", "kB", ""],
}
SPECIAL = {
    "loss": [
        "nan",
        "1e309",
        "ge:nan,0.3",
        "ge:0.01,0",
        "ge:1,1",
        "ge:0.01,0.3,nan,0",
        "5e-324",
        "1.0000001",
        "-0",
        "100%",
        "nan%",
        "ge:",
        "ge:0.5",
        "ge:0.01,0.3,1,1,1",
        "\u0660.\u0661",
        "1e-320",
        "ge:1e309,0.5",
    ],
    "at": [
        "rtt=1e309ms,bw=1mbit",
        "rtt=nanms",
        "bw=5e-324mbit",
        "rtt=10ms,rtt=20ms",
        "loss=nan",
        "x=1",
        "",
        "rtt=",
        "rtt=\u0661ms",
        "bw=1bit",
        "rtt=1e6s",
        "bw=1e15gbit",
        ",",
        "rtt=10ms;bw=1mbit",
        "loss=1",
    ],
    "cache": ["nan", "1e309", "", "-0", "hot", "\u0660.\u0665", "cold,warm", "1e-320", "list:", "0.5\u0000"],
    "pushset": [
        "largest:\u00b2",
        "largest:\u0661\u0660",
        "largest:" + "9" * 40,
        "largest:0",
        "largest:-1",
        "list:",
        "largest:1e3",
        "largest:",
    ],
    "codecs": [
        "zlib:nan",
        "zlib:1e309",
        "zstd:1-1000000000",
        "brotli:\u0665",
        "zlib:",
        ":",
        "zlib:-0",
        "zstd:22-1",
        "zlib:6" * 500,
        "zstd:1-19" + ",zstd:1-19" * 200,
    ],
    "durs": ["1e309ms", "nanms,10ms", ",,,", "10ms," * 10_000, "5e-324s", "\u0661ms", "-0ms", "1ms" + ",1ms" * 5000],
    "float": ["nan", "inf", "-inf", "1e309", "-1", "0", "5e-324", "1e308", "\u0661", "", "1e-320"],
}


def flag_value(rng: random.Random, kind: str) -> str:
    """A hostile spelling of a value for a flag of ``kind``."""
    if kind in SPECIAL and rng.random() < 0.7:
        return rng.choice(SPECIAL[kind])
    number = rng.choice(NUMBERS)
    units = UNITS.get(kind)
    if units is None:
        return number
    return number + rng.choice(units)


def _har_doc(rng: random.Random) -> tuple[Path, dict]:
    source = rng.choice(HARS)
    return source, json.loads(source.read_text())


def _fill(template: list[str], path: str) -> list[str]:
    return [path if a == "{}" else a for a in template]


def _har_case(seed, rng, folder) -> Case:
    source, doc = _har_doc(rng)
    kind, data = mutate_har(rng, doc)
    path = folder / f"case{seed}.har"
    path.write_bytes(data)
    return Case(seed, "har", f"{kind}@{source.stem}", _fill(rng.choice(HAR_COMMANDS), path.name), (path.name,))


def _qif_case(seed, rng, folder) -> Case:
    source = rng.choice(QIFS)
    kind, data = mutate_qif(rng, source.read_bytes())
    path = folder / f"case{seed}.qif"
    path.write_bytes(data)
    return Case(seed, "qif", kind, _fill(rng.choice(QIF_COMMANDS), path.name), (path.name,))


def _interop_case(seed, rng, folder) -> Case:
    source = rng.choice(INTEROPS)
    kind, data = mutate_interop(rng, source.read_bytes())
    if rng.random() < 0.15:  # the name carries the table, blocked and ack settings
        kind += "+name"
        name = rng.choice(
            [
                f"x.out.{2**40}.100.1",
                "x.out.256.99999999.1",
                "x.out.256.100.7",
                "x.out.\u0661.1.1",
                "x.out.-1.1.1",
                "x.out.1e3.1.1",
                "x.out",
            ]
        )
    else:
        name = source.name
    path = folder / name
    path.write_bytes(data)
    qif = TRACES / "qif" / (source.name.split(".out")[0] + ".qif")
    argv = rng.choice(
        [
            ["interop", "decode", name, "--qif", str(qif)],
            ["hol", "--json", "--trace", name],
            ["trace", "info", "--json", name],
            ["trace", "convert", name, "out.qif"],
        ]
    )
    return Case(seed, "interop", kind, argv, (path.name,))


def _flag_case(seed, rng, folder) -> Case:
    command = rng.choice(sorted(FLAGS))
    flag, kind = rng.choice(FLAGS[command])
    value = flag_value(rng, kind)
    argv = list(FLAG_BASE[command])
    if command == "frames":
        (folder / "frames.bin").write_bytes(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes.fromhex("000000040000000000"))
    if flag in argv:  # replace the base's own value
        argv[argv.index(flag) + 1] = value
    else:
        argv += [f"{flag}={value}"] if value.startswith("-") or rng.random() < 0.3 else [flag, value]
    return Case(seed, "flag", f"{command} {flag} {kind}", argv, (flag,), value=value)


# The commands' output flags: (command line with ``{}`` for the output, file or folder).
OUTPUTS = [
    (["trace", "convert", str(QIFS[0]), "{}"], "file"),
    (["trace", "convert", str(SMALL_HAR), "{}", "--to", "har"], "file"),
    (["trace", "synth", "{}", "--requests", "10"], "file"),
    (["interop", "encode", str(QIFS[0]), "-o", "{}", "--table", "256", "--blocked", "10", "--ack", "1"], "file"),
    (["coalescing", "--trace", str(SMALL_HAR), "--write-topology", "{}"], "file"),
    (["hol", "--trace", str(QIFS[0]), "--blocks", "{}"], "file"),
    (["trailers", "--rows", "{}"], "file"),
    (["demux", "--part", "model", "--streams", "2", "--size", "64KiB", "--rtt", "10ms", "--rows", "{}"], "file"),
    (["crossstream", "--scheme", "per-response", "--codecs", "zlib:6", "--releases", "1", "--responses", "{}"], "file"),
    (["replay", "--trace", str(SMALL_HAR), "--stack", "h2", "--pcap", "{}"], "file"),
    (["replay", "--trace", str(SMALL_HAR), "--stack", "h2", "--keylog", "{}"], "file"),
    (
        [
            "priorities",
            "--trace",
            str(SMALL_HAR),
            "--scheduler",
            "rfc9218",
            "--browser",
            "chromium",
            "--protocol",
            "h3",
            "--qlog",
            "{}",
        ],
        "file",
    ),
    (["slides", "--no-execute", str(NOTEBOOKS[0]), "-o", "{}"], "folder"),
    (["batch", "hol", "--workers", "0", "--traces", str(QIFS[0]), "--out", "{}"], "folder"),
    (["crossstream-bodies", "{}", "--releases", "1"], "folder"),
    (["replay", "--trace", str(SMALL_HAR), "--stack", "h3", "--qlog", "{}"], "folder"),
]


def _output_case(seed, rng, folder) -> Case:
    template, what = rng.choice(OUTPUTS)
    kind = rng.choice(
        [
            "dir",
            "link-file",
            "link-dev",
            "dev-null",
            "dev-full",
            "missing-parent",
            "dangling",
            "fifo",
            "long-name",
            "empty",
            "trailing-slash",
            "under-file",
            "proc",
            "link-loop",
            "link-dir",
            "existing",
        ]
    )
    keep: dict[str, str] = {}
    out = "out"
    if kind == "dir":
        os.mkdir(folder / out)
        (folder / out / "kept.txt").write_text("kept")
        keep[out] = "dir"
    elif kind in ("link-file", "existing"):
        (folder / "target.txt").write_text("sentinel")
        if kind == "link-file":
            os.symlink("target.txt", folder / out)
            keep[out] = "link:target.txt"
        else:
            out = "target.txt"
    elif kind in ("link-dev", "dev-null", "dev-full"):
        dev = "full" if kind == "dev-full" else "null"
        os.mknod(folder / dev, 0o666 | stat.S_IFCHR, os.makedev(1, 7 if dev == "full" else 3))
        keep[dev] = "chr"
        if kind == "link-dev":
            os.symlink(dev, folder / out)
            keep[out] = f"link:{dev}"
        else:
            out = dev
    elif kind == "missing-parent":
        out = "no/such/folder/out"
    elif kind == "dangling":
        os.symlink("nowhere/x", folder / out)
        keep[out] = "link:nowhere/x"
    elif kind == "fifo":
        os.mkfifo(folder / out)
        keep[out] = "fifo"
    elif kind == "long-name":
        out = "x" * 300
    elif kind == "empty":
        out = ""
    elif kind == "trailing-slash":
        out = "newdir/"
    elif kind == "under-file":
        (folder / "plain").write_text("sentinel")
        out = "plain/out"
    elif kind == "proc":
        out = "/proc/self/no-such-file"
    elif kind == "link-loop":
        os.symlink("out", folder / out)
        keep[out] = "link:out"
    else:
        os.mkdir(folder / "realdir")
        os.symlink("realdir", folder / out)
        keep[out] = "link:realdir"
    argv = _fill(template, out)
    at = template.index("{}")
    flag = template[at - 1] if template[at - 1].startswith("-") else ("DIR" if what == "folder" else "OUT")
    # a refusal names the output, or the flag that refused the combination
    names = tuple(a.split("=")[0] for a in argv if a.startswith("--")) + ((out, flag) if out else (flag,))
    return Case(seed, "output", f"{argv[0]} {flag} {kind}", argv, names, keep)


def _grid_case(seed, rng, folder) -> Case:
    study = rng.choice(["hol", "push", "trailers", "coalescing", "fidelity"])
    flags = [f for f, _ in FLAGS[study]]
    kind, data = grid_toml(rng, study, flags)
    (folder / "grid.toml").write_bytes(data)
    trace = str(QIFS[0]) if study in ("hol", "trailers") else str(SMALL_HAR)
    argv = ["batch", study, "--workers", "0", "--traces", trace, "--grid", "grid.toml", "--out", "results"]
    return Case(seed, "grid", f"{study} {kind}", argv, ("grid.toml",))


def _topology_case(seed, rng, folder) -> Case:
    which = rng.choice(["dns", "cert"])
    suffix = rng.choice([".json", ".toml"])
    kind, data = topology(rng, which, suffix)
    name = which + suffix
    (folder / name).write_bytes(data)
    argv = [
        "coalescing",
        "--json",
        "--trace",
        str(rng.choice([SMALL_HAR, TRACES / "synthetic-many-origins.har"])),
        f"--{which}",
        name,
    ]
    return Case(seed, "topology", f"{which}{suffix} {kind}", argv, (name,))


def _notebook_case(seed, rng, folder) -> Case:
    source = rng.choice(NOTEBOOKS)
    kind, data = notebook(rng, json.loads(source.read_text()))
    (folder / "nb.ipynb").write_bytes(data)
    return Case(seed, "notebook", kind, ["slides", "--no-execute", "nb.ipynb", "-o", "deck"], ("nb.ipynb",))


FAMILIES = [
    (_har_case, 30),
    (_qif_case, 7),
    (_interop_case, 7),
    (_flag_case, 30),
    (_output_case, 13),
    (_grid_case, 6),
    (_topology_case, 4),
    (_notebook_case, 3),
]


def make_case(seed: int, folder: Path, family: str | None = None) -> Case:
    """Case ``seed``: its input files written into ``folder``, its command line returned
    (``family``: only that family's cases, e.g. ``flag``, for a look at one kind)."""
    rng = random.Random(seed)
    families = [(f, w) for f, w in FAMILIES if family is None or f.__name__ == f"_{family}_case"]
    make = rng.choices([f for f, _ in families], weights=[w for _, w in families])[0]
    return make(seed, rng, Path(folder))
