from __future__ import annotations

import rocketq
from rocketq.errors import BrokerError, MessageIllegalError, RocketQError, SystemBusyError, TopicNotExistError


def test_all_is_sorted_and_importable() -> None:
    assert list(rocketq.__all__) == sorted(rocketq.__all__)
    for name in rocketq.__all__:
        assert hasattr(rocketq, name), name


def test_broker_error_for_code_maps_classes() -> None:
    err = BrokerError.for_code(17, "topic[x] not exist")
    assert isinstance(err, TopicNotExistError)
    assert isinstance(err, RocketQError)
    assert err.code == 17
    assert "topic[x] not exist" in str(err)
    assert isinstance(BrokerError.for_code(13), MessageIllegalError)
    assert BrokerError.for_code(2).retriable is True
    assert isinstance(BrokerError.for_code(2), SystemBusyError)
    unknown = BrokerError.for_code(9999, "?")
    assert type(unknown) is BrokerError
    assert unknown.retriable is False
