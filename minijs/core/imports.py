"""Account exports and imports, and subject mappings, as one nats-server does them.

An account ``A`` exports a stream (``{stream: "a.>"}``) or a service (``{service: "svc.>"}``);
an account ``B`` imports it. A stream import delivers what is published in ``A`` on the
export's subjects to ``B``'s subscribers (under ``prefix.subject`` or the ``to`` mapping). A
service import routes a request published in ``B`` on ``to`` into ``A`` on the export subject,
with the reply rewritten to a ``_R_.<acc>.<id>`` subject of ``A`` that leads back to the
requester's reply (a *response import*). ``mappings`` rewrite a client's published subject
before anything else (permissions included), with weights and the subject transform functions.

Invariants:

* an account with nothing to route across accounts has ``links`` None on its sublist, and one
  without mappings has ``mappings`` None: the publish path pays one attribute test for each
  (:meth:`minijs.core.router.Router.publish`, :meth:`Connection._publish`);
* a message is delivered in its own account first, then along stream imports, then along
  service imports, then along a response import; a requester gets the 503 no-responders
  status only when none of them reached anyone (as ``processInboundClientMsg`` decides);
* a service request reaches the exporter with a ``Nats-Request-Info`` header
  (``{"acc":<importer>,"rtt":<ns>}``) and, if it has a reply, a fresh response import;
  a ``Singleton`` response import is gone after its first delivered response, a ``Stream`` or
  ``Chunked`` one once ``response_threshold`` passes without a response (server clock), any
  of them as soon as a response reaches no one;
* responses travel only towards the requester: a response import never creates another.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator

from minijs.authconfig import Export, Import, Mapping
from minijs.core.fanout import fan_out, receivers
from minijs.core.msgtrace import TRACE_DEST_B as TRACE_DEST, go_json, go_time
from minijs.core.subjects import is_subset, is_valid_subject, subject_matches, subjects_overlap
from minijs.core.sublist import Subscription
from minijs.core.transform import (
    SubjectTransform, _index_placeholders, _MappingError, _new_subject_transform,
)
from minijs.randomness import RandomSource

__all__ = ["AccountLinks", "Mappings", "check_imports", "install"]

_BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
REQUEST_INFO = b"Nats-Request-Info"
#: nats-server's ``MsgTraceDestDisabled``: what a traced message carries past an import.
TRACE_DISABLED = b"trace disabled"
_REPLY_PREFIX = b"_R_."


def _rand_token(randomness: RandomSource, n: int = 6) -> str:
    return randomness.text(_BASE62, n)


def _is_literal(subject: str) -> bool:
    return not any(t in ("*", ">") for t in subject.split("."))


def _tokenize_wildcards(subject: str) -> str:
    """nats-server's ``transformTokenize``: ``a.*.>`` → ``a.$1.>`` (the identity mapping)."""
    out, i = [], 0
    for tok in subject.split("."):
        if tok == "*":
            i += 1
            out.append(f"${i}")
        else:
            out.append(tok)
    return ".".join(out)


# ----------------------------------------------------------------------------- config checks


def _strict_transform_error(src: str, dest: str) -> str | None:
    """``NewSubjectTransformStrict``: a transform an import can reverse (only ``$N`` /
    ``{{wildcard(N)}}`` tokens, every wildcard of ``src`` used), or its error text."""
    try:
        _new_subject_transform(src, dest)
    except _MappingError as exc:
        return str(exc)
    stoks = src.split(".")
    npwcs = stoks.count("*")
    if npwcs == 0 and ">" not in stoks:
        return None
    used = 0
    for tok in dest.split("."):
        kind, idxs = _index_placeholders(tok)
        if kind not in ("none", "wildcard"):
            return ("invalid mapping destination: the only mapping function allowed for import "
                    f"transforms is {{{{Wildcard()}}}} in {tok}")
        if kind == "wildcard":
            used += len(idxs)
    if used < npwcs:
        return f"invalid mapping destination: not using all of the token wildcard(s) in {dest}"
    return None


def _export_allows(exp: Export, importer: str, tokens: list[str] | None) -> bool:
    """``checkAuth``: an ``account_token_position`` export wants the importer's name at that
    token of the import subject (never given for an import of the export subject itself);
    otherwise the approved accounts, if any."""
    pos = exp.token_position
    if pos > 0:
        return tokens is not None and pos <= len(tokens) and tokens[pos - 1] == importer
    return not exp.accounts or importer in exp.accounts


