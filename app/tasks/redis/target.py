"""Which Redis the service uses: one server, a primary found through Sentinels, or a Cluster.

Every Redis role (claims, stop, run logs, queues, limits, liveness, kept
outcomes, the page cache) connects through `client.connect`, which
reads this; the roles differ only in their key names (`keys_tagged`).
A URL alone names one server, so a caller that knows no more passes a string.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from app.config import SettingsPart, sentinel_addresses


class RedisTarget(SettingsPart, prefix="redis_"):
    url: str
    """The server; with Sentinels only its password, database and scheme; with a Cluster, a node."""
    sentinels: str
    sentinel_master: str
    cluster: bool

    @classmethod
    def of(cls, address: RedisTarget | str) -> RedisTarget:
        """`address` itself, or the one server a URL names."""
        if isinstance(address, RedisTarget):
            return address
        return cls(url=address, sentinels="", sentinel_master="", cluster=False)

    @property
    def sentinel_addresses(self) -> list[tuple[str, int]]:
        return sentinel_addresses(self.sentinels)

    @property
    def keys_tagged(self) -> bool:
        """Whether keys carry a hash tag, `{user}`, so that each user's keys share a slot.

        Only a Cluster needs it, and only there do keys change: a server
        (or a Sentinel-managed primary) keeps the names it always had, so
        instances of an older version running beside newer ones during a
        rolling update still see each other's claims.
        """
        return self.cluster

    @property
    def where(self) -> str:
        """The Redis as messages and logs name it, never with its password."""
        if self.sentinels:
            return f"primary {self.sentinel_master!r} of the Sentinels {self.sentinels}"
        if self.cluster:
            return f"cluster node {redacted(self.url)}"
        return redacted(self.url)


def redacted(url: str) -> str:
    """The URL without credentials (user info, or a `password=` query) for messages and logs."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2], query=""))
