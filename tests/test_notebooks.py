"""Every notebook runs top to bottom on the small parameter set of its `parameters` cell.

Notebooks follow the papermill convention: the cell tagged ``parameters`` holds a small
parameter set, so this test stays fast and a full-size run is the same notebook with
other parameters.  Outputs are not written back: the committed notebooks stay clean.
"""

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs_top_to_bottom(path, tmp_path, monkeypatch):
    nb = nbformat.read(path, as_version=4)
    tagged = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert tagged, f"{path.name} has no cell tagged 'parameters'"
    monkeypatch.setenv("WORKBENCH_NOTEBOOK_OUT", str(tmp_path))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    corpus = Path(__file__).resolve().parents[2] / "shared" / "traces" / "har-real"
    if corpus.is_dir():          # notebook 08 adds the larger corpus of real HARs beside the clone
        monkeypatch.setenv("WORKBENCH_HAR_CORPUS", str(corpus))
    client = NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors
