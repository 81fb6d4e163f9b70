"""The sweeps layer: run many scenarios (a design) into a results directory.

- ``designs``: the contract a design meets (named runs with points and seeds, a builder)
- ``runner``: local process pool or Dask, resumable, the parent alone writes the store
- ``store``: SQLite index + per-run series files, crash-safe

It uses only the generic layer (``l4sim.scenario``, ``l4sim._core``); studies build on it.
"""
