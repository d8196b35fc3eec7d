"""The seam for the server package: ``crossgate.server.commands.register(app)`` adds its commands."""

from __future__ import annotations

import importlib
import sys
import types

import pytest
import typer
from typer.testing import CliRunner

import crossgate.cli
from crossgate.cli.app import CrossgateGroup

MODULE = "crossgate.server.commands"


def test_register_is_called_with_the_app_when_the_module_exists(monkeypatch: pytest.MonkeyPatch) -> None:
    target = typer.Typer(cls=CrossgateGroup)
    target.command("list")(lambda: None)

    def register(app: typer.Typer) -> None:
        @app.command("serve")
        def serve(port: int = 8000) -> None:
            typer.echo(f"serving on {port}")

    fake = types.ModuleType(MODULE)
    fake.register = register  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, MODULE, fake)
    crossgate.cli._register_server_commands(target)
    result = CliRunner().invoke(target, ["serve", "--port", "9"])
    assert (result.exit_code, result.stdout) == (0, "serving on 9\n")


def test_nothing_happens_when_the_module_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, MODULE, None)  # makes the import fail as a missing module
    target = typer.Typer()
    crossgate.cli._register_server_commands(target)
    assert target.registered_commands == []


def test_a_broken_commands_module_is_not_hidden(monkeypatch: pytest.MonkeyPatch) -> None:
    def import_module(name: str) -> types.ModuleType:
        raise ModuleNotFoundError("No module named 'uvicorn'", name="uvicorn")

    monkeypatch.setattr(importlib, "import_module", import_module)
    with pytest.raises(ModuleNotFoundError, match="uvicorn"):
        crossgate.cli._register_server_commands(typer.Typer())
