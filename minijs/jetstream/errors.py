"""JetStream API errors: the catalogue of nats-server v2.15.1 and the concrete texts it produces.

Every error the JetStream API (and the publish-ack path) can answer with is an :class:`ApiError`
carrying the three values clients see in ``"error":{"code":…,"err_code":…,"description":…}``:

* ``code`` — the HTTP-like status (400, 404, 409, 412, 429, 500, 503);
* ``err_code`` — the stable JetStream code (10xxx) that clients branch on;
* ``description`` — the human text; templated errors substitute ``{err}``, ``{seq}``, … .

The catalogue is data: ``errors.json`` beside this module is nats-server's published error list
(its ``server/errors.json``, as listed at
https://docs.nats.io/reference/reference-protocols/nats_api_reference), and
:mod:`minijs.jetstream.errors_catalogue` is generated from it by ``scripts/gen_errors.py``:
:data:`ERRORS` keyed by ``err_code``, an :class:`ErrCode` member per entry
(``ErrCode.STREAM_NOT_FOUND == 10059``) and a factory per entry named after the Go constant in
snake case without the ``JS`` prefix and the ``Err``/``ErrF`` suffix (``JSStreamNotFoundErr``
→ :func:`stream_not_found`, ``JSSequenceNotFoundErrF`` → ``sequence_not_found(seq)``).
This module re-exports all of it. Factories return a *fresh* exception each call (raising a
shared instance would accumulate tracebacks).

Written by hand here: :func:`make` (an error by code), :func:`wrap`, and short aliases for the
concrete texts the server produces through the ``{err}`` templates (``maximum messages
exceeded``, ``rollup not permitted``, …), observed on the real v2.15.1 binary.

Pure module: no I/O, stdlib only.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from minijs.jetstream.apierror import ApiError, ErrorSpec, render as _render
from minijs.jetstream.errors_catalogue import *  # noqa: F403 - the generated catalogue
from minijs.jetstream.errors_catalogue import (
    ERRORS, message_ttl_disabled, message_ttl_invalid, pedantic, stream_invalid_config,
    stream_message_exceeds_maximum, stream_msg_delete_failed, stream_not_match,
    stream_purge_failed, stream_rollup_failed, stream_store_failed, stream_update,
    stream_wrong_last_msg_id, stream_wrong_last_sequence,
)
from minijs.protocol.gostrings import go_quote

_PLACEHOLDER = re.compile(r"\{(\w+)\}")


def make(err_code: int, **subs: Any) -> ApiError:
    """Build the error for ``err_code`` with its template placeholders substituted.

    Values are rendered like Go's ``%v`` (``str()``; ``ApiError``/exceptions by their text).
    Missing placeholders raise ``KeyError`` (a programming error, not a client error).
    """
    entry = ERRORS[err_code]

    def repl(m: re.Match[str]) -> str:
        return _render(subs[m.group(1)])

    return ApiError(entry.code, err_code, _PLACEHOLDER.sub(repl, entry.template))


def wrap(factory: Callable[[Any], ApiError], err: BaseException | str) -> ApiError:
    """Go's ``NewJS…Error(err, Unless(err))``: an ``ApiError`` passes through unchanged,
    anything else is wrapped by ``factory`` (a one-argument ``{err}`` factory)."""
    if isinstance(err, ApiError):
        return err
    return factory(str(err))


def spec(err_code: int) -> ErrorSpec:
    """The table entry for ``err_code`` (``KeyError`` if unknown)."""
    return ERRORS[err_code]


# --------------------------------------------------------------------------------------------
# Aliases and concrete texts produced through the "{err}" templates (verified on v2.15.1)
# --------------------------------------------------------------------------------------------


def stream_config_invalid(detail: str) -> ApiError:
    """500/10052 with a validation text, e.g. ``max age needs to be >= 100ms``."""
    return stream_invalid_config(detail)


def pedantic_error(detail: str) -> ApiError:
    """400/10157 ``pedantic mode: <detail>``."""
    return pedantic(detail)


def wrong_last_sequence(seq: int) -> ApiError:
    """400/10071 ``wrong last sequence: N`` (pub ack)."""
    return stream_wrong_last_sequence(seq)


def wrong_last_msg_id(msg_id: str) -> ApiError:
    """400/10070 ``wrong last msg ID: X`` (pub ack; X may be empty)."""
    return stream_wrong_last_msg_id(msg_id)


def expected_stream_mismatch() -> ApiError:
    """400/10060 ``expected stream does not match`` (pub ack)."""
    return stream_not_match()


def message_size_exceeds_maximum() -> ApiError:
    """400/10054 ``message size exceeds maximum allowed`` (pub ack)."""
    return stream_message_exceeds_maximum()


def max_msgs_exceeded() -> ApiError:
    """503/10077 ``maximum messages exceeded`` (discard new, pub ack)."""
    return stream_store_failed("maximum messages exceeded")


def max_bytes_exceeded() -> ApiError:
    """503/10077 ``maximum bytes exceeded`` (discard new, pub ack)."""
    return stream_store_failed("maximum bytes exceeded")


def max_msgs_per_subject_exceeded() -> ApiError:
    """503/10077 ``maximum messages per subject exceeded`` (discard_new_per_subject, pub ack)."""
    return stream_store_failed("maximum messages per subject exceeded")


def message_too_large() -> ApiError:
    """503/10077 ``message too large`` (store record limit, pub ack)."""
    return stream_store_failed("message too large")


def rollup_not_permitted() -> ApiError:
    """500/10111 ``rollup not permitted`` (no allow_rollup_hdrs, or deny_purge)."""
    return stream_rollup_failed("rollup not permitted")


def rollup_value_invalid(value: str) -> ApiError:
    """500/10111 ``rollup value invalid: "<value>"`` (Go ``%q`` quoting)."""
    return stream_rollup_failed(f"rollup value invalid: {go_quote(value)}")


def message_delete_not_permitted() -> ApiError:
    """500/10057 ``message delete not permitted`` (deny_delete)."""
    return stream_msg_delete_failed("message delete not permitted")


def purge_not_permitted() -> ApiError:
    """500/10110 ``stream purge not permitted`` (deny_purge)."""
    return stream_purge_failed("stream purge not permitted")


def consumer_limits_violation(names: list[str]) -> ApiError:
    """500/10069 ``change to limits violates consumers: a, b`` (stream update)."""
    return stream_update("change to limits violates consumers: " + ", ".join(names))


def ttl_invalid() -> ApiError:
    """400/10165 ``invalid per-message TTL``."""
    return message_ttl_invalid()


def ttl_disabled() -> ApiError:
    """400/10166 ``per-message TTL is disabled``."""
    return message_ttl_disabled()


def unsupported_feature(feature: str) -> ApiError:
    """500/10052 for a StreamConfig option minijs deliberately does not implement.

    The real server would accept (or validate) the option; minijs must never silently accept it,
    so it answers with the generic invalid-config error and a description naming the option.
    """
    return stream_invalid_config(f"minijs does not support {feature}")
