"""The Explore panels of the study notebooks: one function per study.

Each ``*_panel(...)`` returns an ``explore.Explorer``: the study's parameter description
(the controls, with defaults small enough that one update takes well under 2 s on the
default input), ``run(values, input)`` (ONE call of the study's ``run``) and
``draw(result, values, fig) -> table`` (its figure on the given matplotlib ``Figure``,
titled with the controls' labels and the run's actual values, and its key table: the
key results first, columns named for a reader with their units, within the output
area's width) and, where a control cannot act on some inputs or values, ``notes``
saying why (``explore.Inert``).  A notebook shows one as the last expression of its Explore cell,
passing its own parameters (``base``) so the panel starts where the notebook stands.
``PANELS`` maps each notebook to its panel (the benchmark ``bench_explore`` times them).
"""

from __future__ import annotations

# The panels live in two modules (``panels_protocol``: 01 and 03 to 06; ``panels_pageload``:
# 02, 07 and 08; ``panels_priorities``: 10) on the helpers of ``panels_common``; their names stay importable from here.
from .panels_common import KIB  # noqa: F401
from .panels_pageload import PUSH_POLICIES, coalescing_panel, fidelity_panel, push_panel  # noqa: F401
from .panels_lab import lab_panel
from .panels_priorities import priorities_panel
from .panels_pageload import shaped_topology  # noqa: F401 - the tests draw topologies with it
from .panels_protocol import (
    CROSS_SCHEMES,  # noqa: F401
    DEMUX_COLORS,  # noqa: F401
    HOP_POLICIES,  # noqa: F401
    STACK_SETUPS,  # noqa: F401
    TRAILER_COLORS,  # noqa: F401
    crossstream_panel,
    demux_panel,
    hol_panel,
    stacks_panel,
    trailers_panel,
)

__all__ = [
    "hol_panel",
    "push_panel",
    "trailers_panel",
    "crossstream_panel",
    "stacks_panel",
    "demux_panel",
    "coalescing_panel",
    "fidelity_panel",
    "lab_panel",
    "priorities_panel",
    "PANELS",
]


PANELS = {
    "01-hol-blocking": hol_panel,
    "02-push-vs-early-hints": push_panel,
    "03-trailers": trailers_panel,
    "04-cross-stream-compression": crossstream_panel,
    "05-models-vs-real-stacks": stacks_panel,
    "06-demux": demux_panel,
    "07-origin-coalescing": coalescing_panel,
    "08-fidelity": fidelity_panel,
    "09-lab": lab_panel,
    "10-priorities": priorities_panel,
}
