"""The order in which Java's ``HashMap``/``HashSet`` iterate, which is the order fastjson writes them in.

Re-exported from :mod:`rocketq.protocol.javahash`, which owns the rule.

>>> java_hash_order(["broker-a", "broker-b"])
['broker-b', 'broker-a']
"""

from __future__ import annotations

from rocketq.protocol.javahash import java_hash_order

__all__ = ["java_hash_order"]
