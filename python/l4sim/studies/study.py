"""Study designs: a TOML file that reads like the study's factor dictionary, expanded into runs.

A study file::

    name = "anrw24"
    description = "Prague vs CUBIC, 100 Mbit/s, 10 ms, T = 5 ms"
    trials = 10                       # shorthand for [factors] trial = [1, ..., 10]
    constraints = ["not (aqm == 'DualPI2' and ecn_fallback == 1)"]

    [factors]                         # each factor -> list of values (full factorial)
    aqm = ["FIFO", "Codel", "DualPI2"]
    n_bdp = [0.5, 1, 2, 4, 8]
    rx_classic_ecn = ["none", "classic"]

    [fixed]                           # single values applied to every run
    btl_capacity = 100
    base_rtt = 10
    ecn_threshold = 5
    duration = 60

Built-in constraints (the study's): FIFO has no ECN threshold, so the factor is dropped for it
and the duplicates merged; runs whose buffer in time (n_bdp x base_rtt, ms) is below the ECN
threshold are skipped (FIFO exempt). User constraints are Python-like boolean expressions over
factor names, evaluated by a small whitelisted ``ast`` interpreter (no ``eval``).

Each trial gets its own seed: a hash of the canonical point without ``trial`` (and without
``duration``, so shorter and longer runs of one cell share their random streams) plus the trial.
"""

from __future__ import annotations

import ast
import itertools
import json
import math
import operator
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from l4sim.scenario import canonical_name
from l4sim.studies.factors import (
    AQMS,  # the study's AQM order (rows of every heatmap)
    FACTOR_CCS,
    FACTOR_NAMES,
    TCP_RMEM,
    TREE_LINKS,
    canonical_aqm,
    cc_factor,
)
from l4sim.sweep.designs import DesignError, RunSpec, canonical_json, seed_for

ECN_MODES = ("none", "classic", "accecn")

# Factor order of the study's dictionary: also the column order of exports (the buffer and the
# path first, then the other factors of scenario_from_factors in its order, then run parameters).
_LEAD = ("n_bdp", "btl_capacity", "base_rtt", "aqm")
FACTOR_ORDER: tuple[str, ...] = _LEAD + tuple(f for f in FACTOR_NAMES if f not in _LEAD) + ("trial", "duration")
# Settings accepted in [fixed] besides the factors (passed through to scenario_from_factors).
EXTRA_SETTINGS = ("sample_interval",)


class StudyError(DesignError):
    """A malformed study file or design; the message names the factor at fault."""


#: Runs one study may hold: its points are expanded in memory (and indexed in the store), so
#: ``trials = 1000000000`` must be refused before, not found out by the kernel's OOM killer.
#: The largest preset, the full factorial, has 28,320.
MAX_RUNS = 1_000_000


def _check_size(factors: Mapping[str, list[Any]], trials: int = 1) -> None:
    """Refuse a design whose factor lists (times ``trials``) combine to more than MAX_RUNS runs,
    before any of them is expanded."""
    n = trials * math.prod(len(v) for v in factors.values())
    if n > MAX_RUNS:
        sizes = [f"{len(v)} {k}" for k, v in factors.items() if len(v) > 1]
        if trials > 1:
            sizes.append(f"{trials} trials")
        raise StudyError(
            f"design size: {' x '.join(sizes)} combine to up to {n:,} runs; a study holds at most {MAX_RUNS:,} "
            "(split it, or use fewer trials)"
        )


def _positive_number(name: str, v: Any) -> float | int:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
        raise StudyError(f"factor {name!r}: value {v!r} must be a positive number")
    return v


def _positive_int(name: str, v: Any, minimum: int = 1) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
        raise StudyError(f"factor {name!r}: value {v!r} must be an integer >= {minimum}")
    return v


def _choice(choices: Iterable[str]) -> Callable[[str, Any], Any]:
    """A name from ``choices`` under the package's one name rule (case-insensitive, ``-`` = ``_``)."""
    choices = tuple(choices)

    def check(name: str, v: Any) -> str:
        if not isinstance(v, str) or canonical_name(v) not in choices:
            raise StudyError(f"factor {name!r}: value {v!r} is not one of {list(choices)}")
        return canonical_name(v)

    return check


