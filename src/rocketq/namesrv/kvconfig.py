"""The name server's KV configuration: namespaced string settings that admin tools put and brokers read.

RocketMQ's ``KVConfigManager``: a table ``namespace -> key -> value`` that ``PUT_KV_CONFIG``,
``GET_KV_CONFIG``, ``DELETE_KV_CONFIG`` and ``GET_KVLIST_BY_NAMESPACE`` work on. One namespace has
a meaning to the name server itself, ``ORDER_TOPIC_CONFIG`` (:data:`ORDER_TOPIC_CONFIG`): its
value for a topic (``"broker-a:4;broker-b:4"``) is the topic's ``orderTopicConf`` in routes when
``order_message_enable`` is on, and the whole namespace is the body of every ``REGISTER_BROKER``
response (brokers use it to learn which topics are ordered).

RocketMQ persists the table to ``~/namesrv/kvConfig.json`` after every change. Here persistence is
opt-in (``path``): an embedded name server started by tests or the lab writes nothing unless told
to. The file has RocketMQ's format (``{"configTable":{"<namespace>":{"<key>":"<value>"}}}``) and is
replaced atomically (temporary file, fsync, rename), so a crash leaves the old or the new table,
never half of one.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from rocketq.errors import ConfigError, RemoteProtocolError
from rocketq.namesrv.javamap import JavaHashMap
from rocketq.protocol import fastjson

__all__ = ["ORDER_TOPIC_CONFIG", "KVConfig"]

log = logging.getLogger(__name__)

ORDER_TOPIC_CONFIG = "ORDER_TOPIC_CONFIG"
"""The namespace whose values are ordered topics' ``orderTopicConf`` (RocketMQ ``NamesrvUtil``)."""


class KVConfig:
    """``namespace -> key -> value``, kept in Java ``HashMap`` order, optionally persisted to ``path``.

    >>> kv = KVConfig()
    >>> kv.put(ORDER_TOPIC_CONFIG, "OrderTopic", "broker-a:4")
    >>> kv.get(ORDER_TOPIC_CONFIG, "OrderTopic"), kv.get(ORDER_TOPIC_CONFIG, "Other")
    ('broker-a:4', None)
    >>> kv.namespace(ORDER_TOPIC_CONFIG)
    {'OrderTopic': 'broker-a:4'}
    """

    __slots__ = ("_path", "_table")

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self._path = Path(path) if path is not None else None
        self._table: JavaHashMap[str, JavaHashMap[str, str]] = JavaHashMap()
        if self._path is not None:
            self._load(self._path)

    @property
    def path(self) -> Path | None:
        """Where the table is persisted (``None``: in memory only)."""
        return self._path

    def put(self, namespace: str, key: str, value: str) -> None:
        """Set ``key`` in ``namespace`` (creating the namespace), then persist."""
        table = self._table.get(namespace)
        if table is None:
            table = self._table[namespace] = JavaHashMap()
            log.info("KV config: new namespace %s", namespace)
        previous = table.get(key)
        table[key] = value
        log.info(
            "KV config: %s %s/%s = %s",
            "updated" if previous is not None else "created",
            namespace,
            key,
            value,
        )
        self._persist()

    def get(self, namespace: str, key: str) -> str | None:
        """The value of ``key`` in ``namespace``, or ``None``."""
        table = self._table.get(namespace)
        return table.get(key) if table is not None else None

    def delete(self, namespace: str, key: str) -> str | None:
        """Remove ``key`` from ``namespace`` (the namespace stays, even empty, as RocketMQ's does).

        Returns the removed value, ``None`` when there was none. Persists either way, as RocketMQ does.
        """
        table = self._table.get(namespace)
        removed = None
        if table is not None and key in table:
            removed = table[key]
            del table[key]
            log.info("KV config: deleted %s/%s (was %s)", namespace, key, removed)
        self._persist()
        return removed

    def namespace(self, namespace: str) -> dict[str, str] | None:
        """All of ``namespace`` in Java ``HashMap`` order (a ``KVTable``); ``None`` if never created."""
        table = self._table.get(namespace)
        if table is None:
            return None
        return dict(table.java_items())

    def namespaces(self) -> list[str]:
        """The namespaces, in Java ``HashMap`` order."""
        return self._table.java_keys()

    def to_json(self) -> str:
        """The table as RocketMQ's ``KVConfigSerializeWrapper`` JSON."""
        table = {ns: dict(kv.java_items()) for ns, kv in self._table.java_items()}
        return fastjson.dumps({"configTable": table})

    def _persist(self) -> None:
        path = self._path
        if path is None:
            return
        data = self.to_json().encode("utf-8")
        tmp = path.with_name(path.name + ".tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with tmp.open("wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            tmp.replace(path)
            dir_fd = os.open(path.parent, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
        except OSError as exc:
            # RocketMQ logs and carries on with the table in memory; so do we.
            log.error("KV config: could not persist to %s: %s", path, exc)

    def _load(self, path: Path) -> None:
        try:
            content = path.read_bytes()
        except FileNotFoundError:
            return
        except OSError as exc:
            raise ConfigError(f"cannot read the KV config file {path}: {exc}") from None
        if not content.strip():
            return
        try:
            doc = fastjson.loads(content)
        except RemoteProtocolError as exc:
            raise ConfigError(f"the KV config file {path} is not valid JSON: {exc}") from None
        table = doc.get("configTable") if isinstance(doc, dict) else None
        if table is None:
            return
        if not isinstance(table, dict) or not all(
            isinstance(ns, str)
            and isinstance(kv, dict)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in kv.items())
            for ns, kv in table.items()
        ):
            raise ConfigError(f"the KV config file {path} does not hold namespace -> key -> string value")
        for ns, kv in table.items():
            target = self._table[ns] = JavaHashMap()
            for k, v in kv.items():
                target[k] = v
        log.info("KV config: loaded %d namespace(s) from %s", len(table), path)
