"""Narrowing authority: what a grant may do, as the intersection of what the
human asked for and what the policy allows (spec 3.1, 3.2).

Model prose never reaches here: only human-sent grant requests and the
policy do. A root or path is normalised (`.` and `..` collapsed) before it is
compared, so `/repo/../etc` is `/etc` and a relative path is never inside.
"""

from __future__ import annotations

import functools
import posixpath
from collections.abc import Iterable, Sequence

normalised_paths_cached_max = 65_536


@functools.lru_cache(maxsize=normalised_paths_cached_max)  # pure: a memo, not state
def normalise_path(path: str) -> str | None:
    """The absolute, normalised form of `path`, or None if it is not absolute."""
    if not path.startswith("/") or "\x00" in path:
        return None
    normalised = posixpath.normpath(path)
    if normalised.startswith("//"):  # POSIX keeps a leading "//"; we do not.
        normalised = "/" + normalised.lstrip("/")
    return normalised


def is_inside(path: str, root: str) -> bool:
    """Both normalised: is `path` equal to `root` or below it?"""
    if root == "/":
        return True
    return path == root or path.startswith(root + "/")


def inside_any(path: str, roots: Iterable[str]) -> bool:
    return any(is_inside(path, root) for root in roots)


def narrow_operations(requested: Sequence[str], allowed: frozenset[str]) -> tuple[list[str], list[str]]:
    """(kept, dropped), in request order, without duplicates."""
    kept: list[str] = []
    dropped: list[str] = []
    for operation in dict.fromkeys(requested):
        (kept if operation in allowed else dropped).append(operation)
    return kept, dropped


def narrow_roots(requested: Sequence[str], policy_roots: Sequence[str]) -> tuple[list[str], list[str]]:
    """(kept, dropped): a root is kept, normalised, if it is absolute and equal
    to or inside a policy root; relative roots and escapes are dropped."""
    kept: list[str] = []
    dropped: list[str] = []
    for root in dict.fromkeys(requested):
        normalised = normalise_path(root)
        if normalised is not None and inside_any(normalised, policy_roots):
            if normalised not in kept:
                kept.append(normalised)
        else:
            dropped.append(root)
    return kept, dropped


def path_allowed(path: str, grant_roots: Sequence[str], policy_roots: Sequence[str]) -> bool:
    """A write path is allowed when it is inside the grant's own roots and
    inside the current policy's (the effective authority is their intersection)."""
    normalised = normalise_path(path)
    return normalised is not None and inside_any(normalised, grant_roots) and inside_any(normalised, policy_roots)
