"""Every input gets a clear answer: a user's mistake on the command line is exit status 2
and one line on stderr naming the flag or the file, never a traceback, and nothing
is written.

The tables below run ``simulator.cli.main`` in-process (the checks happen while the
arguments are parsed, so no simulation starts); a few cases go through a subprocess.
Placeholders in an argv: ``{page}`` a bundled HAR, ``{bin}`` random bytes, ``{dir}`` an
existing folder, ``{nodir}`` a folder that does not exist, ``{tmp}`` the test's folder.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from simulator.cli import main
from simulator.errors import InputError
from simulator.units import parse_bandwidth, parse_byte_rate, parse_duration, parse_rate

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "traces" / "synthetic-page.har"


@pytest.fixture
def place(tmp_path):
    (tmp_path / "folder").mkdir()
    (tmp_path / "random.bin").write_bytes(random.Random(5).randbytes(5000))
    return tmp_path


def _fill(argv, place: Path) -> list[str]:
    values = {
        "page": str(PAGE),
        "bin": str(place / "random.bin"),
        "dir": str(place / "folder"),
        "nodir": str(place / "missing"),
        "tmp": str(place),
    }
    return [a.format(**values) for a in argv]


def _files(root: Path) -> set[Path]:
    return set(root.rglob("*"))


def _one_line_exit_2(capsys, place, argv, needle):
    argv = _fill(argv, place)
    before = _files(place)
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2, (argv, out, err)
    assert err.count("\n") == 1 and err.startswith("workbench: error:"), err
    assert "Traceback" not in err
    assert _fill([needle], place)[0] in err, (needle, err)
    assert _files(place) == before, "something was written"
    return err


# ---------------------------------------------------------------------------------------
# Negative quantities

NEGATIVE = [
    (["hol", "--trace", "{page}", "--rtt", "-100ms"], "--rtt"),
    (["hol", "--trace", "{page}", "--bw", "-5mbit"], "--bw"),
    (["hol", "--trace", "{page}", "--spacing", "-1s"], "--spacing"),
    (["hol", "--trace", "{page}", "--think", "-5ms"], "--think"),
    (["hol", "--trace", "{page}", "--table", "-1"], "--table"),
    (["push", "--trace", "{page}", "--rtt", "-100ms"], "--rtt"),
    (["push", "--trace", "{page}", "--think", "-1s"], "--think"),
    (["push", "--trace", "{page}", "--dns", "-5ms"], "--dns"),
    (["trailers", "--rate", "-5kB/s"], "--rate"),
    (["trailers", "--body", "-5KiB"], "--body"),
    (["trailers", "--hop-rtt", "-1ms"], "--hop-rtt"),
    (["trailers", "--spacing", "-1s"], "--spacing"),
    (["crossstream", "--rtt", "-100ms"], "--rtt"),
    (["crossstream", "--bw", "-5mbit"], "--bw"),
    (["coalescing", "--trace", "{page}", "--dns-lookup", "-1ms"], "--dns-lookup"),
    (["coalescing", "--trace", "{page}", "--bw", "-1gbit"], "--bw"),
    (["demux", "--rtt", "1ms,-5ms"], "--rtt"),
    (["demux", "--cost-read", "-1us"], "--cost-read"),
    (["demux", "--consume-rate", "-2GB/s"], "--consume-rate"),
    (["replay", "--trace", "{page}", "--stack", "h2", "--rtt", "-50ms"], "--rtt"),
    (["replay", "--trace", "{page}", "--stack", "h2", "--think", "-1ms"], "--think"),
    (["replay", "--trace", "{page}", "--stack", "h3", "--qpack-blocked", "-1"], "--qpack-blocked"),
    (["capture", "--synth", "5", "--proto", "h2", "--out", "{tmp}/x.har", "--timeout", "-5s"], "--timeout"),
    (["interop", "encode", "{page}", "-o", "{tmp}/x.out", "--table", "-5", "--blocked", "0", "--ack", "0"], "--table"),
    (["trace", "synth", "{tmp}/x.har", "--origins", "-1"], "--origins"),
    (["batch", "hol", "--traces", "{page}", "--out", "{tmp}/res", "--workers", "-1"], "--workers"),
]


@pytest.mark.parametrize("argv, flag", NEGATIVE, ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_negative_values_say_positive(capsys, place, argv, flag):
    """Rule: a negative quantity (-100ms, -5mbit, -5kB/s, -1) is taken as the flag's value
    (not as an unknown option) and refused: the line names the flag and says the value
    must be positive (or zero or positive)."""
    err = _one_line_exit_2(capsys, place, argv, flag)
    assert "positive" in err or "negative" in err, err


# ---------------------------------------------------------------------------------------
# Zero where zero means nothing

ZERO = [
    (["hol", "--trace", "{page}", "--bw", "0"], "--bw"),
    (["hol", "--trace", "{page}", "--rtt", "0ms"], "--rtt"),
    (["push", "--trace", "{page}", "--bw", "0"], "--bw"),
    (["push", "--trace", "{page}", "--seeds", "0"], "--seeds"),
    (["trailers", "--bw", "0"], "--bw"),
    (["trailers", "--hop-bw", "0mbit"], "--hop-bw"),
    (["trailers", "--rate", "0kB/s"], "--rate"),
    (["trailers", "--responses", "0"], "--responses"),
    (["trailers", "--chunk", "0"], "--chunk"),
    (["crossstream", "--bw", "0"], "--bw"),
    (["crossstream", "--releases", "0"], "--releases"),
    (["coalescing", "--trace", "{page}", "--bw", "0"], "--bw"),
    (["coalescing", "--trace", "{page}", "--seeds", "0"], "--seeds"),
    (["demux", "--bw", "0"], "--bw"),
    (["demux", "--streams", "0"], "--streams"),
    (["replay", "--trace", "{page}", "--stack", "h2", "--bw", "0"], "--bw"),
    (["replay", "--trace", "{page}", "--stack", "h2", "--idle-timeout", "0s"], "--idle-timeout"),
    (["trace", "synth", "{tmp}/x.har", "--pages", "0"], "--pages"),
    (["batch", "hol", "--traces", "{page}", "--out", "{tmp}/res", "--seeds", "0"], "--seeds"),
    (["slides", "{page}", "-o", "{tmp}/deck", "--timeout", "0"], "--timeout"),
]


@pytest.mark.parametrize("argv, flag", ZERO, ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_zero_is_not_unlimited(capsys, place, argv, flag):
    """Rule: zero is refused where it means nothing (a bandwidth of 0 is not 'unlimited':
    that is 'none'; a zero RTT, timeout, count or chunk), naming the flag."""
    _one_line_exit_2(capsys, place, argv, flag)


# ---------------------------------------------------------------------------------------
# Durations and rates without a unit

NO_UNIT = [
    (["hol", "--trace", "{page}", "--rtt", "100"], "--rtt"),
    (["hol", "--trace", "{page}", "--spacing", "10"], "--spacing"),
    (["hol", "--trace", "{page}", "--bw", "10"], "--bw"),
    (["push", "--trace", "{page}", "--rtt", "100"], "--rtt"),
    (["push", "--trace", "{page}", "--asset-think", "5"], "--asset-think"),
    (["push", "--trace", "{page}", "--parse-delay", "document=5"], "--parse-delay"),
    (["trailers", "--rtt", "100"], "--rtt"),
    (["trailers", "--rate", "5000"], "--rate"),
    (["trailers", "--hop-bw", "1000"], "--hop-bw"),
    (["crossstream", "--rtt", "0.1"], "--rtt"),
    (["coalescing", "--trace", "{page}", "--rtt", "100"], "--rtt"),
    (["coalescing", "--trace", "{page}", "--think", "5"], "--think"),
    (["demux", "--rtt", "1,10"], "--rtt"),
    (["demux", "--consume-rate", "5"], "--consume-rate"),
    (["replay", "--trace", "{page}", "--stack", "h2", "--rtt", "50"], "--rtt"),
    (["capture", "--synth", "5", "--proto", "h2", "--out", "{tmp}/x.har", "--think", "0.1"], "--think"),
]


@pytest.mark.parametrize("argv, flag", NO_UNIT, ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_a_duration_or_rate_needs_its_unit(capsys, place, argv, flag):
    """Rule: on the command line a duration or rate without a unit (--rtt 100: 100 s or
    100 ms?) is an error naming the flag and the units; zero needs no unit."""
    err = _one_line_exit_2(capsys, place, argv, flag)
    assert "no unit" in err and ("ms" in err or "mbit" in err or "kB/s" in err), err


def test_zero_needs_no_unit(capsys):
    """Rule: 0 is 0 in every unit, so a bare 0 duration is accepted."""
    assert main(["trailers", "--versions", "h2", "--strategy", "trailer", "--think", "0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["params"]["think_s"] == 0.0


# ---------------------------------------------------------------------------------------
# Probabilities and loss models out of range

OUT_OF_RANGE = [
    (["hol", "--trace", "{page}", "--loss", "1.5"], "--loss"),
    (["hol", "--trace", "{page}", "--loss", "-0.1"], "--loss"),
    (["hol", "--trace", "{page}", "--loss", "ge:2,0.5"], "--loss"),
    (["hol", "--trace", "{page}", "--jitter", "2"], "--jitter"),
    (["push", "--trace", "{page}", "--loss", "1.5"], "--loss"),
    (["push", "--trace", "{page}", "--cache", "1.5"], "--cache"),
    (["push", "--trace", "{page}", "--push-urgency", "9"], "--push-urgency"),
    (["trailers", "--te", "1.5"], "--te"),
    (["trailers", "--loss", "2"], "--loss"),
    (["crossstream", "--loss", "1.5"], "--loss"),
    (["crossstream", "--dict-size", "99"], "--dict-size"),
    (["crossstream", "--leak-lengths", "99"], "--leak-lengths"),
    (["crossstream", "--codecs", "zlib:99"], "--codecs"),
    (["coalescing", "--trace", "{page}", "--p421", "1.5"], "--p421"),
    (["coalescing", "--trace", "{page}", "--p421-announced", "-0.5"], "--p421-announced"),
    (["demux", "--loss", "1.5"], "--loss"),
    (["replay", "--trace", "{page}", "--stack", "h2", "--loss", "1.5"], "--loss"),
    (["trace", "synth", "{tmp}/x.har", "--third-party-share", "1.5"], "--third-party-share"),
    (["demo", "--loss", "1.5"], "--loss"),
]


@pytest.mark.parametrize("argv, flag", OUT_OF_RANGE, ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_out_of_range_values(capsys, place, argv, flag):
    """Rule: a probability or loss model outside [0, 1] (and any value outside its flag's
    range) is refused before any run, naming the flag."""
    _one_line_exit_2(capsys, place, argv, flag)


# ---------------------------------------------------------------------------------------
# Counts that size the work up front, and quantities that are not finite

TOO_MANY = [
    (["push", "--trace", "{page}", "--seeds", "1000000000"], "--seeds"),
    (["coalescing", "--trace", "{page}", "--seeds", "1000000000"], "--seeds"),
    (["trailers", "--responses", "1000000000"], "--responses"),
    (["crossstream", "--releases", "100000"], "--releases"),
    (["crossstream-bodies", "{tmp}/bodies", "--releases", "100000"], "--releases"),
    (["demux", "--streams", "100000000"], "--streams"),
    (["batch", "hol", "--traces", "{page}", "--out", "{tmp}/res", "--seeds", "1000000000"], "--seeds"),
    (["trace", "synth", "{tmp}/x.har", "--requests", "20001"], "--requests"),
    (["trace", "synth", "{tmp}/x.har", "--requests", "2"], "--requests"),
    (["trace", "synth", "{tmp}/x.har", "--pages", "1000000000"], "--pages"),
    (["push", "--trace", "{page}", "--seeds", "\u0661\u0662"], "--seeds"),
]


@pytest.mark.parametrize("argv, flag", TOO_MANY, ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_counts_have_documented_limits_checked_at_the_flag(capsys, place, argv, flag):
    """Rule: a count that sizes work or memory before anything runs (seeds, responses,
    releases, requests) is an ASCII integer within its documented range, checked while the
    flags are read: a billion seeds is one line, not an allocation; ``trace synth
    --requests`` outside the generator's 5..20,000 is refused, not clipped in silence."""
    _one_line_exit_2(capsys, place, argv, flag)