def _aqm(name: str, v: Any) -> str:
    """An AQM name, spelled as the study does (``l4sim.studies.factors`` decides)."""
    try:
        return canonical_aqm(v)
    except ValueError:
        raise StudyError(f"factor {name!r}: value {v!r} is not one of {list(AQMS)}") from None


CLASSIC_ECN_MODES = ("none", "classic")


def _cc_name(name: str, v: Any) -> str:
    """A CC factor value: the core's names plus other builds ("bbr2" is the study kernel's
    L4STeam build, "bbr2-v2alpha" google's; ``l4sim.studies.factors`` decides)."""
    try:
        return cc_factor(name, v)
    except ValueError:
        raise StudyError(f"factor {name!r}: value {v!r} is not one of {list(FACTOR_CCS)}") from None


def _fallback(name: str, v: Any) -> int:
    if isinstance(v, bool):
        return int(v)
    if v not in (0, 1, 2) or isinstance(v, float):
        raise StudyError(f"factor {name!r}: value {v!r} must be 0 (off), 1 (on) or 2")
    return int(v)


VALIDATORS: dict[str, Callable[[str, Any], Any]] = {
    "n_bdp": _positive_number,
    "btl_capacity": _positive_number,
    "base_rtt": _positive_number,
    "aqm": _aqm,
    "ecn_threshold": _positive_number,
    "ecn_fallback": _fallback,
    "tx_l4s_ecn": _choice(ECN_MODES),
    "rx_l4s_ecn": _choice(ECN_MODES),
    "tx_classic_ecn": _choice(CLASSIC_ECN_MODES),
    "rx_classic_ecn": _choice(CLASSIC_ECN_MODES),
    "cc_l4s": _cc_name,
    "cc_classic": _cc_name,
    "rx_l4s_cc": _cc_name,
    "rx_classic_cc": _cc_name,
    "n_l4s": lambda n, v: _positive_int(n, v, 0),
    "n_classic": lambda n, v: _positive_int(n, v, 0),
    "tree_level": _choice(TREE_LINKS),
    "rmem_max": lambda n, v: _positive_int(n, v, TCP_RMEM[1]),
    "trial": lambda n, v: _positive_int(n, v, 1),
    "duration": _positive_number,
    "sample_interval": _positive_number,
}
REQUIRED = ("aqm", "n_bdp", "btl_capacity", "base_rtt")


# --------------------------------------------------------------------------- constraints

_BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Mod: operator.mod,
    ast.FloorDiv: operator.floordiv,
    ast.Pow: operator.pow,
}
_CMPOPS = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}