def _authorized(exports: Iterable[Export], source: str, importer: str, subject: str,
                service: bool) -> bool:
    """``checkStreamImportAuthorized`` / ``checkServiceImportAuthorized``: an export of
    ``source`` of that kind whose subject covers ``subject``, open to ``importer``."""
    if not is_valid_subject(subject):
        return False
    mine = [e for e in exports if e.account == source and e.service == service and e.subject]
    for e in mine:
        if e.subject == subject:
            return _export_allows(e, importer, None)
    tokens = subject.split(".")
    return any(is_subset(subject, e.subject) and _export_allows(e, importer, tokens)
               for e in mine)


def _service_cycle(imports: list[Import], account: str, dest: str, subject: str) -> bool:
    """``serviceImportFormsCycle``: following ``dest``'s service imports whose local subject
    collides with ``subject`` leads back to an account already visited."""
    visited = {account}

    def walk(acc: str, frm: str, depth: int) -> bool:
        if depth > 1024:
            return True
        for si in imports:
            if si.account != acc or not si.service:
                continue
            if subjects_overlap(frm.encode(), si.subject.encode()):
                if si.source in visited:
                    return True
                visited.add(acc)
                f = si.to if is_subset(si.to, frm) else frm
                if walk(si.source, f, depth + 1):
                    return True
        return False

    return walk(dest, subject, 0)


def check_imports(accounts: Iterable[str], exports: Iterable[Export],
                  imports: Iterable[Import]) -> str | None:
    """The first error nats-server reports for these exports and imports once every account
    is read (``parseAccounts``), or None."""
    known = set(accounts)
    exports = [e for e in exports if e.subject]
    for e in [e for e in exports if not e.service] + [e for e in exports if e.service]:
        kind = "service" if e.service else "stream"
        for name in e.accounts or ():
            if name not in known:
                return f'"{name}" account not defined for {kind} export'
        pos = e.token_position
        if pos > 0:
            toks = e.subject.split(".")
            if len(toks) < pos or toks[pos - 1] != "*":
                return f'Error adding {kind} export "{e.subject}": sublist: invalid subject'
    added: list[Import] = []
    for imp in [i for i in imports if not i.service] + [i for i in imports if i.service]:
        kind = "service" if imp.service else "stream"
        if imp.source not in known:
            return f'"{imp.source}" account not defined for {kind} import'
        if not imp.service:
            if not _authorized(exports, imp.source, imp.account, imp.subject, False):
                return f'Error adding stream import "{imp.subject}": stream import not authorized'
            if imp.prefix and not _is_literal(imp.prefix):
                return (f'Error adding stream import "{imp.subject}": stream import prefix can '
                        "not contain wildcard tokens")
            to = _stream_to(imp)
            if not _is_literal(imp.subject) and to != imp.subject:
                err = _strict_transform_error(imp.subject, _tokenize_wildcards(to))
                if err:
                    return (f'Error adding stream import "{imp.subject}": failed to create '
                            "mapping transform for stream import subject from "
                            f'"{imp.subject}" to "{to}": {err}')
            if any(not a.service and a.account == imp.account and a.source == imp.source
                   and a.subject == imp.subject for a in added):
                return f'Error adding stream import "{imp.subject}": stream import already exists'
            added.append(imp)
            continue
        local = imp.to or imp.subject
        if not is_valid_subject(local) or not is_valid_subject(imp.subject):
            return f'Error adding service import "{imp.subject}": sublist: invalid subject'
        if not _authorized(exports, imp.source, imp.account, imp.subject, True):
            return f'Error adding service import "{imp.subject}": service import not authorized'
        if not _is_literal(imp.subject) and local != imp.subject:
            err = _strict_transform_error(imp.subject, _tokenize_wildcards(local))
            if err:
                return (f'Error adding service import "{imp.subject}": failed to create mapping '
                        f'transform for service import subject from "{local}" to '
                        f'"{imp.subject}": {err}')
        if _service_cycle(added, imp.account, imp.source, local):
            return f'Error adding service import "{imp.subject}": import forms a cycle'
        added.append(imp)
    return None


# ----------------------------------------------------------------------------- mappings


