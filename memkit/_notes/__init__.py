"""Notes: a folder of markdown files indexed as memories, the daily log, the watcher."""
