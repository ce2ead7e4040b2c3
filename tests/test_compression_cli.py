"""``workbench interop decode|encode`` on the published QPACK offline-interop files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from simulator.cli import main
from simulator.compression.commands import decode_interop

TRACES = Path(__file__).resolve().parents[1] / "traces"  # bundled QIFs and interop files (MIT, see traces/README.md)
INTEROP = sorted((TRACES / "qpack-interop").glob("*/*.out.*"))


def qif_for(path: Path) -> Path:
    return TRACES / "qif" / (path.name.split(".out.")[0] + ".qif")


@pytest.mark.parametrize("path", INTEROP, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_interop_file_decodes_to_its_qif(path, capsys):
    assert main(["interop", "decode", str(path), "--qif", str(qif_for(path))]) == 0
    out = capsys.readouterr().out
    assert " header lists match " in out and "mismatch" not in out


def test_the_bundled_interop_files_are_all_there():
    """Two encoders x (fb-req-hq, fb-resp-hq, netbsd-hq) x four settings (traces/README.md)."""
    assert len(INTEROP) == 24
    assert all(qif_for(p).is_file() for p in INTEROP)


def test_stream_ids_and_record_order_of_published_files():
    """The published files number sections 1, 2, 3 ... per header list."""
    from simulator.traces.interop import read_records

    for path in INTEROP[:4]:
        ids = [s for s, _ in read_records(str(path)) if s]
        assert ids == list(range(1, len(ids) + 1))


def test_wrong_reference_exits_1(capsys):
    path = next(p for p in INTEROP if p.name.startswith("netbsd-hq.out.4096"))
    other = TRACES / "qif" / "draft-examples.qif"
    assert main(["interop", "decode", str(path), "--qif", str(other)]) == 1
    assert "first mismatch: list 0" in capsys.readouterr().out


def test_malformed_files_exit_2_with_one_line(tmp_path, capsys):
    source = next(p for p in INTEROP if p.name == "fb-req-hq.out.4096.100.1")
    data = source.read_bytes()
    qif = str(qif_for(source))
    cases = {
        "truncated": data[:30_000],
        "cut-header": data[: len(data) - 3 - 200] + data[-3:],
        "empty": b"",
    }
    mutated = bytearray(data)
    for i in range(40, len(mutated), 997):
        mutated[i] ^= 0x5A
    cases["mutated"] = bytes(mutated)
    for name, blob in cases.items():
        path = tmp_path / f"{name}.out.4096.100.1"
        path.write_bytes(blob)
        assert main(["interop", "decode", str(path), "--qif", qif]) == 2, name
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err and str(path) in err, (name, err)
    # Random single-byte corruption anywhere: never a crash, only a mismatch (1) or an error (2).
    for k in range(25):
        blob = bytearray(data)
        blob[(k * 7919) % len(blob)] ^= 0xFF
        path = tmp_path / f"m{k}.out.4096.100.1"
        path.write_bytes(bytes(blob))
        assert main(["interop", "decode", str(path), "--qif", qif]) in (0, 1, 2)
        capsys.readouterr()


def test_cli_subprocess_has_no_traceback(tmp_path):
    source = next(p for p in INTEROP if p.name == "netbsd-hq.out.256.100.1")
    bad = tmp_path / "netbsd-hq.out.256.100.1"
    bad.write_bytes(source.read_bytes()[:-5])
    run = subprocess.run(
        [sys.executable, "-m", "simulator.cli", "interop", "decode", str(bad), "--qif", str(qif_for(source))],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 2
    assert "Traceback" not in run.stderr and run.stderr.strip().count("\n") == 0
    assert "byte offset" in run.stderr


@pytest.mark.parametrize("table,blocked,ack", [(4096, 100, 1), (4096, 100, 0), (256, 0, 1), (0, 0, 0)])
def test_encode_then_decode_round_trips(tmp_path, capsys, table, blocked, ack):
    qif = TRACES / "qif" / "fb-req-hq.qif"
    out = tmp_path / f"fb-req-hq.out.{table}.{blocked}.{ack}"
    assert (
        main(
            [
                "interop",
                "encode",
                str(qif),
                "-o",
                str(out),
                "--table",
                str(table),
                "--blocked",
                str(blocked),
                "--ack",
                str(ack),
            ]
        )
        == 0
    )
    assert main(["interop", "decode", str(out), "--qif", str(qif)]) == 0
    assert "383/383 header lists match" in capsys.readouterr().out
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]  # atomic write left nothing
    # Same layout as the published files: sections on streams 1..N, encoder records before their use.
    decoded = decode_interop(str(out))
    assert [s for s, _ in decoded] == list(range(1, 384))


def test_decode_needs_settings_when_the_name_has_none(tmp_path, capsys):
    path = tmp_path / "plain.bin"
    path.write_bytes(b"\x00" * 12)
    qif = tmp_path / "x.qif"
    qif.write_bytes(b"a\tb\n")
    assert main(["interop", "decode", str(path), "--qif", str(qif)]) == 2
    assert "--table" in capsys.readouterr().err
