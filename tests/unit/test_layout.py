"""The house rules, checked: sizes (no file over `file_lines_max`, no
function over `function_lines_max`) and the layering of docs/design.md (adapters
-> replay -> projections -> domain; the client beside them, on the domain
alone; domain areas import no other area's private names; the proving tools
are imported only by tests and the `check` command), and the live edge's
calls only down: the parser takes its rules as data, and the application
service loads no web framework."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("domain", "projections", "replay", "adapters", "client")
file_lines_max = 700
function_lines_max = 60
# Allowed above the function limit, each with why (a generated table or a
# literal declaration that reads best whole). Keep this empty if you can.
FUNCTION_ALLOWANCES: dict[str, str] = {}
LAYER_MAY_IMPORT = {
    "domain": {"domain"},
    "projections": {"projections", "domain"},
    "replay": {"replay", "projections", "domain"},
    "adapters": {"adapters", "replay", "projections", "domain"},
    # The public client talks HTTP to a server: of Tandem it needs the input
    # kinds and reason words alone, never the server's side.
    "client": {"client", "domain"},
}
# adapters/client.py, the first client kept for its users, is a shim over
# tandem.client's connection: the one module of the server's side that imports it.
CLIENT_SHIM = "adapters/client.py"


def sources(*folders: str) -> list[Path]:
    return sorted(path for folder in folders for path in (ROOT / folder).rglob("*.py") if "__pycache__" not in path.parts)


def imports(path: Path) -> list[tuple[str, list[str]]]:
    """(module, imported names) for every `import`/`from … import` in `path`."""
    found: list[tuple[str, list[str]]] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.append((node.module, [alias.name for alias in node.names]))
        elif isinstance(node, ast.Import):
            found.extend((alias.name, []) for alias in node.names)
    return found


def test_no_file_over_the_limit() -> None:
    long = {str(p.relative_to(ROOT)): n for p in sources(*PACKAGES, "bench") if (n := len(p.read_text().splitlines())) > file_lines_max}
    assert not long, long


def test_no_function_over_the_limit() -> None:
    long: dict[str, int] = {}
    for path in sources(*PACKAGES, "bench"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                name = f"{path.relative_to(ROOT)}:{node.name}"
                if lines > function_lines_max and name not in FUNCTION_ALLOWANCES:
                    long[name] = lines
    assert not long, long


def test_dependencies_point_one_way() -> None:
    wrong: list[str] = []
    for layer, allowed in LAYER_MAY_IMPORT.items():
        for path in sources(layer):
            for module, _ in imports(path):
                parts = module.split(".")
                shim = str(path.relative_to(ROOT)) == CLIENT_SHIM and parts[1:2] == ["client"]
                if parts[0] == "tandem" and len(parts) > 1 and parts[1] in PACKAGES and parts[1] not in allowed and not shim:
                    wrong.append(f"{path.relative_to(ROOT)} imports {module}")
    assert not wrong, wrong


def test_the_domain_imports_only_the_standard_library_msgspec_and_statemachine() -> None:
    third_party = {"msgspec", "statemachine"}
    import sys

    wrong = [
        f"{path.relative_to(ROOT)} imports {module}"
        for path in sources("domain")
        for module, _ in imports(path)
        if module.split(".")[0] not in sys.stdlib_module_names | third_party | {"tandem", "__future__"}
    ]
    assert not wrong, wrong


def test_proving_is_imported_only_by_tests_and_the_check_command() -> None:
    wrong = [
        f"{path.relative_to(ROOT)} imports {module}"
        for path in sources(*PACKAGES, "bench")
        if "proving" not in path.parts and path.name != "check.py"
        for module, _ in imports(path)
        if module.startswith("tandem.replay.proving") or module == "hypothesis" or module.startswith("hypothesis.")
    ]
    assert not wrong, wrong


def test_no_module_imports_another_modules_private_names() -> None:
    wrong = [
        f"{path.relative_to(ROOT)} imports {module}.{name}"
        for path in sources(*PACKAGES)
        for module, names in imports(path)
        if module.startswith("tandem.")
        for name in names
        if name.startswith("_") and not name.startswith("__")
    ]
    assert not wrong, wrong


def test_the_design_names_the_module_of_every_input_kind() -> None:
    """docs/design.md's "Layout" table says in which area each input kind is
    decided; it must be what domain/rules.py holds (the area is the decider's folder)."""
    import fnmatch
    import inspect
    import re

    from tandem.domain import rules

    table: dict[str, str] = {}
    for kinds, module in re.findall(r"^\| ((?:`[^`]+`[, ]*)+)[^|]*\| `domain/(\w+)/` \|$", (ROOT / "docs" / "design.md").read_text(), re.M):
        for pattern in re.findall(r"`([^`]+)`", kinds):
            table[pattern] = module
    for kind, decider in rules.DECIDERS.items():
        tag = kind.__struct_config__.tag
        named = [module for pattern, module in table.items() if fnmatch.fnmatchcase(tag, pattern)]
        assert named == [inspect.getmodule(decider).__name__.split(".")[2]], (tag, named)  # type: ignore[union-attr]


# ------------------------------------------------------------ the areas


def _area_public_modules() -> dict[str, set[str]]:
    """Each area's modules others may import: the same few every area has,
    and the modules its rules.py names in MORE_RULES (its larger rules)."""
    import importlib

    from tandem.domain.areas import AREA_MODULES, AREAS

    public: dict[str, set[str]] = {}
    for area in AREAS:
        rules = importlib.import_module(f"tandem.domain.{area}.rules")
        more = {module.__name__.rsplit(".", 1)[1] for module in getattr(rules, "MORE_RULES", ())}
        public[area] = set(AREA_MODULES) | more
    return public


def test_every_area_has_the_same_files() -> None:
    from tandem.domain.areas import AREA_MODULES, AREAS

    folders = {path.name for path in (ROOT / "domain").iterdir() if path.is_dir() and path.name != "__pycache__"}
    assert folders == set(AREAS), f"folders that are no area, or areas without a folder: {folders ^ set(AREAS)}"
    missing = [f"domain/{area}/{name}.py" for area in AREAS for name in ("__init__", *AREA_MODULES) if not (ROOT / "domain" / area / f"{name}.py").exists()]
    assert not missing, missing


def test_the_kernel_is_flat_and_reaches_areas_only_through_their_public_modules() -> None:
    """Modules directly under domain/ are the kernel: no `*_events.py` or
    other module kept apart for the file limit, and what they import of an
    area is one of its public modules (its internals stay its own)."""
    from tandem.domain.areas import AREAS

    public = _area_public_modules()
    kernel = sources("domain")
    apart = [path.name for path in kernel if path.parent == ROOT / "domain" and path.stem.endswith(("_events", "_inputs"))]
    assert not apart, f"modules kept apart from their area: {apart}"
    wrong: list[str] = []
    for path in kernel:
        area_of_path = path.relative_to(ROOT / "domain").parts[0] if path.parent != ROOT / "domain" else None
        for module, _ in imports(path):
            parts = module.split(".")
            if parts[:2] != ["tandem", "domain"] or len(parts) < 3 or parts[2] not in AREAS or parts[2] == area_of_path:
                continue
            if len(parts) < 4 or parts[3] not in public[parts[2]]:
                wrong.append(f"{path.relative_to(ROOT)} imports {module}")
    assert not wrong, f"imports of another area's internals: {wrong}"


# ------------------------------------------------- the edge calls only down

# Where trace lines, spool files, HTTP bodies and the console's forms are
# parsed and checked: the live edge's rules reach it as data.
PARSE_PATH = ("replay/traces.py", "replay/edge.py", "replay/trace_scan.py")
HOOK_TYPES = re.compile(r"\b(Callable|Protocol|Awaitable|Coroutine)\b")


def _loaded_by(statement: str) -> list[str]:
    """The tandem and litestar modules a fresh interpreter holds after `statement`."""
    probe = f"import sys\n{statement}\nprint('\\n'.join(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT)
    return [name for name in done.stdout.split() if name.split(".")[0] in ("tandem", "litestar")]


def test_the_lower_layers_load_no_adapter() -> None:
    """Importing every module of domain, projections and replay (so any
    import they make, however spelt) loads nothing of tandem.adapters."""
    modules = [
        "tandem." + ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for path in sources("domain", "projections", "replay")
    ]
    statement = "import importlib\n" + "\n".join(f"importlib.import_module({name!r})" for name in modules)
    loaded = _loaded_by(statement)
    assert set(modules) <= set(loaded), sorted(set(modules) - set(loaded))
    assert not [name for name in loaded if name.startswith("tandem.adapters")], loaded


def test_the_client_loads_nothing_of_the_server() -> None:
    """Importing tandem.client loads none of adapters, replay or projections,
    nor the web framework: a process that only talks to a server needs the
    domain's input kinds and nothing else of Tandem."""
    loaded = _loaded_by("import tandem.client")
    assert "tandem.client.sync" in loaded and "tandem.client.asynchronous" in loaded, loaded
    server_side = [name for name in loaded if name.split(".")[:2] in (["tandem", "adapters"], ["tandem", "replay"], ["tandem", "projections"])]
    assert not server_side and not [name for name in loaded if name.startswith("litestar")], server_side


def test_the_parse_path_takes_no_hooks() -> None:
    """replay/traces.py applies the live edge's rules itself, given as data
    (replay/edge.py: a clock reading, the store's last `at`, the ids it
    holds, the sender's credential): nothing on the parse path takes a
    callable or declares a Protocol an adapter could fill in, so parsing
    never calls back up (it once went through adapters/trace.py's hooks)."""
    wrong: list[str] = []
    for name in PARSE_PATH:
        for node in ast.walk(ast.parse((ROOT / name).read_text())):
            if isinstance(node, ast.ClassDef) and any(HOOK_TYPES.search(ast.unparse(base)) for base in node.bases):
                wrong.append(f"{name}:{node.lineno} class {node.name} is a Protocol")
            annotation = node.annotation if isinstance(node, (ast.arg, ast.AnnAssign)) else None
            if annotation is not None and HOOK_TYPES.search(ast.unparse(annotation)):
                wrong.append(f"{name}:{node.lineno} takes {ast.unparse(annotation)}")
    assert not wrong, wrong


def test_the_application_service_loads_no_web_framework() -> None:
    """adapters/service.py (submit, views, events, explain, the stream's hub)
    is what HTTP and the console share: it imports no Litestar, not even
    through the modules it imports."""
    direct = [module for module, _ in imports(ROOT / "adapters" / "service.py") if module.split(".")[0] == "litestar"]
    assert not direct, direct
    loaded = _loaded_by("import tandem.adapters.service")
    assert "tandem.adapters.service" in loaded
    assert not [name for name in loaded if name.split(".")[0] == "litestar"], loaded


def test_the_service_is_typed_wherever_it_is_passed() -> None:
    """Every parameter or field named `service` is a `Service` (never `Any`),
    and a request reaches the service through `http_inputs.service_of` alone."""
    wrong: list[str] = []
    for path in sources("adapters"):
        text = path.read_text()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.arg) and node.arg == "service" or isinstance(node, ast.AnnAssign) and ast.unparse(node.target) == "service":
                annotation = node.annotation
                if annotation is None or "Service" not in ast.unparse(annotation):
                    wrong.append(f"{path.relative_to(ROOT)}:{node.lineno} service: {ast.unparse(annotation) if annotation else 'untyped'}")
        reads = text.count("app.state.service") - text.count("app.state.service =")
        if reads and path.name != "http_inputs.py":
            wrong.append(f"{path.relative_to(ROOT)} reads app.state.service itself")
    assert not wrong, wrong
