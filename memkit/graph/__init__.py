"""Graph stores: entities and relations beside the memories. ``PROVIDERS`` maps a config
provider name to its class, loaded lazily."""

from memkit.graph.base import (
    Entity,
    GraphError,
    GraphScope,
    GraphStore,
    NewEntity,
    NewRelation,
    Relation,
    Subgraph,
)

PROVIDERS: dict[str, str] = {
    "sqlite": "memkit.graph.sqlite:SQLiteGraph",
    "postgres": "memkit.graph.postgres:PostgresGraph",
    "neo4j": "memkit.graph.neo4j:Neo4jGraph",
}

__all__ = [
    "PROVIDERS",
    "Entity",
    "GraphError",
    "GraphScope",
    "GraphStore",
    "NewEntity",
    "NewRelation",
    "Relation",
    "Subgraph",
]
