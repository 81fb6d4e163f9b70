"""netem delay tables from measured delays, as iproute2's ``maketable`` builds them.

``tc qdisc ... netem delay MU JITTER distribution NAME`` draws each packet's delay as
``MU + JITTER * t / 8192`` for a random entry ``t`` of the table ``NAME.dist``. To replay a
measured delay distribution, iproute2's ``maketable`` (netem/maketable.c, from NIST Net) turns the
samples into such a table; :func:`delay_from_samples` does the same and returns the netem
parameters to use with it::

    netem = {"kind": "netem", **l4sim.netem.delay_from_samples(one_way_delays_ms)}

The steps are ``maketable``'s: the samples' mean and (n-1) standard deviation; a histogram of
the normalised samples on a grid of 1/50000 over [-4, 4); its cumulative sum; for each grid point,
the table entry at ``rint(cdf * 4096)`` set to ``rint(x * 8192)`` (later points overwrite earlier
ones, and a cdf of exactly 1 falls past the table, as in C, where it writes past the array);
then entries still empty are filled by the C code's integer linear interpolation, towards
32767 past the last one.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

TABLE_SIZE = 4096  # TABLESIZE: entries in the table tc loads
TABLE_FACTOR = 8192  # NETEM_DIST_SCALE: one sigma
DOMAIN = 32767 // TABLE_FACTOR + 1  # DISTTABLEDOMAIN: the grid covers [-4, 4) sigma
GRANULARITY = 50000  # DISTTABLEGRANULARITY: grid points per sigma
MIN_SHORT, MAX_SHORT = -32768, 32767


def _c_div(a: int, b: int) -> int:
    """C's integer division (truncates towards zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def table_from_samples(samples: Iterable[float]) -> tuple[float, float, list[int]]:
    """``maketable``: the samples' mean, standard deviation and 4096-entry inverse-CDF table."""
    x = np.asarray(list(samples), dtype=float)
    if x.size < 2 or not np.all(np.isfinite(x)):
        raise ValueError("samples: need at least two finite values")
    mu = float(x.mean())
    sigma = float(np.sqrt((np.sum(x * x) - x.size * mu * mu) / (x.size - 1)))
    if not sigma > 0:
        raise ValueError("samples: all values are equal, so there is no spread to tabulate")
    size = DOMAIN * GRANULARITY * 2
    index = np.clip(np.rint(((x - mu) / sigma + DOMAIN) * GRANULARITY), 0, size - 1).astype(int)
    cdf = np.cumsum(np.bincount(index, minlength=size))
    inverse_index = np.rint(cdf / cdf[-1] * TABLE_SIZE).astype(int)
    value = np.rint((np.arange(size) / GRANULARITY - DOMAIN) * TABLE_FACTOR)
    value = np.clip(value, MIN_SHORT + 1, MAX_SHORT).astype(int)
    # C's loop leaves each entry the value of the last grid point mapped to it; the cdf never
    # decreases, so that is where the entry index changes next.
    last_of_run = np.r_[inverse_index[1:] != inverse_index[:-1], True] & (inverse_index < TABLE_SIZE)
    table = np.full(TABLE_SIZE, MIN_SHORT, dtype=int)
    table[inverse_index[last_of_run]] = value[last_of_run]
    out = [int(v) for v in table]
    # interpolatetable: an empty entry lies on the line from the last filled one to the next
    # (or to 32767 past the end), in C integer arithmetic. Next filled entry, from the right:
    next_filled = [TABLE_SIZE] * (TABLE_SIZE + 1)
    for i in range(TABLE_SIZE - 1, -1, -1):
        next_filled[i] = i if out[i] != MIN_SHORT else next_filled[i + 1]
    last, last_i = MIN_SHORT, -1
    for i in range(TABLE_SIZE):
        if out[i] != MIN_SHORT:
            last, last_i = out[i], i
            continue
        j = next_filled[i]
        target, span = (out[j], j - last_i) if j < TABLE_SIZE else (MAX_SHORT, TABLE_SIZE - last_i)
        out[i] = last + _c_div((i - last_i) * (target - last), span)
    return mu, sigma, out


def delay_from_samples(samples_ms: Iterable[float]) -> dict[str, object]:
    """The netem parameters that replay these one-way delays (ms): ``delay_ms`` (their mean),
    ``jitter_ms`` (their standard deviation) and ``dist_table``."""
    mu, sigma, table = table_from_samples(samples_ms)
    return {"delay_ms": mu, "jitter_ms": sigma, "dist_table": table}
