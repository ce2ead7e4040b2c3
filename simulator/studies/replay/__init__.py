"""Replay: a trace's exchanges over the real stacks (``h2``, ``aioquic`` HTTP/3) or over
their transport models, in virtual time: ``workbench replay`` and batch study ``replay``.

The question: how long does each exchange of a captured page take over a given path,
on the real protocol implementations, and how far are the transport models (the
baseline every other study runs on) from them?  The drivers stay in ``simulator.stacks``
(``stacks.replay``: the real stacks; ``http.model_replay``: the models; ``http.crossval``: the two side by
side); this package is the study on top of them: its parameters (the stack's, plus
``model``), ``run`` and its command.
"""

from .cli import add_arguments, params_from_args
from .study import ReplayParams, ReplayResult, run

__all__ = ["ReplayParams", "ReplayResult", "run", "add_arguments", "params_from_args"]
