"""The study's published designs as ready-made study files.

``l4sim study presets`` lists them; ``l4sim study plan NAME`` shows one; any command that takes
a study file also takes a preset name. Each preset's TOML text is stored with its results.

- ``full-factorial``: the original full design, 28,320 runs (236 AQM/buffer/RTT/threshold
  cells x 2 capacities x 2 fallback x 3 L4S receiver ECN x 2 classic receiver ECN x 5 trials).
- ``first-grid``: the first published grid (public experiment repository
  fatihsarpkaya/L4S, early notebook and ``plot_on_local_heat_map.py``): buffers
  {0.5, 2, 5, 10} BDP x RTT {10, 50, 100} ms x 6 AQMs x threshold {5, 20} ms. With the
  study's two constraints this is 127 runs per trial: 12 FIFO cells (threshold dropped) plus
  5 AQMs x 23 (buffer, RTT, threshold) triples (0.5 BDP at 10 ms = 5 ms is below 20 ms).
  The repository ran that grid for each (capacity, fallback, receiver ECN) combination; the
  preset pins the combination of its published heatmaps (100 Mbit/s, fallback off, Prague
  receiver AccECN, CUBIC receiver classic ECN). Widen ``[factors]`` for the others.
- ``anrw24``: the ANRW'24 grid (reference data ``testbed_prague_vs_cubic.csv``): 100 Mbit/s,
  10 ms, T = 5 ms, nine AQMs x buffers {0.5, 1, 2, 4, 8} x CUBIC receiver ECN
  {none, classic}, Prague with AccECN, fallback off, 10 trials x 60 s: 900 runs.
- ``pam25-cc``: PAM'25 congestion-control pairs: the nine AQMs x buffers {0.5, 1, 2, 4, 8} x
  classic CC {cubic, bbr, bbr2, bbr3} x L4S CC {prague, bbr2} x classic receiver ECN
  {none, classic}, 100 Mbit/s, 10 ms, T = 5 ms, 10 trials. ``bbr2`` is the study kernel's
  L4STeam build in both roles (``l4sim.studies.factors``); the testbed's Prague-vs-BBR cells of
  this grid are ``presets/pam25_bbr_testbed.csv`` (``l4sim validate``).
- ``pam25-flows``: PAM'25 N vs M flows: the nine AQMs x N, M in {1, 2, 5, 10, 25} (Prague vs
  CUBIC, both ECN-capable receivers), 2 BDP, 100 Mbit/s, 10 ms, T = 5 ms, 10 trials.
  (The buffer of the N vs M grid is our reconstruction; change ``n_bdp`` if you know better.)
- ``tree``: the original multi-bottleneck tree (``docs/topologies.md``): Prague vs CUBIC with
  the bottleneck on the pair, group-of-four or root level (``tree_level``), nine AQMs, 2 BDP,
  100 Mbit/s, 10 ms, T = 5 ms, 5 trials: 135 runs.
"""

from __future__ import annotations

from pathlib import Path

from l4sim.studies.study import Study, StudyError

#: The presets, in the order ``l4sim study presets`` lists them; each is a study file in
#: ``presets/NAME.toml`` beside this module (its text is stored with its results).
ORDER = ("full-factorial", "first-grid", "anrw24", "pam25-cc", "pam25-flows", "tree")
PRESET_DIR = Path(__file__).with_name("presets")
PRESETS: dict[str, str] = {n: (PRESET_DIR / f"{n}.toml").read_text(encoding="utf-8") for n in ORDER}


def names() -> list[str]:
    return list(PRESETS)


def _preset_name(name: str) -> str | None:
    """The preset ``name`` is (case-insensitive, ``-`` = ``_``, as every name), or None."""
    from l4sim.scenario import canonical_name

    return next((n for n in PRESETS if canonical_name(n) == canonical_name(name)), None)


def get(name: str) -> Study:
    """The preset study ``name`` (``ANRW24`` is ``anrw24``); StudyError naming the known
    presets otherwise."""
    preset = _preset_name(name)
    if preset is None:
        raise StudyError(f"{name!r} is neither a study file nor a preset (presets: {', '.join(PRESETS)})")
    return Study.from_toml(PRESETS[preset], name=preset)


def table() -> list[tuple[str, int, int, str]]:
    """(name, runs, trials, description) of every preset."""
    out = []
    for n in PRESETS:
        s = get(n)
        out.append((n, len(s), s.trials, s.description))
    return out


def load(file_or_preset: str) -> Study:
    """A study from a TOML file path or a preset name (a file wins over a preset)."""
    p = Path(file_or_preset)
    if p.is_file():
        return Study.from_file(p)
    if _preset_name(file_or_preset) is not None:
        return get(file_or_preset)
    if p.suffix == ".toml" or p.exists():
        raise StudyError(f"study file {file_or_preset!r} not found (or not a file)")
    return get(file_or_preset)  # StudyError listing the presets
