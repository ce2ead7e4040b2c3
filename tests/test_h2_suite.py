"""h2's own test suite as a differential test of the scanner buffer.

The installed h2 version's sdist (which ships its ``tests/``) is downloaded from the
package registry with pip into ``build/h2-suite/`` (once; nothing of it is committed),
and its tests run in a subprocess against the installed h2 with
``simulator.frames.h2buffer.install`` applied to every ``H2Connection``
(``tests/h2_suite_plugin.py``): once with the C extension and once with the
pure-Python twin (``WORKBENCH_PURE_PYTHON=1``).  Every test must pass, as it does with
h2's own buffer -- h2's tests check RFC 9113 framing, flow control (section 6.9),
header blocks (sections 6.2, 6.10), padding (section 6.1) and the exact exceptions.

Skipped, with a note saying why, when the registry cannot be reached.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from importlib.metadata import version
from pathlib import Path

import pytest

from simulator.frames import implementations

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "build" / "h2-suite"
H2_VERSION = version("h2")
DOWNLOAD_TIMEOUT_S = 180
SUITE_TIMEOUT_S = 600


def _download_failed(why: str):
    pytest.skip(
        f"h2's own test suite not run: the h2=={H2_VERSION} sdist could not be downloaded "
        f"from the package registry ({why})"
    )


def h2_suite_dir() -> Path:
    """``build/h2-suite/h2-VERSION`` holding the sdist's ``tests/`` (downloaded once; a
    lock keeps parallel test workers from downloading it twice)."""
    target = CACHE / f"h2-{H2_VERSION}"
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / "tests" / "test_basic_logic.py").exists():
            return target
        with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
            cmd = [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--no-deps",
                "--no-binary",
                ":all:",
                "--retries",
                "1",
                "--timeout",
                "20",
                f"h2=={H2_VERSION}",
                "-d",
                tmp,
            ]
            try:
                done = subprocess.run(cmd, capture_output=True, text=True, timeout=DOWNLOAD_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                _download_failed(f"pip download took over {DOWNLOAD_TIMEOUT_S} s")
            sdists = sorted(Path(tmp).glob("h2-*.tar.gz"))
            if done.returncode != 0 or not sdists:
                last = (done.stderr.strip().splitlines() or ["no sdist"])[-1]
                _download_failed(f"pip: {last}")
            staging = Path(tmp) / "extract"
            prefix = f"h2-{H2_VERSION}/tests/"
            with tarfile.open(sdists[0]) as tar:
                members = [m for m in tar.getmembers() if m.name.startswith(prefix) and (m.isfile() or m.isdir())]
                if not members:
                    pytest.fail(f"the h2=={H2_VERSION} sdist has no tests/ directory")
                tar.extractall(staging, members=members, filter="data")
            root = staging / f"h2-{H2_VERSION}"
            # Its own ini file, so that neither h2's nor this repository's pytest settings apply.
            (root / "pytest.ini").write_text("[pytest]\n")
            shutil.rmtree(target, ignore_errors=True)
            root.rename(target)
    return target


@pytest.mark.parametrize("impl_name", ["c", "python"])
def test_h2_own_suite_passes_with_the_scanner_buffer(impl_name, tmp_path):
    if impl_name not in implementations():
        pytest.skip("the C extension is not built")
    suite = h2_suite_dir()
    report_path = tmp_path / "report.json"
    env = dict(
        os.environ,
        WORKBENCH_PURE_PYTHON="1" if impl_name == "python" else "0",
        WORKBENCH_H2_SUITE_REPORT=str(report_path),
        PYTHONPATH=os.pathsep.join([str(ROOT / "tests"), str(ROOT), os.environ.get("PYTHONPATH", "")]),
    )
    env.pop("WORKBENCH_FRAMES_EXT", None)
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "h2_suite_plugin",
        "-x",
        "--rootdir",
        str(suite),
        "tests",
    ]
    done = subprocess.run(cmd, cwd=suite, env=env, capture_output=True, text=True, timeout=SUITE_TIMEOUT_S)
    tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-30:])
    assert done.returncode == 0, f"h2 {H2_VERSION}'s own tests failed with the scanner buffer:\n{tail}"
    report = json.loads(report_path.read_text())
    assert report["implementation"] == impl_name
    outcomes = report["outcomes"]
    assert outcomes["failed"] == 0 and outcomes["error"] == 0, tail
    assert outcomes["passed"] >= 1000, tail  # h2 4.4.1 has 1,662 tests
    # The buffer really was in use: on (nearly) every connection, and DATA frames were
    # built by the scanner rather than by hyperframe.
    assert report["connections"] >= 1000
    assert report["frames"] > 0 and report["scanner_built_frames"] > 0
