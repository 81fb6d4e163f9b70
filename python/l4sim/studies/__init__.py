"""The studies layer: the ANRW'24 / PAM'25 studies on top of the generic simulator and sweeps.

- ``factors``: the study's factor dictionary -> a scenario (``scenario_from_factors``)
- ``study``: study files (TOML) -> designs (full factorial, constraints, trials)
- ``presets``: the published designs, and ``load`` (a file or a preset name)
- ``analysis``: per-run metrics, per-cell aggregation, verdicts
- ``plots``, ``report``: the study's figures and HTML report
- ``validate``: simulation vs the testbed's reference data

Importing this package registers what the study adds to the generic layers: the
``[factors]`` form of a scenario file (``l4sim.scenario``) and, in the results store
(``l4sim.sweep.store``), the study's per-run metrics function and factor column order.
"""

from l4sim import scenario as _scenario
from l4sim.studies import analysis as _analysis
from l4sim.studies import study as _study
from l4sim.sweep import store as _store

# one study point; a study file (several points) is told to use `l4sim study run`
_scenario.register_document_form("factors", _study.scenario_from_factors_document)
_store.register_study_columns(_study.FACTOR_ORDER + _study.EXTRA_SETTINGS, _analysis.run_metrics)
