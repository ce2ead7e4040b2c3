"""Every study by name: ``workbench <name>`` and ``workbench batch <name>`` both come from here.

Adding a study: its package under ``simulator/studies/`` with a ``STUDY`` registration
(``simulator.studies.base.Study``) in its ``cli`` module, and one line in ``STUDIES``
(a worked example: ``docs/extending.md``).
"""

from __future__ import annotations

import importlib

from ..errors import InputError
from .base import Study

__all__ = ["STUDIES", "get", "all_studies", "add_commands"]

# name -> the module that holds its registration, ``STUDY`` (imported when first asked for)
STUDIES = {
    "hol": "simulator.studies.hol.cli",
    "push": "simulator.studies.push.cli",
    "trailers": "simulator.studies.trailers.cli",
    "crossstream": "simulator.studies.crossstream.cli",
    "coalescing": "simulator.studies.coalescing.cli",
    "demux": "simulator.studies.demux.cli",
    "replay": "simulator.studies.replay.cli",
    "fidelity": "simulator.studies.fidelity.cli",
    "priorities": "simulator.studies.priorities.cli",
    # Not a model: one real page load in the lab (a measurement), registered so that the
    # batch runner's store, resume and Dask run it over pages x conditions x runs.
    "lab-load": "simulator.lab.study",
}


def get(name: str) -> Study:
    """The registration of study ``name``."""
    if name not in STUDIES:
        raise InputError(f"unknown study {name!r} (studies: {', '.join(sorted(STUDIES))})")
    return importlib.import_module(STUDIES[name]).STUDY


def all_studies() -> list[Study]:
    """Every registered study, in the registry's order."""
    return [get(name) for name in STUDIES]


def add_commands(sub) -> None:
    """``workbench <name>`` for every study (the CLI's command module for the studies)."""
    for study in all_studies():
        study.add_commands(sub)