NOT_FINITE = [
    (["hol", "--trace", "{page}", "--bw", "1e309mbit"], "--bw"),
    (["hol", "--trace", "{page}", "--rtt", "1e309ms"], "--rtt"),
    (["push", "--trace", "{page}", "--rtt", "5e-324s"], "--rtt"),
    (["push", "--trace", "{page}", "--bw", "1e309mbit"], "--bw"),
    (["coalescing", "--trace", "{page}", "--rtt", "1e309ms"], "--rtt"),
    (["replay", "--trace", "{page}", "--stack", "h2", "--bw", "1e309gbit"], "--bw"),
    (["trailers", "--body", "1e400"], "--body"),
    (["trailers", "--rate", "1e309kB/s"], "--rate"),
    (["crossstream", "--rtt", "1e-300s"], "--rtt"),
]


@pytest.mark.parametrize("argv, flag", NOT_FINITE, ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_non_finite_and_denormal_quantities_are_refused_at_the_flag(capsys, place, argv, flag):
    """Rule: a quantity is finite and within simulator.units.LIMITS (1 ns..1e6 s, 1 bit/s..
    1e15 bit/s, up to 2**50 bytes, or zero): 1e309 is float infinity and 5e-324 s makes a
    gain "in RTTs" infinite; both are one line naming the flag, before any run."""
    _one_line_exit_2(capsys, place, argv, flag)


# ---------------------------------------------------------------------------------------
# Unknown names

UNKNOWN = [
    (["hol", "--trace", "{page}", "--transport", "carrier-pigeon"], "--transport"),
    (["hol", "--trace", "{page}", "--scheme", "hpack,gzip"], "--scheme"),
    (["push", "--trace", "{page}", "--policy", "none,shove"], "--policy"),
    (["push", "--trace", "{page}", "--protocol", "h4"], "--protocol"),
    (["trailers", "--versions", "h9"], "--versions"),
    (["trailers", "--hops", "pass,teleport"], "--hops"),
    (["crossstream", "--scheme", "magic"], "--scheme"),
    (["crossstream", "--transport", "sctp"], "--transport"),
    (["coalescing", "--trace", "{page}", "--mode", "none,carrier-pigeon"], "--mode"),
    (["coalescing", "--trace", "{page}", "--cc", "bbr"], "--cc"),
    (["demux", "--strategy", "teleport"], "--strategy"),
    (["demux", "--part", "neither"], "--part"),
    (["replay", "--trace", "{page}", "--stack", "h4"], "--stack"),
    (["interop", "encode", "{page}", "-o", "{tmp}/x.out", "--table", "0", "--blocked", "0", "--ack", "2"], "--ack"),
    (["frames", "--kind", "nope", "{page}"], "--kind"),
    (["trace", "synth", "{tmp}/x.har", "--format", "xml"], "--format"),
    (["batch", "nope", "--traces", "{page}", "--out", "{tmp}/res"], "nope"),
]


@pytest.mark.parametrize("argv, flag", UNKNOWN, ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_unknown_choices(capsys, place, argv, flag):
    """Rule: a name the flag does not know is one line naming the flag (and the choices)."""
    _one_line_exit_2(capsys, place, argv, flag)


# ---------------------------------------------------------------------------------------
# Output paths that cannot be written

UNWRITABLE = [
    (["hol", "--trace", "{page}", "--blocks", "{nodir}/x.csv"], "--blocks"),
    (["hol", "--trace", "{page}", "--blocks", "{dir}"], "--blocks"),
    (["trailers", "--rows", "{nodir}/x.csv"], "--rows"),
    (["crossstream", "--responses", "{nodir}/x.csv"], "--responses"),
    (["crossstream-bodies", "{nodir}/bodies"], "DIR"),
    (["crossstream-bodies", "{bin}"], "DIR"),
    (["coalescing", "--trace", "{page}", "--write-topology", "{nodir}/t.json"], "--write-topology"),
    (["demux", "--rows", "{nodir}/x.csv"], "--rows"),
    (["trace", "convert", "{page}", "{nodir}/out.qif"], "OUT"),
    (["trace", "convert", "{page}", "{dir}"], "OUT"),
    (["trace", "synth", "{nodir}/x.har"], "OUT"),
    (
        ["interop", "encode", "{page}", "-o", "{nodir}/x.out", "--table", "0", "--blocked", "0", "--ack", "0"],
        "--output",
    ),
    (["replay", "--trace", "{page}", "--stack", "h2", "--pcap", "{nodir}/x.pcap"], "--pcap"),
    (["replay", "--trace", "{page}", "--stack", "h2", "--keylog", "{nodir}/keys"], "--keylog"),
    (["replay", "--trace", "{page}", "--stack", "h3", "--qlog", "{nodir}"], "--qlog"),
    (["capture", "--synth", "5", "--proto", "h2", "--out", "{nodir}/x.har"], "--out"),
    (["capture", "--synth", "5", "--proto", "h2", "--out", "{tmp}/x.har", "--netlog", "{nodir}/n.json"], "--netlog"),
    (["batch", "hol", "--traces", "{page}", "--out", "{nodir}/res"], "--out"),
    (["batch", "hol", "--traces", "{page}", "--out", "{bin}"], "--out"),
    (["slides", "{page}", "-o", "{nodir}/deck"], "--output"),
    (["demo", "--out", "{nodir}/demo"], "--out"),
]


@pytest.mark.parametrize("argv, flag", UNWRITABLE, ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_unwritable_output_paths(capsys, place, argv, flag):
    """Rule: every flag that writes a file or folder checks, before any work, that its
    folder exists (and that a file is not a folder, a folder not a file): one line naming
    the flag, nothing written, no half-run simulation."""
    err = _one_line_exit_2(capsys, place, argv, flag)
    assert "missing" in err or "folder" in err or "file" in err, err


# ---------------------------------------------------------------------------------------
# A folder or random bytes where a file is read

BAD_INPUT = [
    (["trace", "info", "{dir}"], "{dir}"),
    (["trace", "info", "{bin}"], "{bin}"),
    (["trace", "convert", "{bin}", "{tmp}/out.qif"], "{bin}"),
    (["hol", "--trace", "{dir}"], "{dir}"),
    (["hol", "--trace", "{bin}"], "{bin}"),
    (["push", "--trace", "{bin}"], "{bin}"),
    (["trailers", "--trace", "{bin}"], "{bin}"),
    (["crossstream", "--trace", "{dir}"], "{dir}"),
    (["crossstream", "--bodies", "{bin}"], "{bin}"),
    (["coalescing", "--trace", "{bin}"], "{bin}"),
    (["coalescing", "--trace", "{page}", "--dns", "{dir}"], "{dir}"),
    (["coalescing", "--trace", "{page}", "--cert", "{bin}"], "{bin}"),
    (["replay", "--trace", "{bin}", "--stack", "h2"], "{bin}"),
    (["interop", "decode", "{bin}", "--qif", "{page}", "--table", "0", "--blocked", "0"], "{bin}"),
    (["interop", "decode", "{dir}", "--qif", "{page}", "--table", "0", "--blocked", "0"], "{dir}"),
    (["interop", "encode", "{dir}", "-o", "{tmp}/x.out", "--table", "0", "--blocked", "0", "--ack", "0"], "{dir}"),
    (["frames", "{dir}"], "{dir}"),
    (["batch", "hol", "--traces", "{page}", "--grid", "{dir}", "--out", "{tmp}/res"], "{dir}"),
    (["batch", "hol", "--traces", "{page}", "--grid", "{bin}", "--out", "{tmp}/res"], "{bin}"),
    (["slides", "{dir}", "-o", "{tmp}/deck"], "{dir}"),
    (["demo", "--trace", "{bin}", "--out", "{tmp}/demo"], "{bin}"),
]


@pytest.mark.parametrize("argv, path", BAD_INPUT, ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_folders_and_binary_files_as_input(capsys, place, argv, path):
    """Rule: a folder or a binary file given where a file is read is one line naming it."""
    _one_line_exit_2(capsys, place, argv, path)


def test_random_bytes_are_not_a_trace(capsys, place):
    """Rule: binary data that is not QPACK interop records is 'not a trace', naming the
    formats the workbench reads (it was read as a record declaring ~1e9 bytes)."""
    err = _one_line_exit_2(capsys, place, ["hol", "--trace", "{bin}"], "{bin}")
    assert "not a trace" in err and "HAR" in err and "QIF" in err and "interop" in err
    assert "declares" not in err


def test_truncated_interop_file_is_still_reported_as_truncated(capsys, place):
    """Rule: a real interop file cut short keeps its precise message (record and offset)."""
    from simulator.compression.commands import encode_interop
    from simulator.traces import load
    from simulator.traces.interop import write_records

    lists = [h for _, _, h in load(PAGE).header_lists("requests")][:20]
    whole = place / "page.out.256.100.1"
    write_records(whole, encode_interop(lists, 256, 100, 1))
    cut = place / "cut.out.256.100.1"
    cut.write_bytes(whole.read_bytes()[:-7])
    for path in (cut, place / "head.out.256.100.1"):
        if path.name.startswith("head"):
            path.write_bytes(whole.read_bytes()[:20])  # inside the first record
        assert main(["trace", "info", str(path)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "truncated record" in err and "byte offset" in err, err


# ---------------------------------------------------------------------------------------
# Batch grids: checked as the flags, before the first job


@pytest.mark.parametrize(
    "grid, needle",
    [
        ("loss = [0, 1.5]\n", "--loss"),
        ('rtt = ["50ms", "-100ms"]\n', "positive"),
        ("rtt = [0.1]\n", "no unit"),
        ("bw = [0]\n", "--bw"),
        ("jitter = [2]\n", "--jitter"),
        ('rtt = ["1e309ms"]\n', "finite"),
        # a million points of distinct values (a value listed twice is refused for that first)
        (
            "loss = ["
            + ", ".join(f"{i / 1e6}" for i in range(1000))
            + "]\njitter = ["
            + ", ".join(f"{i / 1e4}" for i in range(1000))
            + "]\n",
            "points",
        ),
    ],
)
def test_batch_grid_is_checked_before_any_job(capsys, tmp_path, grid, needle):
    """Rule: every grid value is read by the study's own flag checks before the first job
    (loss = [1.5] used to start every job and fail each): one line, exit 2, no results."""
    path = tmp_path / "grid.toml"
    path.write_text(grid)
    code = main(["batch", "hol", "--traces", str(PAGE), "--grid", str(path), "--out", str(tmp_path / "res")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and needle in err and str(path) in err, err
    assert not (tmp_path / "res").exists()


# ---------------------------------------------------------------------------------------
# Values that used to be taken silently


def test_parse_bandwidth_is_the_one_reading_of_bw():
    """Rule: none/inf/unlimited = no limit; 0 and negative bandwidths are errors."""
    for word in ("none", "inf", "unlimited", "None", None):
        assert parse_bandwidth(word) is None
    assert parse_bandwidth("10mbit") == 10e6 and parse_bandwidth(5e6) == 5e6
    for bad in ("0", 0, "-5mbit", "0mbit"):
        with pytest.raises(InputError, match="positive"):
            parse_bandwidth(bad)
    with pytest.raises(InputError, match="no unit"):
        parse_bandwidth("10", require_unit=True)


@pytest.mark.parametrize("word", ["none", "inf", "unlimited"])
def test_bw_none_is_unlimited_on_the_command_line(capsys, word):
    """Rule: --bw none (inf, unlimited) is the one way to say no bandwidth limit."""
    assert main(["trailers", "--versions", "h2", "--strategy", "trailer", "--bw", word, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["params"]["bandwidth_bps"] is None


def test_plain_numbers_stay_for_python_callers():
    """Rule: only the command line asks for units; Python calls keep plain numbers."""
    assert parse_duration("0.1") == 0.1 and parse_duration(0.1) == 0.1 and parse_rate("1e6") == 1e6
    assert parse_byte_rate("1234") == 1234
    with pytest.raises(InputError, match="no unit"):
        parse_duration("100", require_unit=True)
    with pytest.raises(InputError, match="no unit"):
        parse_byte_rate("100", require_unit=True)
    assert parse_duration("0", require_unit=True) == 0.0


def test_dict_size_is_bytes_and_a_power_of_two(capsys):
    """Rule: --dict-size is bytes, as the help says, and a size the draft can send (2^DSize)."""
    from simulator.studies.crossstream import CrossstreamParams

    for bad in ("99", "17", "100KiB", "512"):
        assert main(["crossstream", "--dict-size", bad]) == 2
        err = capsys.readouterr().err
        assert "--dict-size" in err and "2^" in err and err.count("\n") == 1
    with pytest.raises(InputError):
        CrossstreamParams(dictionary_bytes=99)
    assert CrossstreamParams(dictionary_bytes=1 << 16).dictionary_bytes == 65536


def test_hol_takes_an_interop_files_table_from_its_name(capsys, tmp_path):
    """Rule: an interop file was encoded with the capacity and blocked limit of its name;
    hol uses them unless --table / --blocked are given, and says so."""
    from simulator.compression.commands import encode_interop
    from simulator.traces import load
    from simulator.traces.interop import write_records

    lists = [h for _, _, h in load(PAGE).header_lists("requests")][:12]
    path = tmp_path / "page.out.256.7.1"
    write_records(path, encode_interop(lists, 256, 7, 1))
    assert main(["hol", "--trace", str(path), "--scheme", "qpack", "--json"]) == 0
    out, err = capsys.readouterr()
    params = json.loads(out)["params"]
    assert (params["table_bytes"], params["max_blocked"]) == (256, 7)
    assert "256" in err and "file name" in err
    assert main(["hol", "--trace", str(path), "--scheme", "qpack", "--table", "4096", "--json"]) == 0
    out, err = capsys.readouterr()
    params = json.loads(out)["params"]
    assert (params["table_bytes"], params["max_blocked"]) == (4096, 7)
    assert main(["hol", "--trace", str(PAGE), "--scheme", "qpack", "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["params"]["table_bytes"] == 4096 and err == ""


# ---------------------------------------------------------------------------------------
# Through a real process: exit status and stderr as a shell sees them


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["hol", "--trace", "{page}", "--rtt", "-100ms"], "--rtt"),
        (["hol", "--trace", "{page}", "--blocks", "{nodir}/x.csv"], "--blocks"),
        (["trace", "synth", "{nodir}/x.har"], "OUT"),
        (["hol", "--trace", "{bin}"], "not a trace"),
        (["trailers", "--rtt", "100"], "no unit"),
    ],
)
def test_subprocess_exit_2_one_line(place, argv, needle):
    """Rule: the same through a process: status 2, one stderr line, nothing on stdout."""
    before = _files(place)
    run = subprocess.run(
        [sys.executable, "-m", "simulator.cli", *_fill(argv, place)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr and needle in run.stderr, run.stderr
    assert _files(place) == before


# ---------------------------------------------------------------------------------------
# One command imports its own code only


def test_command_homes_match_what_each_module_registers():
    """Rule: ``cli.COMMAND_HOMES`` (and the study registry) name the module that registers
    every command, so ``workbench X`` may import X's module alone."""
    import argparse
    import importlib

    from simulator import cli
    from simulator.studies.registry import STUDIES

    for module in cli.COMMAND_MODULES:
        sub = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(module).add_commands(sub)
        for command in sub.choices:
            home = cli._home(command)
            if module == "simulator.studies.registry":
                assert home is not None and home.startswith("study:") and home[6:] in STUDIES, command
                assert command in cli.build_parser(command)._subparsers._group_actions[0].choices
            else:
                assert home == module, (command, home, module)


def test_one_command_imports_no_other_study():
    """Rule: ``workbench crossstream ...`` parses without importing the other studies."""
    code = (
        "import sys; from simulator.cli import build_parser; "
        "build_parser('crossstream').parse_args(['crossstream', '--leak-lengths', '0']); "
        "print(sorted(m for m in sys.modules if m.startswith('simulator.studies.') and m.count('.') == 2))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert run.returncode == 0, run.stderr
    loaded = eval(run.stdout)
    assert "simulator.studies.crossstream" in loaded
    assert not {"simulator.studies.hol", "simulator.studies.push", "simulator.studies.replay"} & set(loaded), loaded
