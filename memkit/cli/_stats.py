"""``memkit stats`` on a terminal: tables and a histogram of confidence."""

from __future__ import annotations

from typing import Any

BAR = 40


def histogram_lines(bins: list[int], width: int = BAR) -> list[str]:
    """One line per confidence bin, ``0.0-0.1 ████ 12``, bars scaled to the fullest bin."""
    top = max(bins, default=0) or 1
    step = 1 / len(bins) if bins else 0.1
    return [f"{i * step:.1f}-{(i + 1) * step:.1f} {'█' * round(width * n / top):<{width}} {n}"
            for i, n in enumerate(bins)]


def render_stats(data: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    console.print(f"{data['memories']} current memories in {data['store']} "
                  f"(embedder {data['embedder']}), decay {'on' if data['decay'] else 'off'}",
                  highlight=False)
    if data["memories"]:
        console.print(f"average confidence {data['average_confidence']:.2f}, "
                      f"{data['low_confidence']} below 0.05; oldest {data['oldest'][:10]}, "
                      f"newest {data['newest'][:10]}", highlight=False)
    if data["confirmations"]:
        console.print(f"re-stated {data['confirmations']} times by later adds", highlight=False)
    if data["entities"]:
        console.print(f"{data['entities']} entities, {data['relations']} open relations",
                      highlight=False)
    for title, counts, column in (("by type", data["by_type"], "type"),
                                  ("by state", data["by_state"], "state"),
                                  ("growth per day", data["growth"], "day"),
                                  ("top entities", data["top_entities"], "entity")):
        if counts:
            table = Table(title=title)
            table.add_column(column)
            table.add_column("count", justify="right")
            for key, value in counts.items():
                table.add_row(str(key), str(value))
            console.print(table)
    console.print("confidence", highlight=False)
    for line in histogram_lines(data["confidence_histogram"]):
        console.print(line, highlight=False)
    if data["most_accessed"]:
        table = Table(title="most accessed")
        table.add_column("id", no_wrap=True, min_width=36)
        table.add_column("accesses", justify="right")
        table.add_column("memory", overflow="fold")
        for item in data["most_accessed"]:
            table.add_row(item["id"], str(item["access_count"]), item["memory"])
        console.print(table)
