"""The sampled profile behind ``workbench bench stacks``' own-share figure (issue 13):
which samples count as the workbench's own code."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.bench import own_share_of_stacks, sampled_profile

TRACES = Path(__file__).resolve().parent.parent / "traces"

STACKS = [
    # the engine's loop running an arrival that ends in aioquic: aioquic's
    "<module> (simulator/cli.py:76);run_until (simulator/stacks/common.py:578);Simulator.run (simulator/engine.py:91);"
    "Link._arrive (simulator/net/link.py:268);QuicConnection.receive_datagram (aioquic/quic/connection.py:1109) 6",
    # our own function as the innermost frame: ours
    "<module> (simulator/cli.py:76);run_until (simulator/stacks/common.py:578);"
    "Simulator.run (simulator/engine.py:91) 3",
    # a dataclass __init__ generated for our Packet, called by our driver: ours
    "<module> (simulator/cli.py:76);run_until (simulator/stacks/common.py:578);"
    "_H3End.transmit (simulator/stacks/h3.py:410);__init__ (<string>:2) 1",
    # outside the replay loop: start-up imports (importlib frames are not ours)
    "<module> (simulator/cli.py:3);_find_and_load (<frozen importlib._bootstrap>:1176) 10",
    # a path under site-packages that happens to contain "simulator/" is a library's
    "<module> (simulator/cli.py:76);run_until (simulator/stacks/common.py:578);"
    "f (/venv/lib/python3.11/site-packages/other/simulator/x.py:1) 2",
]


def test_own_share_counts_innermost_frames_and_generated_code_for_its_caller():
    shares = own_share_of_stacks(STACKS, {"loop": "run_until", "process": None})
    loop, process = shares["loop"], shares["process"]
    assert loop["samples"] == 12 and loop["own_samples"] == 4
    assert process["samples"] == 22 and process["own_samples"] == 4
    assert dict(loop["own_top"]) == {"engine.py:Simulator.run": 3 / 12, "stacks/h3.py:_H3End.transmit": 1 / 12}


def test_a_scope_matches_methods_by_their_name():
    shares = own_share_of_stacks(STACKS, {"run": "run"})  # Simulator.run is "run"
    assert shares["run"]["samples"] == 9


def _profile_or_skip(argv, at_least=100, tries=6):
    """The replay loop's samples over as many profiled runs as it takes to draw ``at_least``
    (at most ``tries``): 1,000 samples a second, and the QUIC model's replay loop runs in
    under 0.2 s, so a loaded machine (py-spy's sampler gets less of it) may draw too few in one."""
    samples = own = 0
    for _ in range(tries):
        profile = sampled_profile(argv, scopes={"loop": "run_until"}, rate_hz=1000)
        if "error" in profile:
            pytest.skip(profile["error"])
        samples += profile["loop"]["samples"]
        own += profile["loop"]["own_samples"]
        if samples >= at_least:
            break
    return {"samples": samples, "own_share": own / samples if samples else 0.0}


def test_on_real_profiles_the_model_replay_is_mostly_ours_and_aioquic_is_mostly_not():
    """py-spy's real output: the QUIC model is the workbench's own code from end to end, so
    nearly every sample in its loop is ours; the real HTTP/3 replay spends most of its loop
    in aioquic.  (If py-spy's paths stopped matching ``simulator/``, the first would fail.)"""
    # about 0.15-0.2 s and 0.6 s of replay loop: over a hundred samples each
    model = _profile_or_skip(
        [
            "replay",
            "--trace",
            str(TRACES / "synthetic-many-origins.har"),
            "--stack",
            "h3",
            "--model",
            "--loss",
            "0.01",
            "--json",
        ]
    )
    real = _profile_or_skip(
        ["replay", "--trace", str(TRACES / "synthetic-page.har"), "--stack", "h3", "--loss", "0.01", "--json"]
    )
    assert model["samples"] > 100 and real["samples"] > 100
    assert model["own_share"] > 0.8
    assert real["own_share"] < 0.5