class Constraint:
    """A boolean expression over factor names; a run is kept when it is true.

    Allowed: names, numbers, strings, None/True/False, tuples/lists, arithmetic, comparisons
    (chained, ``in``), ``and``/``or``/``not``, ``x if c else y``, ``abs/min/max``. A factor
    absent from a point (e.g. FIFO's ``ecn_threshold``) evaluates to None.
    """

    _FUNCS: dict[str, Callable[..., Any]] = {"abs": abs, "min": min, "max": max}

    def __init__(self, text: str):
        if not isinstance(text, str) or not text.strip():
            raise StudyError(f"constraint {text!r}: must be a non-empty expression string")
        self.text = text
        try:
            self.tree = ast.parse(text, mode="eval")
        except SyntaxError as e:
            raise StudyError(f"constraint {text!r}: syntax error: {e.msg}") from None
        self.names: set[str] = set()
        self._check(self.tree.body)
        unknown = self.names - set(FACTOR_ORDER) - set(EXTRA_SETTINGS)
        if unknown:
            raise StudyError(
                f"constraint {text!r}: unknown factor {sorted(unknown)[0]!r} (known: {', '.join(FACTOR_ORDER)})"
            )
        # The values a factor is compared with (==, !=, in, not in), spelled as the factors are:
        # 'dualpi2' is the AQM the design calls 'DualPI2' (it never matched).
        self.compared: list[tuple[str, list[Any]]] = []
        for name, consts in self._comparisons(self.tree.body):
            for const in consts:
                if const.value is not None:  # None: FIFO's threshold, a run without the factor
                    try:
                        const.value = VALIDATORS[name](name, const.value)
                    except StudyError as e:
                        raise StudyError(f"constraint {text!r}: {e}") from None
            self.compared.append((name, [c.value for c in consts if c.value is not None]))

    @staticmethod
    def _comparisons(node: ast.AST) -> Iterable[tuple[str, list[ast.Constant]]]:
        """(factor, [constant]) of every ``factor == value`` (``!=``, ``value == factor``) and
        (factor, [constants]) of every ``factor in (value, ...)`` (``not in``) in the expression."""
        for n in ast.walk(node):
            if not isinstance(n, ast.Compare):
                continue
            sides = [n.left, *n.comparators]
            for op, a, b in zip(n.ops, sides[:-1], sides[1:], strict=True):
                if isinstance(op, (ast.Eq, ast.NotEq)):
                    for x, y in ((a, b), (b, a)):
                        if isinstance(x, ast.Name) and x.id in VALIDATORS and isinstance(y, ast.Constant):
                            yield x.id, [y]
                elif isinstance(op, (ast.In, ast.NotIn)) and isinstance(a, ast.Name) and a.id in VALIDATORS:
                    if isinstance(b, (ast.Tuple, ast.List)):
                        yield a.id, [e for e in b.elts if isinstance(e, ast.Constant)]

    def never_taken(self, values: Mapping[str, list[Any]]) -> str | None:
        """One line if the constraint compares a factor with a value the design never gives it
        (``values``: each factor's list; for ``in``, none of the listed values), which makes the
        comparison the same for every run: surely not what was meant."""
        for name, vs in self.compared:
            if not vs:
                continue
            shown = repr(vs[0]) if len(vs) == 1 else f"any of {', '.join(map(repr, vs))}"
            if name not in values:
                return (
                    f"constraint {self.text!r}: factor {name!r} is compared with {shown} but the design does not "
                    "set it (put it in [factors] or [fixed])"
                )
            if not any(v in values[name] for v in vs):
                return (
                    f"constraint {self.text!r}: factor {name!r} is never {shown} in this design "
                    f"(its values: {', '.join(map(repr, values[name]))})"
                )
        return None

    def _check(self, node: ast.AST) -> None:
        ok = (
            (
                ast.Expression,
                ast.BoolOp,
                ast.And,
                ast.Or,
                ast.UnaryOp,
                ast.Not,
                ast.USub,
                ast.UAdd,
                ast.BinOp,
                ast.Compare,
                ast.IfExp,
                ast.Constant,
                ast.Name,
                ast.Load,
                ast.Tuple,
                ast.List,
                ast.Call,
            )
            + tuple(_BINOPS)
            + tuple(_CMPOPS)
        )
        if not isinstance(node, ok):
            raise StudyError(f"constraint {self.text!r}: {type(node).__name__} is not allowed in constraints")
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in self._FUNCS:
                raise StudyError(f"constraint {self.text!r}: only abs/min/max may be called")
            if node.keywords:
                raise StudyError(f"constraint {self.text!r}: keyword arguments not allowed")
            for a in node.args:
                self._check(a)
            return
        if isinstance(node, ast.Name) and node.id not in ("True", "False", "None"):
            self.names.add(node.id)
        for child in ast.iter_child_nodes(node):
            self._check(child)

    def __call__(self, point: Mapping[str, Any]) -> bool:
        try:
            return bool(self._eval(self.tree.body, point))
        except TypeError:
            # e.g. comparing FIFO's missing threshold (None) with a number: not applicable.
            return True

    def _eval(self, node: ast.AST, env: Mapping[str, Any]) -> Any:
        ev = self._eval
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return env.get(node.id)
        if isinstance(node, (ast.Tuple, ast.List)):
            return tuple(ev(e, env) for e in node.elts)
        if isinstance(node, ast.BoolOp):
            if isinstance(node.op, ast.And):
                return all(ev(v, env) for v in node.values)
            return any(ev(v, env) for v in node.values)
        if isinstance(node, ast.UnaryOp):
            v = ev(node.operand, env)
            if isinstance(node.op, ast.Not):
                return not v
            return -v if isinstance(node.op, ast.USub) else +v
        if isinstance(node, ast.BinOp):
            return _BINOPS[type(node.op)](ev(node.left, env), ev(node.right, env))
        if isinstance(node, ast.Compare):
            left = ev(node.left, env)
            for op, comp in zip(node.ops, node.comparators, strict=True):
                right = ev(comp, env)
                if not _CMPOPS[type(op)](left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.IfExp):
            return ev(node.body, env) if ev(node.test, env) else ev(node.orelse, env)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):  # _check allows no other call
            fn = self._FUNCS[node.func.id]
            return fn(*(ev(a, env) for a in node.args))
        raise StudyError(f"constraint {self.text!r}: cannot evaluate {type(node).__name__}")


