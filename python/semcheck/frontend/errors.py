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


#: The construct of an error in the front end's own code (SCHEMA.md).
INTERNAL = "internal error"


def internal_error(what: str, exc: BaseException, loc: dict[str, Any] | None = None) -> dict[str, Any]:
    """The error record of a failure in the front end's own code (not the user's):
    ``what`` says what it was doing (``reading kernel psum_kernel``), ``loc`` the user's
    statement it was at, if known; the traceback is the front end's."""
    import traceback

    from .jaxcompat import jax_version

    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    if len(text) > 8000:
        text = "...\n" + text[-8000:]
    detail = f"{type(exc).__name__}: {exc}".strip()[:1000]
    return {"construct": INTERNAL, "loc": loc, "traceback": text,
            "message": f"semcheck's front end failed while {what} under jax {jax_version()} (a semcheck bug; please "
                       f"report it with the traceback below): {detail}"}


class FrontendFailure(BaseException):
    """The front end's own code failed while the user's script was running (in the
    capture hook): raised through the script (a ``BaseException``, so that the script's
    ``except Exception`` does not take it for its own) and reported as an
    :data:`INTERNAL` error, not as the script's."""

    def __init__(self, record: dict[str, Any]):
        super().__init__(record["message"])
        self.record = record
