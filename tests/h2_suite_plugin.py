"""pytest plugin for running h2's own test suite with the scanner buffer on every connection.

Loaded with ``-p h2_suite_plugin`` by ``tests/test_h2_suite.py`` into a pytest run over
the ``tests/`` of the installed h2 version's sdist (not this repository's tests).  Every
``h2.connection.H2Connection`` gets ``simulator.frames.h2buffer.install`` right after
its own ``__init__``; at the end the plugin writes what happened (implementation,
connections, frames the scanner built itself, test outcomes) to the JSON file named by
``WORKBENCH_H2_SUITE_REPORT``.  Hypothesis runs without deadlines and derandomized.
"""

from __future__ import annotations

import json
import os

import h2.connection
from hypothesis import settings

import simulator.frames as frames
from simulator.frames.h2buffer import ScannerFrameBuffer, install
from simulator.frames.h2frames import frame_classes

# No hypothesis deadlines (a timing assertion, flaky on a busy machine), no example
# database written into the cache, and the same examples on every run.
settings.register_profile("workbench-h2-suite", deadline=None, database=None, derandomize=True)
settings.load_profile("workbench-h2-suite")

_counts = {"connections": 0, "frames": 0, "scanner_built_frames": 0}
_built = tuple(frame_classes(frames.get_implementation()))
_original_init = h2.connection.H2Connection.__init__
_original_next = ScannerFrameBuffer.__next__


def _init(self, *args, **kwargs):
    _original_init(self, *args, **kwargs)
    install(self)
    assert isinstance(self.incoming_buffer, ScannerFrameBuffer)
    _counts["connections"] += 1


def _next(self):
    frame = _original_next(self)
    _counts["frames"] += 1
    if isinstance(frame, _built):
        _counts["scanner_built_frames"] += 1
    return frame


h2.connection.H2Connection.__init__ = _init
ScannerFrameBuffer.__next__ = _next


def pytest_terminal_summary(terminalreporter):
    stats = terminalreporter.stats
    outcomes = {key: len(stats.get(key, [])) for key in ("passed", "failed", "error", "skipped", "xfailed")}
    report = {"implementation": frames.IMPLEMENTATION, **_counts, "outcomes": outcomes}
    terminalreporter.write_line(f"workbench scanner buffer: {json.dumps(report)}")
    path = os.environ.get("WORKBENCH_H2_SUITE_REPORT")
    if path:
        with open(path, "w") as fh:
            json.dump(report, fh)
