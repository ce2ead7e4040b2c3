"""HTTP/3 against HTTP/2 in the lab and in the model: the sign and size of the difference.

From a validation (``lab validate``'s result, or its results folder re-predicted with
``validate.analyse``): for every page measured over both protocols at the same link
condition, the measured difference (median onLoad over h3 minus median over h2) beside the
model's (predicted h3 minus predicted h2, both from the same h2 reference HAR).  A measured
difference smaller than the runs' own spread (half the range of the h3 runs plus half the
range of the h2 runs) has no sign the lab can vouch for: it is counted apart.

Hand-written here: the pairing and the statistics; ``workbench lab h3-check`` prints them and
writes ``validation-h3.md`` and ``.json``.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

__all__ = ["h3_against_h2", "pair_difference", "h3_table", "write_h3_report"]


def _half_range(runs: list[float]) -> float:
    return (max(runs) - min(runs)) / 2 if len(runs) > 1 else 0.0


def _sign(v: float) -> int:
    return (v > 0) - (v < 0)


def pair_difference(h2: dict, h3: dict) -> dict | None:
    """One page at one condition over both protocols (``validate``'s page entries): the
    measured and predicted h3 - h2 onLoad, the runs' spread, and whether the signs agree;
    None when either prediction is missing."""
    if h2.get("predicted_onload_s") is None or h3.get("predicted_onload_s") is None:
        return None
    m2, m3 = statistics.median(h2["measured_onload_s"]), statistics.median(h3["measured_onload_s"])
    measured = m3 - m2
    predicted = h3["predicted_onload_s"] - h2["predicted_onload_s"]
    spread = _half_range(h2["measured_onload_s"]) + _half_range(h3["measured_onload_s"])
    return {
        "trace": h2["trace"],
        "measured_h2_s": round(m2, 4),
        "measured_h3_s": round(m3, 4),
        "measured_difference_s": round(measured, 4),
        "measured_difference_percent": round(100 * measured / m2, 2),
        "predicted_h2_s": h2["predicted_onload_s"],
        "predicted_h3_s": h3["predicted_onload_s"],
        "predicted_difference_s": round(predicted, 4),
        "predicted_difference_percent": round(100 * predicted / h2["predicted_onload_s"], 2),
        "spread_s": round(spread, 4),
        "determined": abs(measured) > spread,
        "sign_agrees": _sign(measured) == _sign(predicted),
    }


def _summary(pairs: list[dict]) -> dict:
    determined = [p for p in pairs if p["determined"]]
    out = {
        "pairs": len(pairs),
        "sign_agrees": sum(p["sign_agrees"] for p in pairs),
        "determined": len(determined),
        "determined_sign_agrees": sum(p["sign_agrees"] for p in determined),
    }
    if pairs:
        out["median_measured_difference_s"] = round(statistics.median(p["measured_difference_s"] for p in pairs), 4)
        out["median_predicted_difference_s"] = round(statistics.median(p["predicted_difference_s"] for p in pairs), 4)
        out["median_abs_error_s"] = round(
            statistics.median(abs(p["predicted_difference_s"] - p["measured_difference_s"]) for p in pairs), 4
        )
    return out


def h3_against_h2(validation: dict) -> dict:
    """Per link condition measured over both protocols, every page's pair (``pair_difference``)
    and the sign agreement; ``summary`` over all, over the lossless and over the lossy conditions."""
    entries = ([validation["reference"]] if validation.get("reference") else []) + list(validation["conditions"])
    by_link: dict[str, dict[str, dict]] = {}
    for e in entries:
        by_link.setdefault(e["condition"]["conditions"], {})[e["condition"]["protocol"]] = e
    conditions = []
    for link, protos in by_link.items():
        if "h2" not in protos or "h3" not in protos:
            continue
        h3_pages = {p["trace"]: p for p in protos["h3"]["pages"]}
        pairs = [
            d
            for p in protos["h2"]["pages"]
            if p["trace"] in h3_pages
            for d in [pair_difference(p, h3_pages[p["trace"]])]
            if d is not None
        ]
        cond = protos["h2"]["condition"]
        conditions.append(
            {
                "condition": link,
                "loss": cond["loss"],
                "h2_in_sample": protos["h2"] is validation.get("reference"),
                "pages": pairs,
                **_summary(pairs),
            }
        )
    every = [p for c in conditions for p in c["pages"]]
    lossy = [p for c in conditions if str(c["loss"]) not in ("0", "0.0") for p in c["pages"]]
    lossless = [p for c in conditions if str(c["loss"]) in ("0", "0.0") for p in c["pages"]]
    return {
        "conditions": conditions,
        "summary": {"all": _summary(every), "lossless": _summary(lossless), "loss": _summary(lossy)},
        "params": {"reference": validation.get("params", {}).get("reference")},
    }


def _name(trace: str) -> str:
    p = Path(trace)
    return p.name if p.is_absolute() or ".." in p.parts else trace


def h3_table(result: dict) -> str:
    """Per condition: pages, sign agreement (all and where the lab's sign is clear), medians."""
    lines = [
        "| condition | pages | sign agrees | lab's sign clear: agrees | median measured h3 - h2 | "
        "median predicted h3 - h2 | median abs error |",
        "|---|---|---|---|---|---|---|",
    ]
    ms = lambda v: f"{1000 * v:+.0f} ms"  # noqa: E731
    for c in result["conditions"]:
        if not c["pairs"]:
            continue
        lines.append(
            f"| `{c['condition']}`{' (h2 in sample)' if c['h2_in_sample'] else ''} | {c['pairs']} | "
            f"{c['sign_agrees']}/{c['pairs']} | {c['determined_sign_agrees']}/{c['determined']} | "
            f"{ms(c['median_measured_difference_s'])} | {ms(c['median_predicted_difference_s'])} | "
            f"{1000 * c['median_abs_error_s']:.0f} ms |"
        )
    for name, s in result["summary"].items():
        if s["pairs"]:
            lines.append(
                f"| **{name}** | {s['pairs']} | **{s['sign_agrees']}/{s['pairs']}** | "
                f"{s['determined_sign_agrees']}/{s['determined']} | {ms(s['median_measured_difference_s'])} "
                f"| {ms(s['median_predicted_difference_s'])} | {1000 * s['median_abs_error_s']:.0f} ms |"
            )
    return "\n".join(lines) + "\n"


def write_h3_report(result: dict, folder, note: str = "") -> list[Path]:
    """``validation-h3.md`` and ``validation-h3.json`` into ``folder``."""
    from ..traces._io import atomic_write

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    result = {
        **result,
        "conditions": [
            {**c, "pages": [{**p, "trace": _name(p["trace"])} for p in c["pages"]]} for c in result["conditions"]
        ],
    }
    rows = []
    for c in result["conditions"]:
        for p in c["pages"]:
            rows.append(
                f"| `{c['condition']}` | {p['trace']} | {1000 * p['measured_difference_s']:+.0f} ms "
                f"({p['measured_difference_percent']:+.1f}%) | {1000 * p['spread_s']:.0f} ms | "
                f"{1000 * p['predicted_difference_s']:+.0f} ms ({p['predicted_difference_percent']:+.1f}%) | "
                f"{'yes' if p['sign_agrees'] else '**no**'} |"
            )
    text = (
        "# HTTP/3 against HTTP/2: the model's difference against the lab's\n\n"
        "Each page was measured over HTTP/2 and HTTP/3 at the same link condition, and both were predicted "
        "from the page's one HTTP/2 reference HAR. The difference is median onLoad over HTTP/3 minus median "
        "over HTTP/2 (negative: HTTP/3 faster). The lab's sign is *clear* where that difference exceeds the "
        "runs' spread (half the range of each protocol's runs, added).\n\n"
        + h3_table(result)
        + (f"\n{note}\n" if note else "")
        + "\n## Every page\n\n| condition | page | measured h3 - h2 | runs' spread | predicted h3 - h2 | "
        "sign agrees |\n|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n"
    )
    atomic_write(folder / "validation-h3.md", text.encode())
    atomic_write(folder / "validation-h3.json", (json.dumps(result, indent=1) + "\n").encode())
    return [folder / "validation-h3.md", folder / "validation-h3.json"]
