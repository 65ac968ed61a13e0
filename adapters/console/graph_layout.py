"""A layered drawing of a directed acyclic graph: the layout of a task's
graph (adapters/console/graph.py). Pure: keys and edges in, boxes and
routes out; no drawing, no input text.

1. Layers: a node's layer is the length of the longest path of edges into
   it (a node without one is in layer 0), so every edge goes one way.
2. An edge that spans several layers passes through a slot in each layer it
   crosses (a "dummy" node, thin), so it never runs across a node.
3. Order within each layer: barycentre sweeps (each node by the mean place
   of its neighbours in the layer before, then after), keeping the order
   with the fewest crossings seen; ties keep the given order.
4. Places: in its layer, each node is as near as the order allows to the
   mean place of its neighbours (an isotonic fit, both ways), never nearer
   to the next than `node_gap`.
5. Direction: layers are columns, left to right, when that is at most
   `fit_width` wide; else rows, top to bottom, when that is narrower (a
   long chain reads down the page rather than across it).

A cycle (the engine records none: a prerequisite exists before its
dependant) is broken at its back edges, which are then not routed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise

Point = tuple[float, float]
sweeps = 6  # barycentre passes, each down then up


@dataclass(frozen=True)
class Sizes:
    """The measures of a drawing, in px."""

    node_width: float = 200
    node_height: float = 70
    slot: float = 6  # the thickness of a slot, where a long edge crosses a layer
    layer_gap: float = 48  # between layers: where edges bend
    node_gap: float = 14  # between two things of a layer
    margin: float = 8
    fit_width: float = 1240  # the console's page: layers left to right while they fit it


@dataclass(frozen=True)
class Box:
    key: str
    layer: int
    x: float
    y: float
    width: float
    height: float


@dataclass(frozen=True)
class Route:
    """An edge's path: out of `source`'s far side, through its slots, into `target`'s near side."""

    source: str
    target: str
    points: tuple[Point, ...]


@dataclass(frozen=True)
class Layout:
    boxes: dict[str, Box]  # every node's, in the given order
    slots: tuple[Box, ...]  # where long edges cross a layer (for tests: they too never overlap)
    routes: tuple[Route, ...]
    width: float
    height: float
    down: bool  # layers are rows, top to bottom (else columns, left to right)
    dropped: tuple[tuple[str, str], ...] = field(default=())  # back edges of a cycle, not routed


def layers_of(keys: Sequence[str], edges: Sequence[tuple[str, str]]) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """Each key's layer (longest path into it), and the edges of a cycle left out."""
    into: dict[str, list[str]] = {key: [] for key in keys}
    for source, target in edges:
        into[target].append(source)
    layer: dict[str, int] = {}
    visiting: set[str] = set()
    back: dict[tuple[str, str], None] = {}  # ordered, for a stable answer
    for start in keys:
        if start in layer:
            continue
        stack: list[tuple[str, int]] = [(start, 0)]
        visiting.add(start)
        while stack:  # depth first over the edges into a node; its layer once they all have one
            key, next_edge = stack.pop()
            sources = into[key]
            if next_edge < len(sources):
                stack.append((key, next_edge + 1))
                source = sources[next_edge]
                if source in visiting:
                    back[(source, key)] = None
                elif source not in layer:
                    visiting.add(source)
                    stack.append((source, 0))
                continue
            visiting.discard(key)
            layer[key] = max((layer[s] + 1 for s in sources if s in layer and (s, key) not in back), default=0)
    return layer, list(back)


def _columns(keys: Sequence[str], edges: list[tuple[str, str]], layer: dict[str, int]) -> tuple[list[list[str]], list[list[str]]]:
    """The layers, each a list of nodes (slots named `\\0edge-number/layer`),
    and each edge's chain of nodes from source to target."""
    columns: list[list[str]] = [[] for _ in range(max(layer.values(), default=-1) + 1)]
    for key in keys:
        columns[layer[key]].append(key)
    chains: list[list[str]] = []
    for number, (source, target) in enumerate(edges):
        chain = [source]
        for crossed in range(layer[source] + 1, layer[target]):
            slot = f"\0{number}/{crossed}"
            columns[crossed].append(slot)
            chain.append(slot)
        chains.append([*chain, target])
    return columns, chains


