"""Errors the exporter reports instead of guessing.

Every construct the exporter cannot translate faithfully raises :class:`Unsupported`
with the construct's name and the source location of the equation that uses it. The
exporter turns it into an error record of the kernel; nothing is ever dropped silently.
"""

from __future__ import annotations

from typing import Any


class Unsupported(Exception):
    """A construct outside the supported set, at a source location."""

    def __init__(self, construct: str, message: str, loc: dict[str, Any] | None = None):
        super().__init__(f"{construct}: {message}")
        self.construct = construct
        self.message = message
        self.loc = loc

    def record(self) -> dict[str, Any]:
        """The error record of the JSON document."""
        return {"construct": self.construct, "message": self.message, "loc": self.loc}


class Refused(Exception):
    """A kernel JAX itself refuses to build, with JAX's own reason."""

    def __init__(self, reason: str, rule: str, loc: dict[str, Any] | None = None):
        super().__init__(reason)
        self.reason = reason
        self.rule = rule
        self.loc = loc

    def record(self) -> dict[str, Any]:
        """The refusal record of the JSON document (``loc``: the statement JAX refuses,
        when it is one)."""
        rec: dict[str, Any] = {"reason": self.reason, "rule": self.rule}
        if self.loc is not None:
            rec["loc"] = self.loc
        return rec
