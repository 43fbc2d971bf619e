"""The JetStream API error value: what a client sees in ``"error":{"code":…,"err_code":…,
"description":…}``.

:class:`ApiError` carries the three fields; :class:`ErrorSpec` is one entry of the catalogue
(:mod:`minijs.jetstream.errors_catalogue`, generated from nats-server's published error list);
:func:`render` formats a value substituted into a description placeholder the way Go's ``%v``
prints it. Pure module: no state, stdlib only.
"""

from __future__ import annotations

from typing import Any, NamedTuple


class ApiError(Exception):
    """A JetStream API error as sent to clients.

    ``str(err)`` is the description. Two errors compare equal when all three fields are equal.
    """

    def __init__(self, code: int, err_code: int, description: str) -> None:
        super().__init__(description)
        self.code = int(code)
        self.err_code = int(err_code)
        self.description = str(description)

    def to_json(self) -> dict[str, Any]:
        """The ``"error"`` object of an API reply (field order as the server emits it)."""
        return {"code": self.code, "err_code": self.err_code, "description": self.description}

    def is_(self, err_code: int) -> bool:
        """True if this error has the given ``err_code``."""
        return self.err_code == int(err_code)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ApiError):
            return NotImplemented
        return (self.code, self.err_code, self.description) == (
            other.code,
            other.err_code,
            other.description,
        )

    __hash__ = None  # type: ignore[assignment]  # mutable exception, compared by value

    def __repr__(self) -> str:
        return f"ApiError({self.code}, {self.err_code}, {self.description!r})"

    def __str__(self) -> str:
        return self.description


class ErrorSpec(NamedTuple):
    """One catalogue entry: the HTTP-like ``code``, the Go ``constant`` and the description
    ``template`` with its ``{placeholders}``."""

    code: int
    constant: str
    template: str


def render(value: Any) -> str:
    """A placeholder value as Go's ``%v`` prints it: an ``ApiError`` by its description, a bool
    as ``true``/``false``, anything else by ``str()``."""
    if isinstance(value, ApiError):
        return value.description
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
