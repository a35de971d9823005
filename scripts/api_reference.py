"""Write docs/api.md: the API reference as plain markdown, readable without building the site.

    python scripts/api_reference.py          # rewrite docs/api.md
    python scripts/api_reference.py --check  # exit 1 if it is stale (tests/test_docs.py runs this)

It follows docs/reference.md (the site's mkdocstrings page): the same sections, the same
objects in the same order, each with its signature and docstring.
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
import textwrap
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SOURCE = ROOT / "docs" / "reference.md"
TARGET = ROOT / "docs" / "api.md"
HEADER = """# API reference

Every public name, with its signature and docstring, generated from the code by
`python scripts/api_reference.py` (the test suite fails when this page is stale). The
documentation site renders the same objects in [the rendered reference](reference.md).
Everything here is importable from `memkit` unless its heading names another module.
"""


def _resolve(dotted: str) -> Any:
    module_name, _, attribute = dotted.rpartition(".")
    try:
        return importlib.import_module(dotted)
    except ImportError:
        return getattr(importlib.import_module(module_name), attribute)


def _doc(obj: Any) -> str:
    """The docstring as markdown: a paragraph after a line ending in ``::`` is a code block."""
    lines = inspect.cleandoc(obj.__doc__ or "").strip().splitlines()
    out: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        if not line.rstrip().endswith("::"):
            out.append(line)
            index += 1
            continue
        out.append(line.rstrip()[:-1])
        index += 1
        while index < len(lines) and not lines[index].strip():
            index += 1
        block: list[str] = []
        while index < len(lines) and lines[index].strip():
            block.append(lines[index])
            index += 1
        out.extend(["", "```python", *textwrap.dedent("\n".join(block)).splitlines(), "```"])
    return "\n".join(out)


def _annotation(value: Any) -> str:
    text = value if isinstance(value, str) else inspect.formatannotation(value)
    return text.replace("NoneType", "None")


def _signature(name: str, obj: Any) -> str:
    """``name(a: int, *, b: str = 'x') -> T``, one parameter a line when it is long."""
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return name
    params: list[str] = []
    star_done = False
    for param in signature.parameters.values():
        if param.name == "self":
            continue
        if param.kind is param.KEYWORD_ONLY and not star_done:
            params.append("*")
            star_done = True
        prefix = {param.VAR_POSITIONAL: "*", param.VAR_KEYWORD: "**"}.get(param.kind, "")
        star_done = star_done or param.kind is param.VAR_POSITIONAL
        text = prefix + param.name
        if param.annotation is not param.empty:
            text += f": {_annotation(param.annotation)}"
        if param.default is not param.empty:
            text += f" = {param.default!r}"
        params.append(text)
    returns = "" if signature.return_annotation is signature.empty else \
        f" -> {_annotation(signature.return_annotation)}"
    one_line = f"{name}({', '.join(params)}){returns}"
    if len(one_line) <= 88:
        return one_line
    return f"{name}(\n" + "".join(f"    {p},\n" for p in params) + f"){returns}"


def _methods(cls: type) -> list[tuple[str, Any]]:
    own = []
    for name, member in inspect.getmembers(cls):
        if name.startswith("_") or not (inspect.isfunction(member) or isinstance(member, property)):
            continue
        if getattr(member, "__module__", "memkit").startswith("pydantic") or name.startswith("model_"):
            continue
        own.append((name, member))
    return own


def _entry(dotted: str) -> str:
    obj = _resolve(dotted)
    short = dotted.removeprefix("memkit.")
    if inspect.ismodule(obj):
        names = getattr(obj, "__all__", [])
        parts = [f"### `{dotted}`\n\n{_doc(obj)}\n"]
        parts.extend(_entry(f"{dotted}.{name}") for name in names)
        return "\n".join(parts)
    if inspect.isclass(obj):
        parts = [f"### `{short}`\n", f"```python\n{_signature(obj.__name__, obj)}\n```\n", _doc(obj) + "\n"]
        fields = getattr(obj, "model_fields", None)
        if fields:
            parts.append("| field | type | default |\n|---|---|---|")
            for field_name, field in fields.items():
                default = "required" if field.is_required() else f"`{field.get_default(call_default_factory=True)!r}`"
                annotation = re.sub(r"\btyping\.", "", str(field.annotation)).replace("NoneType", "None")
                parts.append(f"| `{field_name}` | `{annotation}` | {default.replace('|', '&#124;')} |".replace(
                    f"`{annotation}`", f"`{annotation.replace('|', '&#124;')}`"))
            parts.append("")
        for name, member in _methods(obj):
            if isinstance(member, property):
                parts.append(f"- `{name}` (property): {_doc(member).splitlines()[0] if _doc(member) else ''}")
                continue
            parts.append(f"#### `{short}.{name}`\n\n```python\n{_signature(name, member)}\n```\n\n{_doc(member)}\n")
        return "\n".join(parts)
    if callable(obj):
        return f"### `{short}`\n\n```python\n{_signature(short, obj)}\n```\n\n{_doc(obj)}\n"
    value = repr(obj)
    if isinstance(obj, tuple | list) and all(hasattr(item, "name") for item in obj):
        value = f"({', '.join(repr(item.name) for item in obj)})  # {type(obj[0]).__name__} objects, by name"
    return f"### `{short}`\n\n```python\n{short} = {value}\n```\n"


def render() -> str:
    out = [HEADER]
    for line in SOURCE.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            out.append(f"\n{line}\n")
        elif line.startswith("::: "):
            out.append(_entry(line[4:].strip()))
    return "\n".join(out).rstrip() + "\n"


def main() -> int:
    text = render()
    if "--check" in sys.argv:
        if TARGET.read_text(encoding="utf-8") != text:
            print("docs/api.md is stale; run python scripts/api_reference.py")
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
