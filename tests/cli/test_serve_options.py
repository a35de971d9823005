"""What ``memkit serve`` reads from its flags and the config before it starts."""

from __future__ import annotations

from typing import Any

import pytest

from memkit import ConfigError
from memkit.cli._serve import logs_requests


@pytest.mark.parametrize(("server", "flag", "verbose", "logged"), [
    ({}, None, 0, False),                       # off by default
    ({}, None, 1, True),                        # -v logs requests
    ({"access_log": True}, None, 0, True),      # the config turns it on ...
    ({"access_log": False}, None, 1, False),    # ... or off, over -v
    ({"access_log": False}, True, 0, True),     # the flag wins over the config
    ({"access_log": True}, False, 1, False),
    ({"access_log": None}, None, 0, False),
])
def test_access_log_from_flag_then_config_then_verbosity(
        server: dict[str, Any], flag: bool | None, verbose: int, logged: bool) -> None:
    assert logs_requests({"server": server}, flag, verbose) is logged


def test_access_log_must_be_a_boolean() -> None:
    with pytest.raises(ConfigError, match=r"server.access_log must be true or false, not 'on'"):
        logs_requests({"server": {"access_log": "on"}}, None, 0)
    assert logs_requests({}, None, 0) is False  # no server section at all