class Mappings:
    """An account's subject mappings (``selectMappedSubject``): the first mapping whose
    source matches picks a destination by weight (``draw(100)``) and the subject is transformed
    by it (``bits(31)`` for ``{{random(n)}}``); both draws come from the server's seeded
    source."""

    __slots__ = ("_literal", "_wild", "_draw")

    def __init__(self, mappings: Iterable[Mapping], draw: Callable[[int], int] | None = None,
                 bits: Callable[[int], int] | None = None) -> None:
        self._draw = draw or RandomSource().randrange
        bits = bits or RandomSource().getrandbits
        self._literal: dict[bytes, list[tuple[SubjectTransform, int]]] = {}
        self._wild: list[tuple[str, list[tuple[SubjectTransform, int]]]] = []
        for m in mappings:
            dests = self._destinations(m, bits)
            if _is_literal(m.source):
                self._literal.setdefault(m.source.encode(), dests)
            else:
                self._wild.append((m.source, dests))

    @staticmethod
    def _destinations(m: Mapping, bits: Callable[[int], int] | None = None
                      ) -> list[tuple[SubjectTransform, int]]:
        listed = {d for d, _ in m.dests}
        dests = [(d, w) for d, w in m.dests]
        total = sum(w for _, w in dests)
        if total != 100 and m.source not in listed:
            # nats-server adds the source itself for the weight left over (a chance to
            # stay as published), unless the source was listed explicitly.
            dests.append((_tokenize_wildcards(m.source), 100 - total if dests else 100))
        dests.sort(key=lambda d: d[1])
        out, cum = [], 0
        for d, w in dests:
            cum += w
            out.append((SubjectTransform(m.source, d, bits), cum))
        return out

    def map(self, subject: bytes) -> bytes:
        dests = self._literal.get(subject)
        if dests is None:
            text = subject.decode(errors="surrogateescape")
            for src, wdests in self._wild:
                if subject_matches(src, text):
                    dests = wdests
                    break
            else:
                return subject
        if len(dests) == 1 and dests[0][1] == 100:
            tr = dests[0][0]
        else:
            w = self._draw(100)
            for tr, cum in dests:
                if w < cum:
                    break
            else:
                return subject
        out = tr.apply(subject.decode(errors="surrogateescape"))
        if out is None:
            return subject
        return out.encode(errors="surrogateescape")


# ----------------------------------------------------------------------------- routing


def _stream_to(imp: Import) -> str:
    """The subject a stream import's messages arrive under in the importer (wildcards kept)."""
    if imp.prefix:
        return imp.prefix.rstrip(".") + "." + imp.subject
    return imp.to or imp.subject


class _StreamImport:
    __slots__ = ("pattern", "target", "transform", "literal_to", "allow_trace", "prefix")

    def __init__(self, imp: Import, target: "AccountLinks") -> None:
        self.pattern = imp.subject
        self.target = target
        self.allow_trace = imp.allow_trace
        self.prefix = imp.prefix.rstrip(".") + "." if imp.prefix else ""
        to = _stream_to(imp)
        self.transform = None
        self.literal_to = None
        if _is_literal(imp.subject):
            self.literal_to = to.encode()  # one subject in, one subject out
        elif to != imp.subject:
            self.transform = SubjectTransform(imp.subject, _tokenize_wildcards(to))


class _ServiceImport:
    __slots__ = ("local", "export_subject", "exporter", "export", "transform", "literal",
                 "share")

    def __init__(self, imp: Import, exporter: "AccountLinks", export: Export) -> None:
        self.local = imp.to or imp.subject
        self.export_subject = imp.subject
        self.exporter = exporter
        self.export = export
        self.share = imp.share
        self.literal = _is_literal(imp.subject)
        self.transform = None
        if not self.literal and self.local != imp.subject:
            self.transform = SubjectTransform(self.local, _tokenize_wildcards(imp.subject))

    def destination(self, subject: bytes) -> bytes:
        if self.literal:
            return self.export_subject.encode()
        if self.transform is None:
            return subject  # the same wildcard subject in both accounts: the published one
        out = self.transform.apply(subject.decode(errors="surrogateescape"), literal=False)
        return subject if out is None else out.encode(errors="surrogateescape")


class _ResponseImport:
    __slots__ = ("target", "reply", "singleton", "threshold", "last", "timer", "keep")

    def __init__(self, target: "AccountLinks", reply: bytes, singleton: bool,
                 threshold: float, keep: bool = False) -> None:
        self.target = target
        self.reply = reply
        self.keep = keep  # a trace destination: lives until its threshold, whatever comes
        self.singleton = singleton
        self.threshold = threshold
        self.last = 0.0
        self.timer: Any = None


