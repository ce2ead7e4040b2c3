"""The lab's Explore panel (notebook 09): the page-load model's out-of-sample predictions held
against real loads, one link condition at a time, from a validation's result
(``workbench lab validate --report``; the committed one is ``docs/lab/validation.json``).

Nothing is simulated or measured here: the panel reads a finished validation, so it draws at
once and anyone can look at the lab's figures without root or a browser.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pandas as pd

from .controls import Options
from .explore import Explorer, Inputs
from .panels_common import _title

__all__ = ["lab_panel", "COMMITTED_VALIDATION", "load_validation"]

COMMITTED_VALIDATION = Path(__file__).resolve().parents[2] / "docs" / "lab" / "validation.json"


def load_validation(path: str | Path) -> dict:
    """A validation result (``validation.json``); ``InputError`` for what is not one."""
    from ..errors import InputError

    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"is not a lab validation result ({exc}).", path=str(path)) from None
    if not isinstance(data, dict) or not isinstance(data.get("conditions"), list) or not data["conditions"]:
        raise InputError(
            "holds no validated condition (write one with workbench lab validate --report).", path=str(path)
        )
    return data


def _label(entry: dict) -> str:
    cond = entry["condition"]
    return f"{cond['conditions']} {cond['protocol']}"


def lab_panel(validation: str | Path = COMMITTED_VALIDATION) -> Explorer:
    """One condition of a lab validation: every page's predicted onLoad against its measured
    runs, and its error beside the lab's run-to-run floor."""
    result = load_validation(validation)
    entries = ([result["reference"]] if result.get("reference") else []) + result["conditions"]
    labels = [_label(e) + (" (reference)" if i == 0 and result.get("reference") else "") for i, e in enumerate(entries)]
    controls = {
        "condition": Options(
            "condition", tuple(zip(labels, range(len(labels)))), 1 if len(labels) > 1 else 0, style="dropdown"
        )
    }

    def run(v, data):
        pool = ([data["reference"]] if data.get("reference") else []) + data["conditions"]
        return pool[min(v["condition"], len(pool) - 1)]

    def draw(entry, v, fig):
        scatter, bars = fig.subplots(1, 2)
        pages = [p for p in entry["pages"] if p["predicted_onload_s"] is not None]
        names = [Path(p["trace"]).stem[:28] for p in pages]
        from .plots import predicted_vs_measured

        predicted_vs_measured(scatter, [(p, "tab:blue") for p in pages])
        scatter.set_xlabel("measured onLoad (s, runs as range)")
        scatter.set_ylabel("predicted (s)")
        _title(
            scatter,
            f"{_label(entry)}: MAPE {entry['mape_percent'] or 0:.1f}%, floor {entry['floor_mape_percent'] or 0:.1f}%",
        )
        errors = [p["error_percent"] for p in pages]
        floors = [statistics.fmean(p["floor_ape_percent"]) if p["floor_ape_percent"] else 0.0 for p in pages]
        y = range(len(pages))
        bars.barh(list(y), errors, color=["tab:red" if e > 0 else "tab:green" for e in errors])
        bars.barh(list(y), floors, left=[-f for f in floors], height=0.3, color="grey", alpha=0.6)
        bars.barh(list(y), floors, height=0.3, color="grey", alpha=0.6)
        bars.set_yticks(list(y))
        bars.set_yticklabels(names)
        bars.axvline(0, color="black", lw=0.8)
        bars.set_xlabel("predicted vs measured (%); grey: the lab's floor")
        table = pd.DataFrame(
            {
                "measured (s)": [statistics.median(p["measured_onload_s"]) for p in pages],
                "predicted (s)": [p["predicted_onload_s"] for p in pages],
                "error (%)": errors,
                "floor (%)": floors,
            },
            index=names,
        )
        table.index.name = "page"
        return table.round(3)

    return Explorer(
        "The lab: the model's predictions against real loads",
        controls,
        run,
        draw,
        inputs=Inputs(
            load_validation,
            suffixes=(),
            builtin={"committed validation": result},
            default="committed validation",
            note="a validation.json written by workbench lab validate --report",
        ),
        figsize=(10.0, 4.2),
    )
