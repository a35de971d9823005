"""The integrations' stores run on every memkit engine (``store_factory``)."""

from tests.stores.conftest import store_factory  # noqa: F401 - the fixture, shared