class AccountLinks:
    """What one account routes to other accounts: its stream exports' importers, its service
    imports, and the response imports of requests its services have been sent."""

    def __init__(self, router: Any, account: str, sublist: Any) -> None:
        self.router = router
        self.account = account
        self.sublist = sublist
        self.mappings: Mappings | None = None
        #: stream imports fed by messages published in this account
        self.stream_out: list[_StreamImport] = []
        #: service imports: requests published here go to another account
        self.services: list[_ServiceImport] = []
        #: response imports living in this (the exporting) account: _R_ subject -> where to
        self.responses: dict[bytes, _ResponseImport] = {}
        #: The names of response imports (``_R_.<prefix>.<token>``), from the server's source.
        self._names = router.randomness.child("responses")
        self.reply_prefix = _REPLY_PREFIX + _rand_token(self._names).encode() + b"."

    # -- the publish path

    def publish(self, subject: bytes, reply: bytes | None, header: bytes | None,
                payload: bytes, origin: Any) -> int:
        """Route a message published in this account (the router's publish hook)."""
        router = self.router
        delivered = deliver_in(router, self.sublist, subject, reply, header, payload, origin)
        if self.stream_out:
            delivered += self._streams(subject, reply, header, payload)
        if self.services:
            delivered += self._services(subject, reply, header, payload, origin)
        if self.responses and subject.startswith(_REPLY_PREFIX):
            rsi = self.responses.get(subject)
            if rsi is not None:
                delivered += self._respond(subject, rsi, header, payload)
        if not delivered and reply and origin is not None and origin.no_responders:
            router.no_responders(subject, reply, origin)
        return delivered

    def _streams(self, subject: bytes, reply: bytes | None, header: bytes | None,
                 payload: bytes) -> int:
        delivered = 0
        text = subject.decode(errors="surrogateescape")
        for si in self.stream_out:
            if not subject_matches(si.pattern, text):
                continue
            to = self._stream_subject(si, subject, text)
            if to is not None:
                delivered += deliver_in(self.router, si.target.sublist, to, reply, header,
                                        payload, None)
        return delivered

    def _stream_targets(self, subject: bytes) -> Iterator[tuple[_StreamImport, bytes]]:
        """Each stream import that takes ``subject``, with the subject it arrives under in the
        importing account (the plain publish path walks them inline, see ``_streams``)."""
        text = subject.decode(errors="surrogateescape")
        for si in self.stream_out:
            if subject_matches(si.pattern, text):
                to = self._stream_subject(si, subject, text)
                if to is not None:
                    yield si, to

    @staticmethod
    def _stream_subject(si: _StreamImport, subject: bytes, text: str) -> bytes | None:
        """The subject a message on ``subject`` arrives under in the importing account."""
        if si.literal_to is not None:
            return si.literal_to
        if si.transform is not None:
            out = si.transform.apply(text)
            return None if out is None else out.encode(errors="surrogateescape")
        return subject

    def _services(self, subject: bytes, reply: bytes | None, header: bytes | None,
                  payload: bytes, origin: Any, info: dict[str, Any] | None = None,
                  seen: tuple[int, ...] = ()) -> int:
        """Requests along this account's service imports. A request that arrived through a
        service import (``info``: its ``Nats-Request-Info``) goes on through the exporter's
        own imports (a chain), each import at most once (nats-server's cycle guard)."""
        delivered = 0
        for si in self._matching_services(subject, seen):
            delivered += self._service(si, subject, reply, header, payload, origin, info, seen)
        return delivered

    def _matching_services(self, subject: bytes, seen: tuple[int, ...] = ()
                           ) -> list[_ServiceImport]:
        text = subject.decode(errors="surrogateescape")
        return [si for si in self.services if id(si) not in seen
                and (si.local == text or subject_matches(si.local, text))]

    def _service(self, si: _ServiceImport, subject: bytes, reply: bytes | None,
                 header: bytes | None, payload: bytes, origin: Any,
                 info: dict[str, Any] | None, seen: tuple[int, ...],
                 untraced: bool = False) -> int:
        exporter = si.exporter
        to = self.service_subject(si, subject)
        nrr = None
        if reply:
            nrr = exporter.new_response(self, reply, si.export)
        if info is None:
            request_info = self._client_info(origin, si.share)
        else:  # a chained import: the first requester's info, naming this account
            request_info = {"acc": info["acc"], "svc": self.account,
                            **{k: v for k, v in info.items() if k not in ("acc", "svc")}}
        hdr = set_header(header, REQUEST_INFO, go_json(request_info))
        if untraced:  # a traced request goes on untraced past an import (no allow_trace)
            hdr = set_header(hdr, TRACE_DEST, TRACE_DISABLED)
        n = deliver_in(self.router, exporter.sublist, to, nrr, hdr, payload, None)
        if exporter.services:
            n += exporter._services(to, nrr, header, payload, None, request_info,
                                    (*seen, id(si)))
        if not n and nrr is not None:
            exporter.drop_response(nrr)
        return n

    def _service_traced(self, si: _ServiceImport, trace: Any, subject: bytes,
                        reply: bytes | None, header: bytes | None, payload: bytes,
                        origin: Any) -> int:
        """A traced request through an export with ``allow_trace``: the exporter's receivers
        are traced (``eg`` events naming their account), and the request they get names a
        ``_R_`` trace destination that leads back to the requester's (nats-server's trace
        response import); trace-only delivers nothing but counts the receivers."""
        exporter = si.exporter
        to = self.service_subject(si, subject)
        only = trace.only
        nrr = exporter.new_response(self, reply, si.export) if reply and not only else None
        hdr = set_header(header, REQUEST_INFO, go_json(self._client_info(origin, si.share)))
        tdest = None
        if not only:
            tdest = exporter.new_response(self, trace.dest.encode(), si.export, keep=True)
            hdr = set_header(hdr, TRACE_DEST, tdest)
        subs = list(receivers(exporter.sublist.match(to), None, self.router.queue_draw))
        for sub in subs:
            if sub.conn is not None:
                trace.egress(sub.conn.cid, sub.conn.name, sub.subject.decode(errors="replace"),
                             (sub.queue or b"").decode(), account=exporter.account)
            if not only:
                _deliver_sub(self.router, sub, to, nrr, hdr, payload)
        n = len(subs)
        if not n:
            if nrr is not None:
                exporter.drop_response(nrr)
            if tdest is not None:
                exporter.drop_response(tdest)
        return n

    @staticmethod
    def service_subject(si: _ServiceImport, subject: bytes) -> bytes:
        """Where a request on ``subject`` goes in the exporting account (its mappings too)."""
        to = si.destination(subject)
        mappings = si.exporter.mappings
        return mappings.map(to) if mappings is not None else to

    # -- message tracing (Nats-Trace-Dest): the cross-account part of Router.publish_traced

    def publish_traced(self, trace: Any, subject: bytes, reply: bytes | None,
                       header: bytes | None, payload: bytes, origin: Any) -> int:
        """Route a traced message on across accounts, as nats-server traces it: an ``se``
        event per subscriber a stream import reaches, an ``si`` event per service import (or
        response import); exports do not allow tracing further (``allow_trace`` is not
        supported), so the copies go on untraced, and a trace-only message stops there (a
        stream import's subscriber still counts as a receiver, a service import does not)."""
        delivered = 0
        only = trace.only
        if self.stream_out:
            for si, to in self._stream_targets(subject):
                for sub in list(receivers(si.target.sublist.match(to), None,
                                          self.router.queue_draw)):
                    trace.stream_export(si.target.account, to.decode(errors="replace"))
                    if si.allow_trace and sub.conn is not None:
                        # nats-server names the shadow subscription it made in this account
                        trace.egress(sub.conn.cid, sub.conn.name, shadow_subject(si, sub),
                                     (sub.queue or b"").decode(), account=si.target.account)
                    if not only:
                        _deliver_sub(self.router, sub, to, reply, header, payload)
                    delivered += 1
        if self.services:
            for svc in self._matching_services(subject):
                to = self.service_subject(svc, subject)
                trace.service_import(svc.exporter.account, subject.decode(errors="replace"),
                                     to.decode(errors="replace"))
                if svc.export.allow_trace:
                    delivered += self._service_traced(svc, trace, subject, reply, header,
                                                      payload, origin)
                elif not only:
                    delivered += self._service(svc, subject, reply, header, payload, origin,
                                               None, (), untraced=True)
        if self.responses and subject.startswith(_REPLY_PREFIX):
            rsi = self.responses.get(subject)
            if rsi is not None:
                trace.service_import(rsi.target.account, subject.decode(errors="replace"),
                                     rsi.reply.decode(errors="replace"))
                if not only:
                    delivered += self._respond(subject, rsi, header, payload)
        return delivered

    def _client_info(self, origin: Any, share: bool = False) -> dict[str, Any]:
        """nats-server's ``getClientInfo``: the account and RTT, and with ``share`` the
        requester's details and the server's name (Go's field order, empty ones left out)."""
        info: dict[str, Any] = {}
        if share and origin is not None:
            info["start"] = go_time(int(origin.start_time * 1_000_000_000))
            info["host"] = origin.host
            info["id"] = origin.cid
        info["acc"] = self.account
        if share and origin is not None:
            info["user"] = origin.user or ""
            info["name"] = origin.name
            info["lang"] = origin.lang
            info["ver"] = origin.version
        rtt = getattr(origin, "rtt", 0.0) if origin is not None else 0.0
        if rtt:
            info["rtt"] = int(rtt * 1_000_000_000)
        if share and origin is not None:
            info["server"] = self.router.server_name
            info["kind"] = "Client"
            info["client_type"] = "nats"
        return {k: v for k, v in info.items() if v not in ("", 0, None)}

    # -- response imports (this account exported the service)

    def new_response(self, requester: "AccountLinks", reply: bytes, export: Export,
                     keep: bool = False) -> bytes:
        subject = self.reply_prefix + _rand_token(self._names).encode()
        while subject in self.responses:
            subject = self.reply_prefix + _rand_token(self._names).encode()
        rsi = _ResponseImport(requester, reply, export.response_type == "Singleton",
                              export.response_threshold, keep)
        clock = self.router.clock
        rsi.last = clock.monotonic()
        rsi.timer = clock.call_later(rsi.threshold, self._expire, subject)
        self.responses[subject] = rsi
        if self.sublist.links is None:
            self.sublist.links = self
        return subject

    def drop_response(self, subject: bytes) -> None:
        rsi = self.responses.pop(subject, None)
        if rsi is not None and rsi.timer is not None:
            rsi.timer.cancel()
        self._maybe_unhook()

    def _maybe_unhook(self) -> None:
        """An account left with nothing to route across accounts (its last response import
        gone) leaves the publish path again."""
        if not self.responses and not self.stream_out and not self.services:
            self.sublist.links = None

    def _expire(self, subject: bytes) -> None:
        rsi = self.responses.get(subject)
        if rsi is None:
            return
        clock = self.router.clock
        left = rsi.last + rsi.threshold - clock.monotonic()
        if left > 0:
            rsi.timer = clock.call_later(left, self._expire, subject)
            return
        del self.responses[subject]
        self._maybe_unhook()

    def _respond(self, subject: bytes, rsi: _ResponseImport, header: bytes | None,
                 payload: bytes) -> int:
        target = rsi.target
        n = deliver_in(self.router, target.sublist, rsi.reply, None, header, payload, None)
        if target.responses and rsi.reply.startswith(_REPLY_PREFIX):
            back = target.responses.get(rsi.reply)  # a chained request: one more hop back
            if back is not None:
                n += target._respond(rsi.reply, back, header, payload)
        if rsi.keep:
            rsi.last = self.router.clock.monotonic()
        elif not n or rsi.singleton or (not payload and header is None):
            self.drop_response(subject)
        else:
            rsi.last = self.router.clock.monotonic()
        return n

    def resolve_service(self, subject: bytes) -> tuple[str, bytes] | None:
        """(exporting account, subject there) of the first service import a request on
        ``subject`` would take from this account; None when none matches."""
        for si in self._matching_services(subject):
            return si.exporter.account, self.service_subject(si, subject)
        return None

    def streams_to(self, account: str, subject: bytes) -> bool:
        """Does a message on ``subject`` published here reach ``account`` (stream import)?"""
        text = subject.decode(errors="surrogateescape")
        return any(si.target.account == account and subject_matches(si.pattern, text)
                   for si in self.stream_out)

    def stream_deliver_as(self, target: bytes, subject: bytes, reply: bytes,
                          hdr: bytes | None, data: bytes) -> int:
        """A consumer's delivery to ``target`` (its MSG line naming the stored ``subject``)
        along the stream imports of ``target``, as nats-server's shadow subscriptions deliver
        it: routed to the importers' subscribers of the subject ``target`` arrives under
        there, the MSG line still naming the stored ``subject`` (a prefix, ``to`` mapping or
        literal import included)."""
        return sum(self.router.deliver_as_in(si.target.sublist, to, subject, reply, hdr, data)
                   for si, to in self._stream_targets(target))

    def shadows_exact(self, subject: bytes, queue: bytes | None) -> bool:
        """Does an importer's live subscription have its shadow here on exactly ``subject``
        (with ``queue``: in that group)? Its shadow is on the import's subject when it covers
        the whole import (any subscription matching a literal import's subject), else on its
        own subject taken back through the import (:func:`shadow_subject`)."""
        for si, to in self._stream_targets(subject):
            importer = si.target.sublist
            if si.literal_to is None:
                if importer._has_exact_here(to, queue):
                    return True
                continue
            result = importer.match(to)
            subs = result.plain if queue is None else result.groups.get(queue, ())
            if any(not s.closed for s in subs):
                return True
        return False

    def respond_as(self, subject: bytes, stored: bytes, reply: bytes | None,
                   header: bytes | None, payload: bytes) -> int:
        """A message for the response import ``subject`` whose MSG line keeps ``stored`` (a
        JetStream consumer's delivery to a pull request that came through an import): on to
        the requester's reply, hop by hop, as :meth:`_respond` sends a plain response."""
        rsi = self.responses.get(subject)
        if rsi is None:
            return 0
        router = self.router
        target = rsi.target
        n = router.deliver_as_in(target.sublist, rsi.reply, stored, reply, header, payload)
        if target.responses and rsi.reply.startswith(_REPLY_PREFIX):
            n += target.respond_as(rsi.reply, stored, reply, header, payload)
        if rsi.keep:
            rsi.last = router.clock.monotonic()
        elif not n or rsi.singleton or (not payload and header is None):
            self.drop_response(subject)
        else:
            rsi.last = router.clock.monotonic()
        return n

    def num_responses(self) -> int:
        return len(self.responses)


