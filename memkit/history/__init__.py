"""History stores. ``PROVIDERS`` maps a config provider name to its class, loaded lazily."""

from memkit.history.base import HistoryStore

PROVIDERS: dict[str, str] = {
    "sqlite": "memkit.history.sqlite:SQLiteHistory",
    "postgres": "memkit.history.postgres:PostgresHistory",
}

__all__ = ["PROVIDERS", "HistoryStore"]
