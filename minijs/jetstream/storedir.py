"""nats-server's checks of the JetStream store directory, made before the port is bound.

Kept apart from :mod:`minijs.jetstream.engine` so the command line and the server can check
(and catch :class:`StoreDirError`) without importing the engine. The writable probe opens its
file the way ``tempfile.mkstemp`` does, without importing ``tempfile`` (and with it ``shutil``,
``bz2``, ``lzma``), which a ``-js -sd DIR`` server does not otherwise need before it is ready.
"""
from __future__ import annotations

import os
import stat

#: How the probe file is opened: exclusively, never through a symbolic link, not inherited by
#: child processes (``tempfile.mkstemp``'s flags).
_PROBE_FLAGS = (os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))


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
        _probe_writable(path)
    except OSError:
        raise StoreDirError("storage directory is not writable") from None


def _probe_writable(directory: str) -> None:
    """Create and remove a ``_test_<random>`` file in ``directory`` (nats-server's
    ``os.CreateTemp(dir, "_test_")``); raises the OSError that says it cannot."""
    for _ in range(100):  # a name taken by another process: draw again, as mkstemp does
        probe = os.path.join(directory, f"_test_{os.urandom(6).hex()}")
        try:
            fd = os.open(probe, _PROBE_FLAGS, 0o600)
        except FileExistsError:
            continue
        os.close(fd)
        os.remove(probe)
        return
    raise FileExistsError(f"no unused probe file name in {directory}")
