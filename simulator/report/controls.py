"""A study's parameter description for its Explore panel: one control per parameter
(``Slider`` for a number with a range and unit, ``Options`` for one choice, ``Several``
for a set of choices, ``Switch`` for on/off), each with its default, label and how a
reader says its value; ``defaults`` and ``describe`` read a whole description.  Each
control makes its ipywidgets widget.  Written by hand over ipywidgets."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Slider", "Options", "Several", "Switch", "Control", "defaults", "describe"]


def _fmt_number(v) -> str:
    if isinstance(v, float) and not v.is_integer():
        return f"{v:g}"
    return f"{int(v):,}" if isinstance(v, (int, float)) else str(v)


@dataclass(frozen=True)
class Slider:
    """A number in [min, max] by ``step``; ``unit`` is shown after the value."""

    label: str
    min: float
    max: float
    step: float
    default: float
    unit: str = ""
    percent: bool = False  # show 0.02 as 2%

    def text(self, value) -> str:
        """The value as a reader says it: ``2%`` or ``100 ms``."""
        if self.percent:
            return f"{value * 100:g}%"
        return f"{_fmt_number(value)} {self.unit}".strip()

    def widget(self):
        """An ipywidgets slider (integer when every bound is), updated on release only."""
        import ipywidgets as w

        ints = all(float(x).is_integer() for x in (self.min, self.max, self.step, self.default))
        cls = w.IntSlider if ints else w.FloatSlider
        kw = {} if ints else {"readout_format": ".1%" if self.percent else ".3g"}
        return cls(
            value=self.default,
            min=self.min,
            max=self.max,
            step=self.step,
            continuous_update=False,
            description=self._description(),
            style={"description_width": "initial"},
            **kw,
        )

    def _description(self) -> str:
        return f"{self.label} ({self.unit})" if self.unit and not self.percent else self.label


@dataclass(frozen=True)
class Options:
    """One value from a list: ``options`` holds values or ``(label, value)`` pairs.
    ``style``: ``slider`` (an ordered scale), ``buttons`` (few choices) or ``dropdown``."""

    label: str
    options: tuple
    default: Any
    style: str = "buttons"
    unit: str = ""

    def pairs(self) -> list[tuple[str, Any]]:
        """The choices as ``(label, value)`` pairs, in order."""
        out = []
        for o in self.options:
            if isinstance(o, tuple) and len(o) == 2:
                out.append((str(o[0]), o[1]))
            else:
                out.append((f"{_fmt_number(o)} {self.unit}".strip() if self.style != "slider" else _fmt_number(o), o))
        return out

    def text(self, value) -> str:
        """The chosen value's label (with its unit on a slider)."""
        for label, v in self.pairs():
            if v == value:
                return label if self.style != "slider" or not self.unit else f"{label} {self.unit}"
        return str(value)

    def widget(self):
        """A selection slider, dropdown or toggle buttons, as ``style`` says."""
        import ipywidgets as w

        desc = f"{self.label} ({self.unit})" if self.unit and self.style == "slider" else self.label
        kw = dict(options=self.pairs(), value=self.default, description=desc, style={"description_width": "initial"})
        if self.style == "slider":
            return w.SelectionSlider(continuous_update=False, **kw)
        if self.style == "dropdown":
            return w.Dropdown(**kw)
        return w.ToggleButtons(**kw)


@dataclass(frozen=True)
class Several:
    """A subset of ``options`` (one check box each); ``default`` is a tuple of values."""

    label: str
    options: tuple
    default: tuple

    def text(self, value) -> str:
        """The chosen values, comma-separated, or ``none``."""
        return ", ".join(map(str, value)) or "none"

    def widget(self):
        """A label and one check box per option, in a row."""
        import ipywidgets as w

        boxes = [
            w.Checkbox(value=o in self.default, description=str(o), indent=False, layout=w.Layout(width="auto"))
            for o in self.options
        ]
        box = w.HBox([w.Label(self.label)] + boxes)
        box._wb_options = self.options
        box._wb_boxes = boxes
        return box


@dataclass(frozen=True)
class Switch:
    """On or off."""

    label: str
    default: bool = False

    def text(self, value) -> str:
        """``label: on`` or ``label: off``."""
        return f"{self.label}: {'on' if value else 'off'}"

    def widget(self):
        """A check box."""
        import ipywidgets as w

        return w.Checkbox(value=self.default, description=self.label, indent=False)


Control = Slider | Options | Several | Switch


def defaults(controls: dict[str, Control]) -> dict[str, Any]:
    """The values of a parameter description at its defaults."""
    return {name: c.default for name, c in controls.items()}


def describe(controls: dict[str, Control], values: dict[str, Any]) -> str:
    """``RTT 100 ms, loss 2%, ...``: the values as a reader would say them."""
    parts = []
    for name, c in controls.items():
        text = c.text(values[name])
        parts.append(text if isinstance(c, Switch) else f"{c.label} {text}")
    return ", ".join(parts)
