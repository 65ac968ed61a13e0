"""Each area owns its part of the decision state (`state.<area>`, declared in
`domain/<area>/state.py` with its records): only that area's code writes it.
Another area changes it only by calling the owner's functions (which keep
its indexes in step), and reads it where it likes. The kernel's State keeps
the input record's fields, which only the registry writes, and the marks
the areas leave for the pass (the dirty sets), which every area may add to.

Checked on the code, statically: every assignment, deletion or mutating call
whose target is reached from `state.<part>` — directly, through a name bound
to something reached from it, or through a parameter typed as one of an
area's records or its part — is in a module of that area."""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

from tandem.domain.areas import AREAS
from tandem.domain.state import State

ROOT = Path(__file__).resolve().parents[2]
MUTATORS = frozenset({
    "add", "discard", "remove", "pop", "popitem", "setdefault", "update", "append", "extend", "insert", "clear",
    "move_to_end", "sort", "reverse",
})  # fmt: skip
# The marks the areas leave for the pass (any area may add to them).
PASS_MARKS = frozenset({"dirty_actions", "dirty_tasks", "dirty_sources", "unstalled", "watchdog_fresh"})
KERNEL = "kernel"
PART_OF = {field.name: field.name for field in dataclasses.fields(State) if field.name in AREAS}


def record_owners() -> dict[str, str]:
    """Each record or part class name -> the area whose state module defines it."""
    owners: dict[str, str] = {}
    for area in AREAS:
        for node in ast.parse((ROOT / "domain" / area / "state.py").read_text()).body:
            if isinstance(node, ast.ClassDef):
                owners[node.name] = area
    return owners


OWNERS = record_owners()


def _owner_of_annotation(annotation: ast.expr | None) -> str | None:
    if annotation is None:
        return None
    text = ast.unparse(annotation)
    names = set(re.findall(r"[A-Za-z_]\w*", text))
    owned = {OWNERS[name] for name in names if name in OWNERS}
    return owned.pop() if len(owned) == 1 else None


def _bound_names(target: ast.expr) -> list[str]:
    """The names an assignment target binds (`a`, `a, b`, `*rest`), not
    those it writes through (`self.x` binds nothing)."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for element in target.elts for name in _bound_names(element)]
    if isinstance(target, ast.Starred):
        return _bound_names(target.value)
    return []


class Function:
    """The writes of one function, each with the part it reaches."""

    def __init__(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.node = node
        self.aliases: dict[str, str] = {}
        arguments = node.args
        for argument in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
            owner = _owner_of_annotation(argument.annotation)
            if owner is not None:
                self.aliases[argument.arg] = owner
        self._bind_aliases()

    def part_of(self, expression: ast.expr) -> str | None:
        """The part `expression` is reached from: an area, KERNEL (a field of
        the State itself, `KERNEL:name`), or None (not the state's)."""
        chain: list[str] = []
        node = expression
        while True:
            if isinstance(node, ast.Attribute):
                chain.append(node.attr)
                node = node.value
            elif isinstance(node, ast.Subscript):
                node = node.value
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                chain.append(node.func.attr)
                node = node.func.value
            else:
                break
        if not isinstance(node, ast.Name):
            return None
        if node.id == "state" and chain:
            first = chain[-1]
            return PART_OF.get(first, f"{KERNEL}:{first}")
        return self.aliases.get(node.id)

    def _bind_aliases(self) -> None:
        """Names bound (by assignment or a loop) to what a part holds."""
        for _ in range(3):  # aliases of aliases
            for node in ast.walk(self.node):
                if isinstance(node, ast.Assign):
                    targets, value = node.targets, node.value
                elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
                    targets, value = [node.target], node.value
                elif isinstance(node, (ast.For, ast.comprehension)):
                    targets, value = [node.target], node.iter
                else:
                    continue
                part = self.part_of(value)
                if part is None or part.startswith(KERNEL):
                    continue
                for target in targets:
                    for name in _bound_names(target):
                        self.aliases.setdefault(name, part)

    def writes(self) -> list[tuple[int, str, str]]:
        """(line, part, what) of every write reached from the state."""
        found: list[tuple[int, str, str]] = []
        for node in ast.walk(self.node):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                targets = [node.target]
            elif isinstance(node, ast.Delete):
                targets = node.targets
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS:
                targets = [node.func.value]
            for target in targets:
                for element in target.elts if isinstance(target, ast.Tuple) else [target]:
                    if isinstance(element, ast.Name):
                        continue  # rebinding a local name writes nothing
                    part = self.part_of(element)
                    if part is not None:
                        found.append((node.lineno, part, ast.unparse(element)))
        return sorted(found)


def violations() -> list[str]:
    wrong: list[str] = []
    for path in sorted((ROOT / "domain").rglob("*.py")):
        relative = path.relative_to(ROOT / "domain")
        area = relative.parts[0] if len(relative.parts) > 1 else KERNEL
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for line, part, what in Function(node).writes():
                if part.startswith(KERNEL):
                    field = part.split(":", 1)[1]
                    if field in PASS_MARKS or area == KERNEL:
                        continue
                elif part == area:
                    continue
                wrong.append(f"domain/{relative}:{line} {node.name}: writes {what} ({part}'s)")
    return wrong


def test_each_area_writes_only_its_own_part_of_the_state() -> None:
    wrong = violations()
    assert not wrong, "writes into another area's part:\n" + "\n".join(wrong)


def test_the_check_sees_writes_through_the_state_aliases_and_typed_parameters() -> None:
    source = '''
def f(state, action: Action, task: Task | None) -> None:
    state.actions.pending.add("op")
    conversation = state.conversation.by_id["c"]
    conversation.deliverable.discard("k")
    for grant in state.authority.grants.values():
        grant.actions.append("op")
    action.state = "fenced"
    task.actions.append("op")
    state.dirty_actions.add("op")
    local = []
    local.append(1)
'''
    function = Function(ast.parse(source).body[0])  # type: ignore[arg-type]
    parts = [part for _, part, _ in function.writes()]
    assert parts == ["actions", "conversation", "authority", "actions", "tasks", "kernel:dirty_actions"]