def set_header(header: bytes | None, name: bytes, value: bytes) -> bytes:
    """``setHeader``: ``name: value`` in a message's header (replacing one already there)."""
    line = name + b": " + value + b"\r\n"
    if header is None:
        return b"NATS/1.0\r\n" + line + b"\r\n"
    lines = header.split(b"\r\n")
    low = name.lower() + b":"
    kept = [ln for ln in lines[1:] if ln and not ln.lower().startswith(low)]
    return b"\r\n".join([lines[0], *kept]) + b"\r\n" + line + b"\r\n"


def deliver_in(router: Any, sublist: Any, subject: bytes, reply: bytes | None,
               header: bytes | None, payload: bytes, origin: Any) -> int:
    """Deliver to the matching subscribers of one account (no no-responders status)."""
    return fan_out(router, sublist.match(subject), subject, reply, header, payload, origin)


def shadow_subject(si: _StreamImport, sub: Subscription) -> str:
    """The subject of the subscription nats-server makes in the exporting account for an
    importer's ``sub`` (its "shadow"): the import's own subject when ``sub`` covers all of
    it, else ``sub``'s subject taken back through the prefix."""
    mine = sub.subject.decode(errors="replace")
    if si.literal_to is not None or is_subset(_tokenize_back(si), mine):
        return si.pattern
    if si.prefix and mine.startswith(si.prefix):
        return mine[len(si.prefix):]
    if si.transform is None:
        return mine
    # a "to" mapping taken backwards: each wildcard of the import's subject gets the token
    # ``sub`` has where the mapping put it
    where: dict[int, int] = {}
    rest = -1
    for i, tok in enumerate(si.transform.dest.split(".")):
        kind, idxs = _index_placeholders(tok)
        if kind == "wildcard" and idxs:
            where[idxs[0]] = i
        elif tok == ">":
            rest = i
    toks = mine.split(".")
    out, n = [], 0
    for tok in si.pattern.split("."):
        if tok == "*":
            n += 1
            i = where.get(n, -1)
            out.append(toks[i] if 0 <= i < len(toks) else "*")
        elif tok == ">":
            out.append(".".join(toks[rest:]) if 0 <= rest < len(toks) else ">")
        else:
            out.append(tok)
    return ".".join(out)