def _neighbours(chains: list[list[str]]) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    before: dict[str, list[str]] = {}
    after: dict[str, list[str]] = {}
    for chain in chains:
        for left, right in pairwise(chain):
            after.setdefault(left, []).append(right)
            before.setdefault(right, []).append(left)
    return before, after


def crossings(columns: list[list[str]], after: dict[str, list[str]]) -> int:
    """How many pairs of edges cross between adjacent columns (counted as
    inversions, with a Fenwick tree: E log V a pair of columns)."""
    total = 0
    for left, right in pairwise(columns):
        place = {key: index for index, key in enumerate(right)}
        ends = sorted((i, place[target]) for i, key in enumerate(left) for target in after.get(key, ()))
        tree = [0] * (len(right) + 1)
        for seen, (_, end) in enumerate(ends):
            position, not_after = end + 1, 0  # how many earlier ends are at or before this one
            while position > 0:
                not_after += tree[position]
                position -= position & -position
            total += seen - not_after
            position = end + 1
            while position <= len(right):
                tree[position] += 1
                position += position & -position
    return total


def _barycentre(key: str, index: int, neighbours: list[str], place: dict[str, int]) -> tuple[float, int]:
    """A node's sort key in its column: the mean place of its `neighbours`
    in the column beside (its own place when it has none there), then its own."""
    seen = [place[k] for k in neighbours if k in place]
    return (sum(seen) / len(seen) if seen else index, index)


def _sweep(columns: list[list[str]], by: dict[str, list[str]], order: range) -> None:
    """Reorder each column of `order` by the mean place of its nodes' neighbours `by`."""
    for index in order:
        beside = columns[index - 1] if order.step > 0 else columns[index + 1]
        place = {key: n for n, key in enumerate(beside)}
        keyed = sorted((_barycentre(key, n, by.get(key, []), place), key) for n, key in enumerate(columns[index]))
        columns[index] = [key for _, key in keyed]


def ordered(columns: list[list[str]], before: dict[str, list[str]], after: dict[str, list[str]]) -> list[list[str]]:
    """The columns reordered to cross less (the best of `sweeps` down-and-up passes)."""
    best = [list(column) for column in columns]
    fewest = crossings(best, after)
    current = [list(column) for column in columns]
    for _ in range(sweeps):
        if fewest == 0:
            break
        _sweep(current, before, range(1, len(current)))
        _sweep(current, after, range(len(current) - 2, -1, -1))
        count = crossings(current, after)
        if count < fewest:
            best, fewest = [list(column) for column in current], count
    return best


