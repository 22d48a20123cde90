"""A live session's reuse of the group types' listings (``inspector.reads.typed_groups.GroupListings``)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest

from mm2ctl.core.kafka.group_admin import TypedGroup
from mm2ctl.inspector.reads import typed_groups
from mm2ctl.inspector.reads.typed_groups import GroupListings, TypedGroups

PLAIN = [TypedGroup("a", "classic", "Empty"), TypedGroup("b", "consumer", "Stable")]
WITH_SHARE = [*PLAIN, TypedGroup("s", "share", "Stable")]


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_a_listing_is_reused_until_the_ttl_and_not_after() -> None:
    clock = Clock()
    listings = GroupListings(60.0, clock=clock)
    listings.keep("src", {"bootstrap.servers": "x:1"}, clock(), PLAIN)
    clock.t += 59.9
    assert listings.fresh("src", {"bootstrap.servers": "x:1"}) == PLAIN
    assert listings.fresh("src", {"bootstrap.servers": "y:1"}) is None  # another cluster's settings
    assert listings.fresh("dst", {"bootstrap.servers": "x:1"}) is None
    clock.t += 0.1
    assert listings.fresh("src", {"bootstrap.servers": "x:1"}) is None


def test_a_listing_with_a_share_or_streams_group_is_never_kept() -> None:
    clock = Clock()
    listings = GroupListings(60.0, clock=clock)
    listings.keep("src", {}, clock(), WITH_SHARE)
    listings.keep("dst", {}, clock(), [TypedGroup("k", "streams", "Empty")])
    assert listings.fresh("src", {}) is None
    assert listings.fresh("dst", {}) is None


class FakeAdmin:
    calls: ClassVar[list[str]] = []
    answers: ClassVar[dict[str, list[TypedGroup]]] = {}
    made: ClassVar[list[FakeAdmin]] = []

    def __init__(self, settings: Any, name: str, *, timeout_s: float = 30.0, keep_alive: bool = False) -> None:
        self.name = name
        self.keep_alive = keep_alive
        self.closed = False
        FakeAdmin.made.append(self)

    def close(self) -> None:
        self.closed = True

    def list_groups(self) -> list[TypedGroup]:
        FakeAdmin.calls.append(self.name)
        return FakeAdmin.answers[self.name]


@pytest.fixture()
def fake_admin(monkeypatch: pytest.MonkeyPatch) -> type[FakeAdmin]:
    monkeypatch.setattr(typed_groups, "GroupAdmin", FakeAdmin)
    FakeAdmin.calls = []
    FakeAdmin.made = []
    FakeAdmin.answers = {"src": PLAIN, "dst": PLAIN}
    return FakeAdmin


CONFIG: Any = SimpleNamespace(client_settings=lambda alias, pair: {"bootstrap.servers": f"{alias}:9092"})
PAIR: Any = SimpleNamespace(source="src", target="dst", name="src->dst")


def _types(listings: GroupListings | None, pool: ThreadPoolExecutor) -> dict[str, str]:
    typed = TypedGroups(CONFIG, PAIR, pool, listings=listings)
    return typed.unmirrored("src", lambda _g: True)


def test_a_live_session_lists_once_within_the_ttl(fake_admin: type[FakeAdmin]) -> None:
    clock = Clock()
    listings = GroupListings(60.0, clock=clock)
    with ThreadPoolExecutor(2) as pool:
        assert _types(listings, pool) == {}
        assert _types(listings, pool) == {}
        assert fake_admin.calls == ["src"]
        fake_admin.answers["src"] = WITH_SHARE  # a share group appears
        assert _types(listings, pool) == {}  # not yet: the kept listing is reused
        clock.t += 60.0
        assert _types(listings, pool) == {"s": "share"}  # within the TTL
        assert _types(listings, pool) == {"s": "share"}  # that listing is not kept: read again
        assert fake_admin.calls == ["src", "src", "src"]


def test_without_listings_every_inspection_lists(fake_admin: type[FakeAdmin]) -> None:
    with ThreadPoolExecutor(2) as pool:
        _types(None, pool)
        _types(None, pool)
    assert fake_admin.calls == ["src", "src"]


def test_a_live_session_keeps_one_long_lived_client_per_cluster(fake_admin: type[FakeAdmin]) -> None:
    fake_admin.answers["src"] = WITH_SHARE
    listings = GroupListings(0.0)  # no listing reused: every run lists, through the kept clients
    with ThreadPoolExecutor(2) as pool:
        for _ in range(3):
            _types(listings, pool)
    assert fake_admin.calls == ["src", "src", "src"]
    assert sorted((a.name, a.keep_alive) for a in fake_admin.made) == [("dst", True), ("src", True)]
    assert not any(a.closed for a in fake_admin.made)
    listings.close()
    assert all(a.closed for a in fake_admin.made)


def test_a_cluster_without_share_or_streams_groups_keeps_no_idle_client(fake_admin: type[FakeAdmin]) -> None:
    listings = GroupListings(60.0, clock=Clock())
    with ThreadPoolExecutor(2) as pool:
        _types(listings, pool)
    (src,) = [a for a in fake_admin.made if a.name == "src"]
    assert src.closed  # its listing is kept for the TTL; its JVM is ended until then


def test_without_listings_no_client_is_kept(fake_admin: type[FakeAdmin]) -> None:
    with ThreadPoolExecutor(2) as pool:
        _types(None, pool)
    assert [a.keep_alive for a in fake_admin.made] == [False, False]