def _tokenize_back(si: _StreamImport) -> str:
    """The subjects an import delivers under in the importer, wildcards as ``*``/``>``."""
    return si.pattern if si.transform is None else _wild_dest(si.transform.dest)


def _wild_dest(dest: str) -> str:
    """A transform destination with its ``$N`` / ``{{wildcard(N)}}`` tokens as ``*``."""
    out = []
    for tok in dest.split("."):
        kind, _ = _index_placeholders(tok)
        out.append("*" if kind == "wildcard" else tok)
    return ".".join(out)


def _deliver_sub(router: Any, sub: Subscription, subject: bytes, reply: bytes | None,
                 header: bytes | None, payload: bytes) -> None:
    if sub.conn is None:
        sub.callback(sub, subject, reply, header, payload, None)
    else:
        sub.conn.deliver(sub, subject, reply, header, payload)
    stats = router.stats
    stats.out_msgs += 1
    stats.out_bytes += len(payload) + (len(header) if header else 0)


# ----------------------------------------------------------------------------- setup


def install(router: Any, config: Any) -> dict[str, AccountLinks]:
    """Give each account of ``config`` that routes across accounts its links (on its sublist:
    ``links`` for imports and exports, ``mappings`` for mappings). Returns them by account."""
    links: dict[str, AccountLinks] = {}

    def of(account: str) -> AccountLinks:
        al = links.get(account)
        if al is None:
            sl = router.account_sublist(account)
            al = links[account] = AccountLinks(router, account, sl)
        return al

    by_account: dict[str, list[Mapping]] = {}
    for m in config.mappings:
        by_account.setdefault(m.account, []).append(m)
    for account, maps in by_account.items():
        al = of(account)
        source = router.randomness.child("mappings")
        al.mappings = Mappings(maps, source.randrange, source.child("random-token").getrandbits)
        al.sublist.mappings = al.mappings
    exports = [e for e in config.exports if e.subject]
    for imp in config.imports:
        exporter, importer = of(imp.source), of(imp.account)
        if imp.service:
            export = _find_export(exports, imp.source, imp.subject, True)
            importer.services.append(_ServiceImport(imp, exporter, export))
            importer.sublist.links = importer
        else:
            si = _StreamImport(imp, importer)
            exporter.stream_out.append(si)
            exporter.sublist.links = exporter
            importer.sublist.stream_imports = importer.sublist.stream_imports + [(exporter, si)]
    return links


