"""nats-server's checks of the JetStream store directory, made before the port is bound.

Kept apart from :mod:`minijs.jetstream.engine` so the command line and the server can check
(and catch :class:`StoreDirError`) without importing the engine.
"""
from __future__ import annotations

import os
import stat
import tempfile


class StoreDirError(Exception):
    """The store directory cannot be used; the text is nats-server's reason."""


def check_store_dir(store_dir: str) -> None:
    """nats-server's checks of ``<store_dir>/jetstream`` before JetStream starts: created if
    missing, else it must be a writable directory. Raises :class:`StoreDirError`."""
    path = os.path.join(store_dir, "jetstream")
    try:
        st = os.stat(path)
    except FileNotFoundError:
        try:
            os.makedirs(path, mode=0o750, exist_ok=True)
        except OSError as exc:
            where = exc.filename or path
            reason = (exc.strerror or str(exc))
            raise StoreDirError(f"could not create storage directory - mkdir {where}: "
                                f"{reason[:1].lower()}{reason[1:]}") from None
        return
    except OSError:
        raise StoreDirError("storage directory is not a directory") from None
    if not stat.S_ISDIR(st.st_mode):
        raise StoreDirError("storage directory is not a directory")
    try:
        fd, probe = tempfile.mkstemp(prefix="_test_", dir=path)
    except OSError:
        raise StoreDirError("storage directory is not writable") from None
    os.close(fd)
    os.remove(probe)
