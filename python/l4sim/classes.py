"""The traffic classes the core counts at each qdisc, and what their counts give.

Every qdisc counts its packets per class, ECT(1)/CE ("l4s") or not ("classic"), as DualPI2
classifies them (a DualPI2 with another ``ecn_mask`` or with ``filters``, as it does): per
interval the packets that arrived (drops included), those marked CE (counted at dequeue) and
those dropped (``QdiscStats::class_counts`` in the core).
"""

from __future__ import annotations

from typing import Any

#: The classes, in the core's order.
TRAFFIC_CLASSES = ("l4s", "classic")


def class_probabilities(pkts: Any, marks: Any, drops: Any) -> tuple[Any, Any]:
    """(mark, drop) probability of a class from its counts (numbers or arrays, as numpy arrays):
    the marks over the packets admitted, the drops over the packets that arrived; NaN where
    there were none. A mark counted at dequeue can fall in the interval after its packet's
    arrival, so over short intervals the mark probability can exceed 1."""
    import numpy as np

    pkts, marks, drops = (np.asarray(x, dtype=float) for x in (pkts, marks, drops))
    admitted = pkts - drops
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(admitted > 0, marks / admitted, np.nan), np.where(pkts > 0, drops / pkts, np.nan)
