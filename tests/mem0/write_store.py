"""Run by the mem0 virtualenv of tests/mem0/test_import.py (not by pytest): writes a
mem0 store with mem0's own API and prints, as JSON, what mem0 itself reports of it.

    python write_store.py '{"config": {...mem0 config...}}'
"""

import json
import sys

from mem0 import Memory

config = json.loads(sys.argv[1])["config"]
m = Memory.from_config(config)


def added(text, **kwargs):
    return m.add(text, infer=False, **kwargs)["results"][0]["id"]


rye = added("Likes rye bread", user_id="alice", metadata={"topic": "food", "stars": 4})
acme = added("Works at Acme", agent_id="helper", run_id="r1", metadata={"source": "chat"})
home = added("Lives in Porto", user_id="alice")
m.update(home, "Lives in Lisbon")
gone = added("Owns a red bicycle", user_id="bob")
m.delete(gone)
live = [rye, acme, home]
print(json.dumps({
    "memories": [m.get(id) for id in live],
    "history": {id: m.history(id) for id in live},
    "deleted": gone,
}, default=str))
