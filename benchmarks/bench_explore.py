"""One update of each notebook's Explore panel: wall and CPU time, per notebook.

An update is what a control move costs in the live panel: ONE study run at the new
values on the chosen input, its figure drawn and encoded as PNG, its table
(``Explorer.render``, the worker's own call, here run synchronously).  Per notebook:
the update at the default values on the default input, then one move of every control
in turn (to the next option, or one step up the slider), each from the defaults; the
worst and the median of those.  With ``quick``: the defaults and the first two controls
only.  Without it, also the default values on every other input the panel's picker
offers (bundled traces), each once.  The goal (issue 22): under 2 s per update on this
machine with the default inputs.  Wall time moves with the machine's load; CPU time of
the updating thread is what one free core would take.
"""

from __future__ import annotations

import os
import statistics


def _moved(spec, value):
    """The value one step away from ``value`` (the next option, or one slider step)."""
    from simulator.report.explore import Options, Several, Slider, Switch

    if isinstance(spec, Slider):
        up = value + spec.step
        return up if up <= spec.max else value - spec.step
    if isinstance(spec, Options):
        values = [v for _, v in spec.pairs()]
        return values[(values.index(value) + 1) % len(values)]
    if isinstance(spec, Several):
        missing = [o for o in spec.options if o not in value]
        return tuple(value) + (missing[0],) if missing else tuple(value)[:-1]
    if isinstance(spec, Switch):
        return not value
    raise TypeError(spec)


def run(quick: bool = False) -> dict:
    from simulator.report import panels

    figures = {}
    print(f"{'notebook':<30}{'update':>8}{'cpu':>7}{'(run':>7}{'draw)':>7}{'moves max':>11}{'median':>8}  worst move")
    for name, make in panels.PANELS.items():
        ex = make()
        ex.render(ex.values, ex.source)  # warm: imports, fonts, the input's cache
        default = ex.render(ex.values, ex.source)
        moves = {}
        controls = list(ex.controls.items())[:2] if quick else list(ex.controls.items())
        for cname, spec in controls:
            values = {**ex.values, cname: _moved(spec, ex.values[cname])}
            try:
                view = ex.render(values, ex.source)
            except Exception as exc:  # noqa: BLE001 - a move the study refuses (shown as one line in the panel)
                moves[cname] = {"error": str(exc)}
                continue
            moves[cname] = {"value": spec.text(values[cname]), "wall_s": view.total_s, "cpu_s": view.cpu_s}
        walls = [m["wall_s"] for m in moves.values() if "wall_s" in m]
        worst = max((m for m in moves.items() if "wall_s" in m[1]), key=lambda kv: kv[1]["wall_s"], default=None)
        entry = {
            "default_wall_s": default.total_s,
            "default_cpu_s": default.cpu_s,
            "default_run_s": default.run_s,
            "default_draw_s": default.draw_s,
            "moves": moves,
            "moves_max_wall_s": max(walls) if walls else None,
            "moves_median_wall_s": statistics.median(walls) if walls else None,
            "moves_max_cpu_s": max((m["cpu_s"] for m in moves.values() if "cpu_s" in m), default=None),
            "input": str(ex.source),
        }
        if not quick and ex.sources is not None:
            others = {}
            for key in ex.sources.choices():
                if key == ex.source:
                    continue
                try:
                    ex.render(ex.values, key)  # first: loads the input
                    view = ex.render(ex.values, key)
                    others[key] = {"wall_s": view.total_s, "cpu_s": view.cpu_s}
                except Exception as exc:  # noqa: BLE001 - an input this study cannot read
                    others[key] = {"error": str(exc)[:160]}
            entry["other_inputs"] = others
        figures[name] = entry
        w = f"{worst[0]} -> {worst[1]['value']}" if worst else ""
        print(
            f"{name:<30}{default.total_s:>8.2f}{default.cpu_s:>7.2f}{default.run_s:>7.2f}{default.draw_s:>7.2f}"
            f"{entry['moves_max_wall_s'] or 0:>11.2f}{entry['moves_median_wall_s'] or 0:>8.2f}  {w}"
        )
        for key, o in entry.get("other_inputs", {}).items():
            text = f"{o['wall_s']:.2f} s (cpu {o['cpu_s']:.2f})" if "wall_s" in o else o["error"]
            print(f"    input {key}: {text}")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    slowest = max(figures.items(), key=lambda kv: max(kv[1]["default_wall_s"], kv[1]["moves_max_wall_s"] or 0))
    print(
        f"slowest update: {slowest[0]} "
        f"({max(slowest[1]['default_wall_s'], slowest[1]['moves_max_wall_s'] or 0):.2f} s wall); goal < 2 s; "
        f"load average {load:.1f} on {os.cpu_count()} CPUs (wall times grow with it, CPU times do not)"
    )
    return {"notebooks": figures, "load_average": load}
