"""The testbed reference data: the shipped CSVs and their one reader.

``presets/anrw24_testbed.csv`` (Prague vs CUBIC, 90 configurations) and
``presets/pam25_bbr_testbed.csv`` (Prague vs the BBR family, 225) hold, per configuration, the
mean and standard deviation over 10 trials of 60 s of both flows' throughput and queueing delay.
:func:`load_reference` reads them with the study's factor names added; ``validate`` compares the
simulation with them cell by cell and ``report`` puts them beside a study's cells.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pandas is imported where used: `l4sim --help` registers the validate command
    import pandas as pd

REFERENCE = Path(__file__).with_name("presets") / "anrw24_testbed.csv"
REFERENCE_BBR = Path(__file__).with_name("presets") / "pam25_bbr_testbed.csv"
#: The default references: Prague vs CUBIC (90 cells) and vs the BBR family (225 cells).
REFERENCES: tuple[Path, ...] = (REFERENCE, REFERENCE_BBR)

#: The reference's ``net.ipv4.tcp_ecn`` numbers -> the study's receiver ECN values.
ECN_VALUES = {0: "none", 1: "classic", 3: "accecn"}

#: The reference CSV's columns ``load_reference`` reads.
_REFERENCE_COLUMNS = (
    "case",
    "aqm",
    "n_bdp",
    "btl_mbps",
    "base_rtt_ms",
    "ecn_thr_ms",
    "prague_fallback",
    "rx_l4s_ecn",
    "rx_legacy_ecn",
    "l4s_cc",
    "legacy_cc",
)


def load_reference(path: str | Path | Sequence[str | Path] = REFERENCES) -> pd.DataFrame:
    """The reference CSV(s) with the study's factor names added (one row per configuration).

    Several files are concatenated; the reference CC names are the study's factor names
    (``bbr2`` = the study kernel's L4STeam build).
    """
    import pandas as pd

    paths = [path] if isinstance(path, (str, Path)) else list(path)
    if not paths:
        raise ValueError("no reference file given")
    frames = []
    for p in paths:
        try:
            frames.append(pd.read_csv(p))
        except (OSError, ValueError) as e:  # missing, unreadable, not a CSV (pandas' errors)
            raise ValueError(f"{str(p)!r}: cannot read it as a CSV: {e}") from None
        lack = [c for c in _REFERENCE_COLUMNS if c not in frames[-1].columns]
        if lack:
            raise ValueError(f"{str(p)!r} is not a testbed reference: no column {', '.join(lack)}")
    ref = pd.concat(frames, ignore_index=True)
    dup = ref.duplicated(subset=["case", "aqm", "n_bdp"])
    if dup.any():
        r = ref[dup].iloc[0]
        raise ValueError(f"reference cell given twice: case {r['case']!r}, {r['aqm']}, {r['n_bdp']} x BDP")
    return ref.assign(
        n_bdp=ref["n_bdp"].astype(float),
        btl_capacity=ref["btl_mbps"],
        base_rtt=ref["base_rtt_ms"],
        ecn_threshold=pd.to_numeric(ref["ecn_thr_ms"], errors="coerce"),  # FIFO: "none"
        ecn_fallback=ref["prague_fallback"].astype(int),
        rx_l4s_ecn=ref["rx_l4s_ecn"].map(ECN_VALUES),
        rx_classic_ecn=ref["rx_legacy_ecn"].map(ECN_VALUES),
        cc_l4s=ref["l4s_cc"],
        cc_classic=ref["legacy_cc"],
    )
