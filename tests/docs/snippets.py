"""The fenced python blocks of a Markdown file, and a way to run them as a reader would, in order.

A block runs unless the line before it is an HTML comment ``<!-- not run: reason -->``. The blocks of
one file share one namespace and one event loop (top-level ``await`` is allowed), in a folder of their own.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

NOT_RUN = re.compile(r"<!--\s*not run:\s*(?P<reason>.+?)\s*-->")


@dataclass(frozen=True, slots=True)
class Snippet:
    path: Path
    line: int
    code: str
    skip_reason: str | None


def snippets(path: Path) -> list[Snippet]:
    """Every ```python block of ``path``, with the reason it is not run (None: it runs)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Snippet] = []
    index = 0
    while index < len(lines):
        if lines[index].strip() == "```python":
            start = index + 1
            end = next(i for i in range(start, len(lines)) if lines[i].strip() == "```")
            before = next((lines[i] for i in range(index - 1, -1, -1) if lines[i].strip()), "")
            skip = NOT_RUN.search(before)
            found.append(Snippet(path, start + 1, "\n".join(lines[start:end]) + "\n", skip["reason"] if skip else None))
            index = end
        index += 1
    return found


def run_snippets(blocks: list[Snippet], namespace: dict[str, Any]) -> None:
    """Run the blocks that run, in order, in ``namespace``; a failure names the file and line."""
    with asyncio.Runner() as runner:
        for block in blocks:
            if block.skip_reason is not None:
                continue
            tree = ast.parse(block.code)
            ast.increment_lineno(tree, block.line - 1)  # tracebacks point at the README's own lines
            code = compile(tree, str(block.path), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
            result = eval(code, namespace)
            if inspect.iscoroutine(result):
                runner.run(result)
