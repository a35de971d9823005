#!/usr/bin/env bash
# bench/graph.py with the test engines (PostgreSQL + pgvector, the FalkorDB Bolt server)
# started for it and stopped after: bash bench/graph_engines.sh traversal [args...]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$PWD/.venv/bin:$PATH" LITELLM_LOCAL_MODEL_COST_MAP=True
export MEMKIT_TEST_CHROMA_URL=unused  # engines_start skips the Chroma server
# shellcheck source=scripts/engines.sh
source scripts/engines.sh
engines_start
python bench/graph.py "$@"
