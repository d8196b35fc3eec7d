"""The fenced python blocks of a Markdown file, and two ways to run them as a reader would.

A block runs unless the line before it is an HTML comment ``<!-- not run: reason -->``.

- :func:`run_snippet`: a README's quick start, saved as a file of its own and run with ``python <file>``
  in a subprocess, offline: no API keys in its environment, and every proxy variable pointing at a closed
  port on 127.0.0.1, so an HTTP client that tries to leave the machine fails (127.0.0.1 stays reachable).
- :func:`run_snippets`: a page's blocks in order in one namespace and one event loop (top-level
  ``await`` allowed), for docs written as one session's steps.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

NOT_RUN = re.compile(r"<!--\s*not run:\s*(?P<reason>.+?)\s*-->")
API_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "GOOGLE_API_KEY", "GROQ_API_KEY")
CROSSGATE_ENV = ("CROSSGATE_DB", "CROSSGATE_POLICY", "CROSSGATE_LANGGRAPH_CHECKPOINTS", "CROSSGATE_TOKENS")
NOWHERE = "http://127.0.0.1:9"
"""The discard port: nothing listens there, so a request through this proxy fails at once."""


@dataclass(frozen=True, slots=True)
class Snippet:
    path: Path
    line: int
    code: str
    skip_reason: str | None

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


def snippets(path: Path, language: str = "python") -> list[Snippet]:
    """Every ```python block (or of ``language``) of ``path``, with the reason it is not run (None: it runs)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Snippet] = []
    index = 0
    while index < len(lines):
        if lines[index].strip() == f"```{language}":
            start = index + 1
            end = next(i for i in range(start, len(lines)) if lines[i].strip() == "```")
            before = next((lines[i] for i in range(index - 1, -1, -1) if lines[i].strip()), "")
            skip = NOT_RUN.search(before)
            found.append(Snippet(path, start + 1, "\n".join(lines[start:end]) + "\n", skip["reason"] if skip else None))
            index = end
        index += 1
    return found


def offline_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """``base`` (the test's environment) without API keys or crossgate settings, its proxies pointing nowhere."""
    env = {k: v for k, v in (os.environ if base is None else base).items() if k not in API_KEYS + CROSSGATE_ENV}
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        env[name] = NOWHERE
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    return env


def run_snippet(block: Snippet, folder: Path, *, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Save ``block`` in ``folder`` and run it there with ``python``; a failure names the README line.

    The file starts with blank lines up to the block's first line, so a traceback's line numbers are the
    README's own.
    """
    script = folder / f"snippet_{block.line}.py"
    script.write_text("\n" * (block.line - 1) + block.code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, script.name],
        cwd=folder,
        env=offline_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if done.returncode != 0:
        raise AssertionError(f"{block.where} failed as a script (exit {done.returncode}):\n{done.stderr[-4000:]}")
    return done


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
