"""The error of every configuration floor: a config file nats-server would reject, a setting
minijs does not implement, an option out of range. Its own module so that a server started
without a config file loads nothing of the file's syntax."""
from __future__ import annotations


class ConfigError(ValueError):
    """A config file nats-server would reject, or a setting minijs does not implement.

    ``str()`` reads ``path:line:col: message``, the way nats-server reports config errors.
    """

    def __init__(self, message: str, path: str | None = None, line: int | None = None,
                 col: int | None = None) -> None:
        self.message = message
        self.path = path
        self.line = line
        self.col = col
        where = ""
        if path is not None or line is not None:
            where = f"{path or '<config>'}:{line or 0}:{col or 0}: "
        super().__init__(where + message)