def fit(wanted: list[float], heights: list[float], gap: float, top: float) -> list[float]:
    """Tops for a column's things, in order, as near `wanted` (their wanted
    centres) as the order allows: each at least `gap` below the one before,
    the first at `top` or lower (pool adjacent violators, least squares)."""
    offsets: list[float] = []
    below = 0.0
    for height in heights:
        offsets.append(below)
        below += height + gap
    # With t_i = top_i - offset_i the constraints are t_i <= t_{i+1}: an isotonic fit.
    targets = [centre - height / 2 - offset for centre, height, offset in zip(wanted, heights, offsets)]
    blocks: list[list[float]] = []  # [mean, count]
    for target in targets:
        blocks.append([target, 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            mean, count = blocks.pop()
            blocks[-1] = [(blocks[-1][0] * blocks[-1][1] + mean * count) / (blocks[-1][1] + count), blocks[-1][1] + count]
    fitted = [max(mean, top) for mean, count in blocks for _ in range(int(count))]
    return [t + offset for t, offset in zip(fitted, offsets)]


def _place(columns: list[list[str]], before: dict[str, list[str]], after: dict[str, list[str]], extent: dict[str, float], sizes: Sizes) -> dict[str, float]:
    """Each node's start across its layer (`extent` its size that way):
    stacked, then pulled towards its neighbours, forwards, backwards, forwards."""
    start: dict[str, float] = {}
    for column in columns:
        for key, at in zip(column, fit([0.0] * len(column), [extent[k] for k in column], sizes.node_gap, sizes.margin)):
            start[key] = at

    def centre(key: str) -> float:
        return start[key] + extent[key] / 2

    for by, order in ((before, columns[1:]), (after, columns[-2::-1]), (before, columns[1:])):
        for column in order:
            wanted = [sum(map(centre, by[k])) / len(by[k]) if by.get(k) else centre(k) for k in column]
            for key, at in zip(column, fit(wanted, [extent[k] for k in column], sizes.node_gap, sizes.margin)):
                start[key] = at
    return start


def layout(keys: Sequence[str], edges: Sequence[tuple[str, str]], sizes: Sizes = Sizes(), down: bool | None = None) -> Layout:
    """The drawing of nodes `keys` (unique) and `edges` (source, target)
    between them; `down` its direction, when not chosen as step 5 says."""
    unknown = {key for edge in edges for key in edge} - set(keys)
    if unknown or len(set(keys)) != len(keys):
        raise ValueError(f"layout: edges name nodes not given ({sorted(unknown)[:3]}) or keys repeat")
    edges = list(dict.fromkeys(edge for edge in edges if edge[0] != edge[1]))
    layer, back = layers_of(keys, edges)
    kept = [edge for edge in edges if edge not in back]
    columns, chains = _columns(keys, kept, layer)
    before, after = _neighbours(chains)
    columns = ordered(columns, before, after)
    drawn = Drawing(keys, columns, before, after, sizes)
    if down is not None:
        return drawn.made(kept, chains, back, down=down)
    right = drawn.made(kept, chains, back, down=False)
    if right.width <= sizes.fit_width:
        return right
    downwards = drawn.made(kept, chains, back, down=True)
    return downwards if downwards.width < right.width else right


@dataclass
class Drawing:
    """The ordered layers, made into boxes and routes one way or the other."""

    keys: Sequence[str]
    columns: list[list[str]]
    before: dict[str, list[str]]
    after: dict[str, list[str]]
    sizes: Sizes

    def made(self, kept: list[tuple[str, str]], chains: list[list[str]], back: list[tuple[str, str]], *, down: bool) -> Layout:
        sizes = self.sizes
        along, across = (sizes.node_height, sizes.node_width) if down else (sizes.node_width, sizes.node_height)
        extent = {key: sizes.slot if key.startswith("\0") else across for column in self.columns for key in column}
        start = _place(self.columns, self.before, self.after, extent, sizes)
        pitch = along + sizes.layer_gap
        every: dict[str, Box] = {}
        for index, column in enumerate(self.columns):
            for key in column:
                at, thick = sizes.margin + index * pitch, extent[key]
                every[key] = Box(key, index, start[key], at, thick, along) if down else Box(key, index, at, start[key], along, thick)
        layers_long = sizes.margin * 2 + max(len(self.columns) * pitch - sizes.layer_gap, 0)
        far = max((start[key] + extent[key] for key in start), default=0.0) + sizes.margin
        return Layout(
            boxes={key: every[key] for key in self.keys},
            slots=tuple(box for key, box in every.items() if key.startswith("\0")),
            routes=tuple(_route(edge, [every[key] for key in chain], down) for edge, chain in zip(kept, chains)),
            width=far if down else layers_long,
            height=layers_long if down else far,
            down=down,
            dropped=tuple(back),
        )


def _route(edge: tuple[str, str], chain: list[Box], down: bool) -> Route:
    """The far side of the source, across each slot, the near side of the target."""
    first, *slots, last = chain
    if down:
        points: list[Point] = [(first.x + first.width / 2, first.y + first.height)]
        for slot in slots:
            points += [(slot.x + slot.width / 2, slot.y), (slot.x + slot.width / 2, slot.y + slot.height)]
        points.append((last.x + last.width / 2, last.y))
    else:
        points = [(first.x + first.width, first.y + first.height / 2)]
        for slot in slots:
            points += [(slot.x, slot.y + slot.height / 2), (slot.x + slot.width, slot.y + slot.height / 2)]
        points.append((last.x, last.y + last.height / 2))
    return Route(edge[0], edge[1], tuple(points))
