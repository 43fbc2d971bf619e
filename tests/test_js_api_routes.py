"""The ``$JS.API`` route table (:mod:`minijs.jetstream.api.routes`) against its dispatcher.

Handlers are resolved by name on first use, so a route naming a handler that does not exist,
or one that cannot take the arguments its kind and wildcards give, would only fail when a
client first sends that request: these tests resolve and bind every route. What each endpoint
answers is the conformance suite's (``conformance/test_js_api_edges.py`` and the others), on
both servers.
"""
from __future__ import annotations

import inspect

import pytest

from minijs.jetstream.api import routes as R
from minijs.jetstream.api.dispatch import JetStreamApi
from minijs.jetstream.engine import JetStream
from minijs.server import Server


def make_api() -> JetStreamApi:
    """The dispatcher of a real (not started) server's engine."""
    return JetStreamApi(JetStream(Server(jetstream=True)))


def _wildcards(route: R.Route) -> int:
    if route.whole_subject:
        return 1
    return sum(1 for tok in route.subject.split(".") if tok in ("*", ">"))


@pytest.mark.parametrize("route", R.ROUTES, ids=lambda r: r.subject)
def test_every_route_resolves_and_binds(route: R.Route) -> None:
    api = make_api()
    handler = api.handler(route.handler)
    tokens = ["t"] * _wildcards(route)
    if route.kind == R.RAW:
        args = [b"subject", b"reply", None, b"", None, *tokens]
        assert route.response == ""
    elif route.kind == R.JSON_HDR:
        args = [b"", None, *tokens]
    else:
        assert route.kind == R.JSON
        args = [b"", *tokens]
    inspect.signature(handler).bind(*args)
    if route.kind != R.RAW:
        assert route.response.endswith("_response")
    if route.checked_first:
        inspect.signature(api.handler(route.checked_first)).bind(b"")


def test_error_fields_name_routed_responses() -> None:
    responses = {route.response for route in R.ROUTES}
    assert set(R.ERROR_FIELDS) <= responses


def test_patterns_are_unique_and_literal_at_their_head() -> None:
    subjects = [route.subject for route in R.ROUTES]
    assert len(subjects) == len(set(subjects))
    for subject in subjects:
        head = subject.split(".")[:2]
        assert "*" not in head and ">" not in head, subject


@pytest.mark.parametrize("subject, handler, args", [
    ("INFO", "account_info", ()),
    ("STREAM.CREATE.S", "streams.create", ("S",)),
    ("STREAM.CREATE.", "streams.create", ("",)),
    ("STREAM.NAMES", "streams.names", ()),
    ("STREAM.MSG.GET.S", "streams.msg_get", ("S",)),
    ("DIRECT.GET.S", "streams.direct_get", ("S",)),
    ("DIRECT.GET.S.a.b", "streams.direct_get", ("S", "a.b")),
    ("CONSUMER.CREATE.S", "consumers.create", ("S",)),
    ("CONSUMER.CREATE.S.C.f.>", "consumers.create", ("S.C.f.>",)),
    ("CONSUMER.DURABLE.CREATE.S.C", "consumers.create", ("S.C",)),
    ("CONSUMER.MSG.NEXT.S.C", "consumers.msg_next", ("S", "C")),
    ("STREAM.LEADER.STEPDOWN.S", R.CLUSTER_ONLY, ("S",)),
    ("CONSUMER.LEADER.STEPDOWN.S.C", R.CLUSTER_ONLY, ("S", "C")),
])
def test_matches(subject: str, handler: str, args: tuple) -> None:
    found = R.RouteTable().match(subject.split("."))
    assert found is not None
    route, got = found
    assert (route.handler, got) == (handler, args)


@pytest.mark.parametrize("subject", [
    "", "INFO.X", "STREAM", "STREAM.INFO", "STREAM.INFO.S.X", "STREAM.NAMES.X", "STREAM.MSG.GET",
    "STREAM.MSG.PUT.S", "STREAM.LEADER.STEPDOWN", "DIRECT.GET", "DIRECT.S", "CONSUMER.CREATE",
    "CONSUMER.DURABLE.CREATE", "CONSUMER.DURABLE.S.C", "CONSUMER.INFO.S",
    "CONSUMER.MSG.NEXT.S", "CONSUMER.MSG.NEXT.S.C.X",
])
def test_no_route_is_no_endpoint(subject: str) -> None:
    """Token counts are exact: a subject one token short or long of an endpoint's is none."""
    assert R.RouteTable().match(subject.split(".")) is None
