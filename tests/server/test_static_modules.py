"""The page's script: small ES modules served as they are, every import naming a module and an export it has."""

from __future__ import annotations

import re
from pathlib import Path

import httpx

STATIC = Path(__file__).resolve().parents[2] / "core" / "crossgate" / "server" / "static"
MODULES = sorted((STATIC / "js").glob("*.js"))
IMPORT = re.compile(r'^import \{ ([^}]+) \} from "\./([\w-]+\.js)";$', re.MULTILINE)
EXPORT = re.compile(r"^export (?:async )?function (\w+)", re.MULTILINE)


def test_every_import_names_a_sibling_module_and_one_of_its_exports() -> None:
    exports = {m.name: set(EXPORT.findall(m.read_text(encoding="utf-8"))) for m in MODULES}
    for module in MODULES:
        text = module.read_text(encoding="utf-8")
        for names, target in IMPORT.findall(text):
            assert target in exports, f"{module.name} imports {target}, which does not exist"
            missing = {n.strip() for n in names.split(",")} - exports[target]
            assert not missing, f"{module.name} imports {missing} from {target}, which does not export them"
    assert not (STATIC / "app.js").exists()


def test_each_module_is_small_and_every_module_is_reached_from_main() -> None:
    assert all(len(m.read_text(encoding="utf-8").splitlines()) <= 200 for m in MODULES)
    graph = {m.name: [t for _, t in IMPORT.findall(m.read_text(encoding="utf-8"))] for m in MODULES}
    reached, todo = set(), ["main.js"]
    while todo:
        name = todo.pop()
        if name not in reached:
            reached.add(name)
            todo.extend(graph[name])
    assert reached == set(graph), f"not imported by anything: {sorted(set(graph) - reached)}"


async def test_the_page_loads_main_as_a_module_and_the_modules_are_served_as_javascript(
    client: httpx.AsyncClient,
) -> None:
    page = (await client.get("/login")).text
    assert '<script type="module" src="/static/js/main.js"></script>' in page
    for module in MODULES:
        served = await client.get(f"/static/js/{module.name}")
        assert served.status_code == 200
        assert served.headers["content-type"].split(";")[0] in ("text/javascript", "application/javascript")
        assert served.text == module.read_text(encoding="utf-8")
