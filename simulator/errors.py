"""The one exception type for bad input.

A user error (malformed trace, truncated frame, bad flag value) is an ``InputError``
whose message is one sentence naming the file and the place (entry index, line
number, byte offset) and what is wrong.  The CLI prints it and exits with status 2;
anything else is a bug and may traceback.
"""

from __future__ import annotations

__all__ = ["InputError"]


class InputError(ValueError):
    """Bad input: ``str(err)`` is one clear sentence with the file and the place."""

    def __init__(self, message: str, *, path: str | None = None, where: str | None = None) -> None:
        self.path = path
        self.where = where
        self.detail = message
        prefix = ""
        if path is not None:
            prefix = f"{path}: " if where is None else f"{path}: {where}: "
        elif where is not None:
            prefix = f"{where}: "
        super().__init__(prefix + message)
