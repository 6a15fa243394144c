"""service/'s import graph keeps its layers: no import circles, and no wing imports one above it.

Wings: store/ (Redis) < ingest/ (articles in) < learn/ (the worker) and api/ (serving). The top
level holds the commands (cli, up, train, __main__), which may import anything, and shared
helpers (settings, keys, errors, redact, ...), which may import no wing. Every import counts,
deferred ones inside functions too: they close circles just the same when they run.
"""

from __future__ import annotations

import ast
from pathlib import Path

SERVICE = Path(__file__).resolve().parents[1] / "service"
COMMANDS = {"service.cli", "service.up", "service.train", "service.__main__"}
# What each part may not import ("top" is the shared helpers, "commands" the commands).
FORBIDDEN = {
    "top": {"store", "ingest", "learn", "api", "commands"},
    "store": {"ingest", "learn", "api", "commands"},
    "ingest": {"learn", "api", "commands"},
    "learn": {"ingest", "api", "commands"},
    "api": {"ingest", "learn", "commands"},
}
# The worker reads the stream the scrapers fill and holds out Articles: learn/ needs ingest/'s
# queue and Article type, and nothing else from it.
ALLOWED = {
    ("service.learn.worker", "service.ingest.queue"),
    ("service.learn.worker", "service.ingest.sources"),
    ("service.learn.command", "service.ingest.queue"),  # builds the worker's queue
    ("service.learn.heldout_store", "service.ingest.sources"),
}


def modules() -> dict[str, Path]:
    """Every module of service/, by dotted name (a package by its own name)."""
    found = {}
    for path in sorted(SERVICE.rglob("*.py")):
        parts = list(path.relative_to(SERVICE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the service modules it imports (a name imported from a module counts as it)."""
    mods = modules()

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                names = [f"{base}.{alias.name}" for alias in node.names]
            else:
                continue
            for imported in names:
                target = resolve(imported) if imported.startswith("service") else None
                if target is not None and target not in (name, "service"):
                    targets.add(target)
        graph[name] = targets
    return graph


def part(module: str, mods: dict[str, Path]) -> str:
    """commands, top (a shared helper) or the wing a module belongs to."""
    if module in COMMANDS:
        return "commands"
    pieces = module.split(".")
    if len(pieces) > 2 or (len(pieces) == 2 and mods[module].name == "__init__.py"):
        return pieces[1]
    return "top"


def test_the_graph_sees_every_wing_and_a_known_edge() -> None:
    graph = import_graph()
    mods = modules()
    assert {part(m, mods) for m in graph} == {"commands", "top", "store", "ingest", "learn", "api"}
    assert "service.store.snapshot" in graph["service.learn.worker"]
    # a deferred import inside a function is seen too
    assert "service.learn.scoring_process" in graph["service.learn.evaluator"]


def test_no_import_circles() -> None:
    graph = import_graph()
    circles = []
    for start in graph:
        stack, seen = [(start, [start])], {start}
        while stack:
            node, path = stack.pop()
            for nxt in graph[node]:
                if nxt == start:
                    circles.append(" -> ".join([*path, start]))
                elif nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, [*path, nxt]))
    assert circles == []


def test_no_wing_imports_one_above_it() -> None:
    graph = import_graph()
    mods = modules()
    breaking = sorted(
        f"{source} -> {target}"
        for source, targets in graph.items()
        for target in targets
        if part(target, mods) in FORBIDDEN.get(part(source, mods), set())
        and (source, target) not in ALLOWED
    )
    assert breaking == []


# The commands build every part from the settings at the edge and hand each its own values
# (frozen configs picked with Settings.part); no other module reads Settings whole. The API's
# modules are another engineer's wing and not held to this yet.
SETTINGS_READERS = COMMANDS | {
    "service.learn.command",
    "service.ingest.command",
    "service.settings",
}


def imports_settings(path: Path) -> bool:
    """True if the module imports the Settings class (deferred imports too)."""
    for node in ast.walk(ast.parse(path.read_text())):
        names = {alias.name for alias in getattr(node, "names", [])}
        from_settings = isinstance(node, ast.ImportFrom) and node.module == "service.settings"
        if from_settings and {"Settings", "*"} & names:
            return True
        if isinstance(node, ast.Import) and "service.settings" in names:
            return True
    return False


def test_only_the_commands_import_settings() -> None:
    mods = modules()
    readers = sorted(
        name
        for name, path in mods.items()
        if name not in SETTINGS_READERS and part(name, mods) != "api" and imports_settings(path)
    )
    assert readers == []
    # the check sees an import that is there
    assert imports_settings(mods["service.learn.command"])
