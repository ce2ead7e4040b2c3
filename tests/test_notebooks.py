"""Every notebook runs top to bottom on the small parameter set of its `parameters` cell.

Notebooks follow the papermill convention: the cell tagged ``parameters`` holds a small
parameter set, so this test stays fast and a full-size run is the same notebook with
other parameters.  Outputs are not written back: the committed notebooks stay clean.
Each notebook runs once per test session (``notebook_runs``), as ``workbench slides``
runs it; ``test_decks.py`` builds its deck from the same run.
"""

import nbformat

import pytest
from notebook_runs import NOTEBOOKS, executed


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs_top_to_bottom(path, tmp_path_factory):
    nb = nbformat.read(path, as_version=4)
    tagged = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert tagged, f"{path.name} has no cell tagged 'parameters'"
    ran = executed(path, tmp_path_factory)  # raises nbclient's error, with the cell's traceback
    errors = [
        o for c in ran.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.get("output_type") == "error"
    ]
    assert not errors
