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


def test_import_rocketq_is_light() -> None:
    """``import rocketq`` loads no server, store, client or event loop: they load on first use."""
    import subprocess
    import sys

    code = (
        "import sys, rocketq\n"
        "heavy = sorted(m for m in sys.modules if m == 'asyncio' or m.startswith(("
        "'rocketq.broker', 'rocketq.store', 'rocketq.namesrv', 'rocketq.embedded', 'rocketq.client', "
        "'rocketq.admin', 'rocketq.remoting', 'rocketq.spark', 'rocketq.lab')))\n"
        "print(' '.join(heavy))\n"
        "assert rocketq.Producer.__module__.startswith('rocketq.client')\n"
        "assert 'rocketq.broker' not in sys.modules\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == ""
