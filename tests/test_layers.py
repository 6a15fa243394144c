"""service/'s and lda/'s import graphs keep their layers: no import circles, and no part imports
one above it.

service/'s wings: store/ (Redis) < ingest/ (articles in) < learn/ (the worker) and api/
(serving). The top level holds the commands (cli, up, train, export, __main__), which may import
anything, and shared helpers (settings, keys, errors, redact, ...), which may import no wing.

lda/ imports nothing of service/. Its rooms: sgmcmc/ and gibbs/ (neither imports the other) <
evaluation/ < the learner (lda.model). lda.config, lda.tokens and lda.inference_kernel load no
torch, so the API process that uses them stays free of it.

Every import that runs counts, deferred ones inside functions too: they close circles just the
same when they run. Imports under ``if TYPE_CHECKING:`` never run, so the layers ignore them (a
room may name a type of one above it), but the circles count them: a circle for the type checker
alone is still two modules that each need the other. The code is read with ``ast``, never
imported, except where a test asks what an import loads.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SERVICE = ROOT / "service"
LDA = ROOT / "lda"
COMMANDS = {"service.cli", "service.up", "service.train", "service.export", "service.__main__"}
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
# What each of lda/'s rooms may not import: "model" is lda.model, the learner over them all.
LDA_FORBIDDEN = {
    "sgmcmc": {"gibbs", "evaluation", "model"},
    "gibbs": {"sgmcmc", "evaluation", "model"},
    "evaluation": {"model"},
}
# lda's modules that the API process imports: a fresh interpreter loads no torch with them.
TORCH_FREE = (
    "lda.config",
    "lda.gamma",
    "lda.tokens",
    "lda.inference_kernel",
    "lda.relevance",
    "lda.search",
    "lda.topic_ids",
    "lda.shaping.config",
)


def modules(package: Path = SERVICE) -> dict[str, Path]:
    """Every module of a top-level package, by dotted name (a package by its own name)."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


TYPE_ONLY_GUARDS = {"TYPE_CHECKING", "typing.TYPE_CHECKING"}


def _nodes(tree: ast.AST, type_only: bool) -> list[ast.AST]:
    """Every node of ``tree``; those under ``if TYPE_CHECKING:``, which never run, only if
    ``type_only``."""
    found, stack = [], [tree]
    while stack:
        node = stack.pop()
        found.append(node)
        if (
            not type_only
            and isinstance(node, ast.If)
            and ast.unparse(node.test) in TYPE_ONLY_GUARDS
        ):
            stack.extend(node.orelse)
        else:
            stack.extend(ast.iter_child_nodes(node))
    return found


def imported(name: str, path: Path, type_only: bool = False) -> set[str]:
    """Every dotted name module ``name`` imports when it runs (and for the type checker alone,
    if ``type_only``), relative imports made absolute."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    names: set[str] = set()
    for node in _nodes(ast.parse(path.read_text()), type_only):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def import_graph(package: Path = SERVICE, type_only: bool = False) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (a name imported from a module counts as it),
    those imported for the type checker alone too if ``type_only``."""
    mods = modules(package)
    top = package.name

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        targets: set[str] = set()
        for target_name in imported(name, path, type_only):
            in_package = target_name == top or target_name.startswith(f"{top}.")
            target = resolve(target_name) if in_package else None
            if target is not None and target not in (name, top):
                targets.add(target)
        graph[name] = targets
    return graph


def circles(graph: dict[str, set[str]]) -> list[str]:
    """Every import circle through each module, as ``a -> b -> a``."""
    found = []
    for start in graph:
        stack, seen = [(start, [start])], {start}
        while stack:
            node, path = stack.pop()
            for nxt in graph[node]:
                if nxt == start:
                    found.append(" -> ".join([*path, start]))
                elif nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, [*path, nxt]))
    return found


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
    assert "service.store.snapshot" in graph["service.learn.publisher"]
    # a deferred import inside a function is seen too
    assert "service.learn.scoring_process" in graph["service.learn.evaluator"]


def test_no_import_circles() -> None:
    assert circles(import_graph(type_only=True)) == []


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


def lda_room(module: str) -> str:
    """The room of an lda module (sgmcmc, gibbs, evaluation, shaping), "model", or "top" for
    the rest."""
    if module == "lda.model":
        return "model"
    pieces = module.split(".")[1:]
    return pieces[0] if len(pieces) > 1 or (pieces and LDA.joinpath(*pieces).is_dir()) else "top"


def test_the_lda_graph_sees_every_room_and_known_edges() -> None:
    graph = import_graph(LDA)
    rooms = {"top", "sgmcmc", "gibbs", "evaluation", "model", "shaping"}
    assert {lda_room(m) for m in graph} == rooms
    assert "gibbs" in {lda_room(m) for m in graph["lda.evaluation.perplexity"]}
    assert {"sgmcmc", "gibbs", "evaluation"} <= {lda_room(m) for m in graph["lda.model"]}
    # a deferred import inside a function is seen too
    assert "lda.sgmcmc.step_kernel" in graph["lda.sgmcmc.samplers"]
    # imports for the type checker alone never run: lda/__init__ names its lazy exports so
    assert "lda.model" not in graph["lda"]


def test_lda_imports_nothing_of_service() -> None:
    breaking = sorted(
        f"{name} -> {target}"
        for name, path in modules(LDA).items()
        for target in imported(name, path)
        if target == "service" or target.startswith("service.")
    )
    assert breaking == []


def test_lda_has_no_import_circles() -> None:
    assert circles(import_graph(LDA, type_only=True)) == []


def test_a_circle_through_a_type_only_import_is_seen(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg.b import B\n")
    (package / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import A\n"
    )
    assert circles(import_graph(package)) == []
    assert sorted(circles(import_graph(package, type_only=True))) == [
        "pkg.a -> pkg.b -> pkg.a",
        "pkg.b -> pkg.a -> pkg.b",
    ]


def test_no_lda_room_imports_one_above_it() -> None:
    breaking = sorted(
        f"{source} -> {target}"
        for source, targets in import_graph(LDA).items()
        for target in targets
        if lda_room(target) in LDA_FORBIDDEN.get(lda_room(source), set())
    )
    assert breaking == []


@pytest.mark.slow
@pytest.mark.parametrize("module", TORCH_FREE)
def test_lda_modules_the_api_imports_load_no_torch(module: str) -> None:
    """A fresh interpreter imports the module alone, then lists what it loaded."""
    probe = (
        f"import json, sys\nimport {module}\n"
        "print(json.dumps(sorted(m for m in sys.modules if m == 'torch' or m.startswith('lda'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        cwd=ROOT,
    )
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert "torch" not in loaded, loaded
    assert module in loaded, loaded
