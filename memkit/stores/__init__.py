"""Vector stores. ``PROVIDERS`` maps a config provider name to its class, loaded lazily."""

from memkit.stores._catalogue import STORES, StoreInfo, extras_list, store_names, store_table
from memkit.stores.base import Hit, Record, VectorStore, WriteBatch

PROVIDERS: dict[str, str] = {
    "memory": "memkit.stores.memory:InMemoryStore",
    "sqlite": "memkit.stores.sqlite:SQLiteStore",
    "qdrant": "memkit.stores.qdrant:QdrantStore",
    "chroma": "memkit.stores.chroma:ChromaStore",
    "pgvector": "memkit.stores.pgvector:PgVectorStore",
    "milvus": "memkit.stores.milvus:MilvusStore",
    "lancedb": "memkit.stores.lancedb:LanceDBStore",
    "faiss": "memkit.stores.faiss:FaissStore",
    "redis": "memkit.stores.redis:RedisStore",
}

__all__ = ["PROVIDERS", "STORES", "Hit", "Record", "StoreInfo", "VectorStore", "WriteBatch", "extras_list",
           "store_names", "store_table"]