# --------------------------------------------------------------------------- points and seeds
# The generic parts (canonical JSON, per-trial seeds, RunSpec) live in l4sim.sweep.designs.


@dataclass
class Study:
    name: str
    factors: dict[str, list[Any]]
    fixed: dict[str, Any] = field(default_factory=dict)
    constraints: list[Constraint] = field(default_factory=list)
    description: str = ""
    source: str = ""  # the TOML text this study came from (stored with the results)
    #: Cells :meth:`check` found valid (the command checks before the runner does again).
    _valid_cells: set[str] = field(default_factory=set, init=False, repr=False, compare=False)

    # ---------------------------------------------------------------- construction
    @classmethod
    def from_toml(cls, text: str, *, name: str | None = None) -> Study:
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise StudyError(f"study file is not valid TOML: {e}") from None
        return cls.from_dict(doc, name=name, source=text)

    @classmethod
    def from_file(cls, path: str | Path) -> Study:
        p = Path(path)
        return cls.from_toml(p.read_text(), name=p.stem)

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any], *, name: str | None = None, source: str = "") -> Study:
        known_top = {"name", "description", "trials", "constraints", "factors", "fixed"}
        for k in doc:
            if k not in known_top:
                if k in VALIDATORS:
                    raise StudyError(f"factor {k!r} given at top level: put it under [factors] or [fixed]")
                raise StudyError(f"unknown study key {k!r} (known: {sorted(known_top)})")
        factors_in = doc.get("factors", {})
        fixed_in = doc.get("fixed", {})
        if not isinstance(factors_in, dict) or not isinstance(fixed_in, dict):
            raise StudyError("[factors] and [fixed] must be tables")
        factors: dict[str, list[Any]] = {}
        for k, values in factors_in.items():
            if k not in VALIDATORS:
                raise StudyError(f"unknown factor {k!r} (known: {', '.join(FACTOR_ORDER + EXTRA_SETTINGS)})")
            if k in EXTRA_SETTINGS:  # not a factor: a run's setting, the same for every run
                raise StudyError(f"{k!r} is a setting, not a factor: give it one value in [fixed]")
            if not isinstance(values, list):
                values = [values]
            if not values:
                raise StudyError(f"factor {k!r}: empty list of values")
            checked = [VALIDATORS[k](k, v) for v in values]
            factors[k] = list(dict.fromkeys(checked))  # duplicates merged, order kept
        fixed: dict[str, Any] = {}
        for k, v in fixed_in.items():
            if k not in VALIDATORS:
                raise StudyError(f"unknown factor {k!r} in [fixed] (known: {', '.join(FACTOR_ORDER + EXTRA_SETTINGS)})")
            if k in factors:
                raise StudyError(f"factor {k!r} is both in [factors] and [fixed]")
            if isinstance(v, list):
                raise StudyError(f"factor {k!r}: [fixed] takes one value, not a list")
            fixed[k] = VALIDATORS[k](k, v)
        if "trials" in doc:
            n = doc["trials"]
            if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                raise StudyError(f"factor 'trial': trials = {n!r} must be an integer >= 1")
            if "trial" in factors or "trial" in fixed:
                raise StudyError("factor 'trial': give either trials = N or a trial list")
            _check_size(factors, n)
            factors["trial"] = list(range(1, n + 1))
        _check_size(factors)
        for k in REQUIRED:
            if k not in factors and k not in fixed:
                raise StudyError(f"factor {k!r} is required (in [factors] or [fixed])")
        cons = doc.get("constraints", [])
        if isinstance(cons, str):
            cons = [cons]
        if not isinstance(cons, list):
            raise StudyError("constraints must be a list of expression strings")
        nm = doc.get("name", name or "study")
        if not isinstance(nm, str) or not nm:
            raise StudyError("name must be a non-empty string")
        constraints = [Constraint(c) for c in cons]
        _check_constraints(constraints, factors, fixed)
        return cls(
            name=nm,
            factors=factors,
            fixed=fixed,
            constraints=constraints,
            description=str(doc.get("description", "")),
            source=source,
        )

    def with_overrides(self, **fixed: Any) -> Study:
        """A copy with some factors pinned (e.g. duration=20) or trials changed (trials=2)."""
        factors = dict(self.factors)
        fx = dict(self.fixed)
        for k, v in fixed.items():
            if k == "trials":
                factors.pop("trial", None)
                _check_size(factors, int(v))
                factors["trial"] = list(range(1, int(v) + 1))
                continue
            if k not in VALIDATORS:
                raise StudyError(f"unknown factor {k!r}")
            factors.pop(k, None)
            fx[k] = VALIDATORS[k](k, v)
        _check_constraints(self.constraints, factors, fx)
        # the stored design must describe what runs: regenerate the TOML (source="")
        return Study(self.name, factors, fx, list(self.constraints), self.description, "")

    def renamed(self, name: str) -> Study:
        """A copy under another name (its TOML is regenerated to say so, like an override's)."""
        copy = replace(self, name=name, source="")
        copy._valid_cells = self._valid_cells  # the same runs
        return copy

    # ---------------------------------------------------------------- expansion
    def points(self) -> list[dict[str, Any]]:
        """The design's distinct factor points, in the study's factor order, constraints applied."""
        names = [k for k in FACTOR_ORDER + EXTRA_SETTINGS if k in self.factors or k in self.fixed]
        lists = [self.factors[k] if k in self.factors else [self.fixed[k]] for k in names]
        out: dict[str, dict[str, Any]] = {}
        for combo in itertools.product(*lists):
            p = dict(zip(names, combo, strict=True))
            if not builtin_constraints(p):
                continue
            if p.get("aqm") == "FIFO":
                p.pop("ecn_threshold", None)  # FIFO has no threshold: drop, merge duplicates
            if not all(c(p) for c in self.constraints):
                continue
            out.setdefault(canonical_json(p), p)
        return list(out.values())

    def runs(self) -> list[RunSpec]:
        return [RunSpec(p, seed_for(p)) for p in self.points()]

    def build(self, point: Mapping[str, Any], seed: int) -> dict:
        """The scenario of one design point (study factor names) via l4sim.studies.factors."""
        from l4sim.studies.factors import scenario_from_factors

        kw = dict(point)
        if kw.get("ecn_threshold") is None:
            kw.pop("ecn_threshold", None)  # FIFO: no threshold
        kw["seed"] = seed
        return scenario_from_factors(**kw)

    def check(self, runs: list[RunSpec] | None = None) -> None:
        """Refuse the design if one of its runs is not a valid scenario, before anything runs:
        each cell (a point without its trial; trials differ only in the seed) is built and
        checked as ``l4sim run --aqm ...`` and ``validate-scenario`` check a study point (the
        core's validator), and the first that fails raises StudyError naming the factor and the
        run. About 0.1 ms a cell: 1 s for the full factorial's 5,664 cells."""
        from l4sim.scenario import ScenarioError
        from l4sim.studies.factors import scenario_from_factors_table

        runs = self.runs() if runs is None else runs
        if not runs:
            mine = "; ".join(repr(c.text) for c in self.constraints)
            raise StudyError(
                "constraints: no run of the design is left after them (the study's: a buffer n_bdp x base_rtt "
                f"below the ecn_threshold is skipped{'; yours: ' + mine if mine else ''})"
            )
        seen = self._valid_cells
        for r in runs:
            cell = {k: v for k, v in r.point.items() if k != "trial" and v is not None}
            text = canonical_json(cell)
            if text in seen:
                continue
            try:
                scenario_from_factors_table({"factors": dict(cell, seed=r.seed)})
            except ScenarioError as e:
                field = getattr(e, "field", "").removeprefix("factors.")
                what = f"factor {field!r}" if field in VALIDATORS else field or "run"
                at = ", ".join(f"{k}={v}" for k, v in r.point.items())
                raise StudyError(f"{what}: {getattr(e, 'message', e)} (in the run {at})") from None
            seen.add(text)

    def __len__(self) -> int:
        return len(self.points())

    @property
    def trials(self) -> int:
        return len(self.factors.get("trial", [self.fixed.get("trial", 1)]))

    def to_toml(self) -> str:
        """The design as TOML (the original text if the study came from one)."""
        if self.source:
            return self.source
        lines = [f"name = {json.dumps(self.name)}"]
        if self.description:
            lines.append(f"description = {json.dumps(self.description)}")
        if self.constraints:
            lines.append("constraints = [" + ", ".join(json.dumps(c.text) for c in self.constraints) + "]")
        lines.append("\n[factors]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in self.factors.items()]
        lines.append("\n[fixed]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in self.fixed.items()]
        return "\n".join(lines) + "\n"

    def describe(self, n_runs: int | None = None) -> str:
        """What the study varies and holds; ``n_runs``, when the caller has expanded the design
        already, saves expanding it again (half a second for a full factorial)."""
        n = len(self.points()) if n_runs is None else n_runs
        lines = [f"study {self.name}: {n} runs ({n // max(self.trials, 1)} cells x {self.trials} trials)"]
        if self.description:
            lines.append(f"  {self.description}")
        for k in FACTOR_ORDER + EXTRA_SETTINGS:
            if k in self.factors:
                lines.append(f"  {k:16s} {self.factors[k]}")
            elif k in self.fixed:
                lines.append(f"  {k:16s} {self.fixed[k]} (fixed)")
        for c in self.constraints:
            lines.append(f"  constraint: {c.text}")
        return "\n".join(lines)


def _check_constraints(constraints: list[Constraint], factors: Mapping[str, list], fixed: Mapping[str, Any]) -> None:
    values = {**{k: [v] for k, v in fixed.items()}, **factors}
    for c in constraints:
        problem = c.never_taken(values)
        if problem:
            raise StudyError(problem)


#: Keys of a study file that a one-point ``[factors]`` scenario does not have.
STUDY_FILE_KEYS = ("fixed", "constraints", "trials", "description")


def scenario_from_factors_document(d: dict[str, Any]) -> dict[str, Any]:
    """A ``[factors]`` scenario document (one study point, ``l4sim run FILE``) as
    ``l4sim.studies.factors.scenario_from_factors_table`` reads it, but a study file given
    where one scenario is expected is told so, not that its ``[fixed]`` is an unknown key."""
    from l4sim.scenario import scenario_error
    from l4sim.studies.factors import scenario_from_factors_table

    factors = d.get("factors")
    lists = [k for k, v in factors.items() if isinstance(v, list)] if isinstance(factors, dict) else []
    marks = [k for k in STUDY_FILE_KEYS if k in d] + [f"factors.{k}" for k in lists]
    if marks and "topology" not in d and "flows" not in d:
        raise scenario_error(
            marks[0],
            "this is a study file (a design of many runs), not one scenario: "
            "run it with `l4sim study run FILE --store DIR` (`l4sim study plan FILE` shows its runs)",
        )
    return scenario_from_factors_table(d)


def builtin_constraints(p: Mapping[str, Any]) -> bool:
    """The study's constraint: skip runs whose buffer in time is below the ECN threshold.

    Buffer in time = n_bdp x base_rtt (ms). FIFO is exempt (it has no threshold).
    """
    if p.get("aqm") == "FIFO":
        return True
    thr = p.get("ecn_threshold", 5)
    if "n_bdp" in p and "base_rtt" in p:
        return p["n_bdp"] * p["base_rtt"] >= thr
    return True
