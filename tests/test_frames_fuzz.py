"""Bounded differential fuzzing (a few seconds): random and mutated bytes never crash,
hang or make the C scanner and its pure-Python twin disagree.  ``make asan`` runs the
same fuzzer longer against an AddressSanitizer build of the extension."""

from __future__ import annotations

import signal

import pytest

from simulator.frames import implementations
from simulator.frames.fuzz import corpus, run


@pytest.fixture
def watchdog():
    """A hang fails the test instead of stalling the suite."""

    def boom(signum, frame):
        raise TimeoutError("fuzz run hung")

    old = signal.signal(signal.SIGALRM, boom)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def test_fuzz_c_against_python(watchdog):
    impls = implementations()
    if "c" not in impls:
        pytest.skip("the C extension is not built")
    stats = run(seconds=4.0, seed=1234, impls=impls, corpus_size=300)
    assert stats["inputs"] >= 300


def test_fuzz_single_implementation_never_crashes(watchdog):
    # Without the extension there is nothing to compare, but the twin must still
    # survive every input (and with it, every entry point of the active one).
    for name, impl in implementations().items():
        run(seconds=0.5, seed=99, impls={name: impl}, corpus_size=60)


def test_corpus_is_deterministic():
    assert corpus(5, 60) == corpus(5, 60)
