"""Designs: the generic part of a sweep, shared by every study.

A design is anything with a ``name``, a list of runs (:meth:`Design.runs`, each a
:class:`RunSpec`: a point of named factor values and its seed), the text it was defined by
(:meth:`Design.to_toml`, stored with the results) and a way to turn a point into a scenario
(:meth:`Design.build`, core scenario dict); optionally ``check(runs)``, raising
:class:`DesignError` for a design whose runs are not all valid (the runner calls it before it
builds anything, unless it is given another builder). The runner and the store only use this contract;
what the factors mean (the ANRW'24 two-flow study, the PAM N x M study, ...) is the studies
layer's business (``l4sim.studies``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol


class DesignError(ValueError):
    """A malformed design or a point that cannot be built; the message names the factor."""


class Design(Protocol):
    name: str

    def runs(self) -> list[RunSpec]: ...

    def to_toml(self) -> str: ...

    def build(self, point: Mapping[str, Any], seed: int) -> dict: ...


def canonical_json(obj: Any) -> str:
    """Deterministic JSON: sorted keys, no spaces, integral floats written as ints."""
    return json.dumps(_canon(obj), sort_keys=True, separators=(",", ":"))


def _canon(obj: Any) -> Any:
    if isinstance(obj, float) and obj.is_integer():
        return int(obj)
    if isinstance(obj, dict):
        return {str(k): _canon(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_canon(v) for v in obj]
    return obj


def cell_of(point: Mapping[str, Any]) -> dict[str, Any]:
    """The cell a run belongs to: its point without the trial."""
    return {k: v for k, v in point.items() if k != "trial"}


def seed_for(point: Mapping[str, Any]) -> int:
    """Reproducible per-trial seed: hash(canonical point without trial/duration) + trial."""
    base = {k: v for k, v in point.items() if k not in ("trial", "duration")}
    h = hashlib.sha256(canonical_json(base).encode()).digest()
    cell_seed = int.from_bytes(h[:7], "big")  # < 2^56, leaves room for the trial offset
    return cell_seed + int(point.get("trial", 1))


@dataclass(frozen=True)
class RunSpec:
    """One run of a design: its factor point (study names) and its seed."""

    point: dict[str, Any]
    seed: int

    @property
    def cell(self) -> dict[str, Any]:
        return cell_of(self.point)