def _find_export(exports: list[Export], account: str, subject: str, service: bool) -> Export:
    mine = [e for e in exports if e.account == account and e.service == service]
    for e in mine:
        if e.subject == subject:
            return e
    for e in mine:
        if is_subset(subject, e.subject):
            return e
    return Export(account, subject, service)


# ----------------------------------------------------------------------------- /accountz


_RESPONSE_TYPES = {"Singleton": "Singleton", "Stream": "Streamed", "Chunked": "Chunked"}


def account_report(config: Any, account: str, links: AccountLinks | None = None
                   ) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ``/accountz?acc=`` fields of ``account`` this module owns, shaped as nats-server's
    ``AccountInfo``: (``mappings``/``exports``/``imports``, each only when not empty, for
    their place before ``name_tag``; ``responses``, the live response imports, for theirs
    after ``sublist_stats``). nats-server's own ``$SYS`` service imports are not listed:
    minijs serves no ``$SYS`` requests. nats-server lists exports and imports in map order;
    these come services first, then streams, each in config order."""
    before: dict[str, Any] = {}
    mappings = [m for m in config.mappings if m.account == account]
    if mappings:
        out: dict[str, list[dict[str, Any]]] = {}
        for m in mappings:
            out[m.source] = [{"subject": tr.dest, "weight": cum}
                             for tr, cum in Mappings._destinations(m)]
        before["mappings"] = out
    exports = [e for e in config.exports if e.account == account and e.subject]
    if exports:
        rows = []
        for e in sorted(exports, key=lambda e: not e.service):
            row: dict[str, Any] = {"subject": e.subject,
                                   "type": "service" if e.service else "stream"}
            if e.service:
                row["response_type"] = _RESPONSE_TYPES[e.response_type]
            if e.accounts:
                row["approved_accounts"] = list(dict.fromkeys(e.accounts))
            rows.append(row)
        before["exports"] = rows
    imports = [i for i in config.imports if i.account == account]
    if imports:
        rows = []
        for i in sorted(imports, key=lambda i: i.service):
            row = {"subject": i.subject, "account": i.source}
            if i.service:
                row["to"] = i.to or i.subject
            row["local_subject"] = i.to or i.subject if i.service else _stream_to(i)
            row.update({"type": "service" if i.service else "stream", "invalid": False,
                        "share": i.share, "tracking": False})
            rows.append(row)
        before["imports"] = rows
    after: dict[str, Any] = {}
    if links is not None and links.responses:
        after["responses"] = {
            subject.decode(): {
                "subject": rsi.reply.decode(errors="replace"), "account": rsi.target.account,
                "to": subject.decode(), "local_subject": subject.decode(), "type": "service",
                "invalid": False, "share": False, "tracking": False,
            } for subject, rsi in links.responses.items()}
    return before, after
