"""A quick subset of the validation against the testbed (issue: validation; issue 10: BBR).

A handful of representative cells of the reference data (100 Mbit/s, 10 ms, T = 5 ms,
Prague with AccECN vs CUBIC with and without ECN, and vs BBRv1 / BBRv2 / BBRv3; 2 x BDP,
plus the shallow 0.5 x BDP tail-drop cells that depend on the senders' TSO bursts, and cells
where Prague starves, whose delay depends on the AccECN receiver's ACKs),
simulated with 3 seeds of 20 s.
Tolerances reflect the testbed's own trial spread: the ``validate`` thresholds (+-0.10 share,
max(1 ms, 25 %) delay) widened by two standard deviations of the testbed's trials, because the
runs here are a third as long and a third as many as the testbed's 10 x 60 s.
"""

from __future__ import annotations

import math

import pytest

import l4sim
from l4sim.studies.factors import scenario_from_factors
from l4sim.studies.reference import load_reference
from l4sim.studies.validate import DELAY_ABS_MS, DELAY_REL

SEEDS = (1, 2, 3)
DURATION = 20.0

# (aqm, buffer in BDP, case, check the L4S flow's delay, check the classic flow's delay)
CELLS = [
    ("FIFO", 2.0, "cubic_ecn", True, True),
    ("FIFO", 2.0, "cubic_noecn", True, True),
    ("FIFO", 0.5, "cubic_noecn", True, True),
    ("pie_drop", 0.5, "cubic_ecn", True, True),
    ("single_queue_FQ", 2.0, "cubic_ecn", True, False),
    ("single_queue_FQ", 2.0, "cubic_noecn", True, True),
    ("DualPI2", 2.0, "cubic_ecn", True, True),
    ("DualPI2", 2.0, "cubic_noecn", True, True),
    ("FQ_Codel", 2.0, "cubic_ecn", False, True),
    ("FQ_Codel_L4S", 2.0, "cubic_ecn", True, False),
    ("FIFO", 2.0, "bbrv1_noecn", True, True),
    ("pie_drop", 2.0, "bbrv1_noecn", False, True),
    ("DualPI2", 2.0, "bbrv2_ecn", True, True),
    ("single_queue_FQ", 2.0, "bbrv2_ecn", True, True),
    ("FQ_Codel_L4S", 2.0, "bbrv2_noecn", True, False),
    ("DualPI2", 2.0, "bbrv3_noecn", True, True),
    ("DualPI2", 2.0, "bbrv3_ecn", True, True),
    ("Codel_drop", 2.0, "bbrv3_ecn", True, True),
]


@pytest.fixture(scope="module")
def reference():
    return load_reference()


def simulate(
    aqm: str, rx_classic_ecn: str, n_bdp: float = 2.0, cc_classic: str = "cubic"
) -> tuple[float, float, float]:
    shares, ql, qc = [], [], []
    for seed in SEEDS:
        sc = scenario_from_factors(
            aqm=aqm,
            n_bdp=n_bdp,
            btl_capacity=100,
            base_rtt=10,
            ecn_threshold=5,
            tx_l4s_ecn="accecn",
            rx_l4s_ecn="accecn",
            tx_classic_ecn="classic",
            rx_classic_ecn=rx_classic_ecn,
            cc_classic=cc_classic,
            duration=DURATION,
            seed=seed,
        )
        f = l4sim.run(sc).flows.set_index("name")
        t_l, t_c = f.loc["l4s", "goodput_mbps"], f.loc["classic", "goodput_mbps"]
        shares.append(t_l / (t_l + t_c))
        ql.append(f.loc["l4s", "qdelay_ms"])
        qc.append(f.loc["classic", "qdelay_ms"])
    n = len(SEEDS)
    return sum(shares) / n, sum(ql) / n, sum(qc) / n


@pytest.mark.parametrize("aqm,n_bdp,case,check_l4s_delay,check_classic_delay", CELLS)
def test_simulation_agrees_with_the_testbed_within_its_spread(
    reference, aqm, n_bdp, case, check_l4s_delay, check_classic_delay
):
    row = reference[(reference["aqm"] == aqm) & (reference["case"] == case) & (reference["n_bdp"] == n_bdp)]
    assert len(row) == 1
    r = row.iloc[0]
    share, q_l4s, q_classic = simulate(aqm, r["rx_classic_ecn"], n_bdp, r["cc_classic"])

    total = r["l4s_tput_mean"] + r["legacy_tput_mean"]
    share_sd = math.hypot(r["l4s_tput_std"], r["legacy_tput_std"]) / total / math.sqrt(2)
    assert abs(share - r["l4s_share"]) <= 0.10 + 2 * share_sd, (
        f"{aqm}/{case}: Prague share {share:.3f} vs testbed {r['l4s_share']:.3f}"
    )
    for check, sim, tb, sd, who in (
        (check_l4s_delay, q_l4s, r["l4s_qdelay_ms"], r["l4s_srtt_std"], "Prague"),
        (check_classic_delay, q_classic, r["legacy_qdelay_ms"], r["legacy_srtt_std"], r["cc_classic"]),
    ):
        if check:
            tol = max(DELAY_ABS_MS, DELAY_REL * abs(tb)) + 2 * sd
            assert abs(sim - tb) <= tol, f"{aqm}/{case}: {who} queueing delay {sim:.2f} ms vs testbed {tb:.2f} ms"


def test_verdict_rows_vs_cubic_with_ecn_match_the_study(reference):
    """Single queue + ECN: Prague dominates; FQ + ECN: even; DualPI2: fair with a delay
    benefit (the study's rows for an ECN-capable CUBIC at 2 x BDP)."""
    sq, _, _ = simulate("single_queue_FQ", "classic")
    fq, _, _ = simulate("FQ_Codel", "classic")
    dp, q_l4s, q_classic = simulate("DualPI2", "classic")
    assert sq > 0.8
    assert abs(fq - 0.5) < 0.1
    assert abs(dp - 0.5) < 0.15 and q_l4s < 1.0 < q_classic


def test_both_references_load_as_315_cells_with_the_study_cc_names(reference):
    assert len(reference) == 315
    cases = ("cubic_noecn", "cubic_ecn", "bbrv1_noecn", "bbrv2_ecn", "bbrv2_noecn", "bbrv3_ecn", "bbrv3_noecn")
    assert reference.groupby("case").size().to_dict() == {c: 45 for c in cases}
    assert set(reference["cc_classic"]) == {"cubic", "bbr", "bbr2", "bbr3"}


def test_a_reference_given_twice_is_one_clear_error():
    from l4sim.studies.reference import REFERENCE

    with pytest.raises(ValueError, match="reference cell given twice: case 'cubic_"):
        load_reference([REFERENCE, REFERENCE])


def test_validate_reports_per_case_lines_and_both_verdict_columns(tmp_path):
    """The machinery on a tiny subset (1 trial x 2 s): not a fidelity check."""
    from l4sim.studies.validate import validate

    v = validate(
        tmp_path / "out",
        trials=1,
        duration=2.0,
        jobs=1,
        progress=False,
        cells_filter=[("DualPI2", 2.0, "classic", "cubic"), ("DualPI2", 2.0, "classic", "bbr2")],
    )
    assert list(v.comparison["case"]) == ["cubic_ecn", "bbrv2_ecn"]
    assert (v.comparison["trials"] == 1).all()
    lines = v.summary.lines()
    assert any(x.strip().startswith("Prague vs CUBIC, ECN: 1 cells") for x in lines), lines
    assert any(x.strip().startswith("Prague vs BBRv2, ECN: 1 cells") for x in lines), lines
    assert set(v.summary.columns_match) == {"fallback off, vs CUBIC", "fallback off, vs BBRv2"}
    md = (tmp_path / "out" / "summary.md").read_text()
    assert "| fallback off, vs BBRv2 | DualPI2 |" in md


def test_delay_values_are_attributed_to_documented_patterns_by_cell_type():
    """Each delay value gets the key of the docs/validation.md pattern its cell type belongs to
    (Prague starving; a BBR flow behind flow queuing; CoDel's ECN marking), whatever the size of
    its error, and the summary counts agreement per pattern: a new kind of disagreement shows
    up under "none of these"."""
    import pandas as pd

    from l4sim.studies.validate import DELAY_PATTERNS, delay_by_pattern, delay_pattern

    assert [k for k, _ in DELAY_PATTERNS] == ["starving", "bbr-flow-queue", "codel-ecn"]
    assert delay_pattern("l4s", "DualPI2", "bbr3", 0.04) == "starving"
    assert delay_pattern("l4s", "DualPI2", "bbr3", 0.45) == ""
    assert delay_pattern("classic", "FQ_Codel_L4S", "bbr2", 0.5) == "bbr-flow-queue"
    assert delay_pattern("classic", "FQ_Codel_L4S", "cubic", 0.5) == ""
    assert delay_pattern("l4s", "FQ_Codel", "cubic", 0.5) == "codel-ecn"
    assert delay_pattern("classic", "FQ_Codel", "cubic", 0.5) == ""  # its own flow queue
    assert delay_pattern("classic", "Codel", "cubic", 0.93) == "codel-ecn"  # the shared queue
    assert delay_pattern("l4s", "Codel_drop", "bbr2", 0.3) == ""  # no marking there

    cmp = pd.DataFrame(
        {
            "l4s_qdelay_ok": [False, True, False],
            "classic_qdelay_ok": [True, False, False],
            "l4s_qdelay_ms_sim": [7.1, 0.3, 2.2],
            "classic_qdelay_ms_sim": [5.2, 1.4, float("nan")],  # not simulated: not counted
            "l4s_qdelay_pattern": ["starving", "", ""],
            "classic_qdelay_pattern": ["", "bbr-flow-queue", "bbr-flow-queue"],
        }
    )
    assert delay_by_pattern(cmp) == {"starving": (0, 1), "bbr-flow-queue": (0, 1), "codel-ecn": (0, 0), "": (2, 3)}


@pytest.mark.parametrize(
    "args,words",
    [
        (["--reference", "{tmp}/none.csv"], "--reference: "),
        (["--reference", "{tmp}/bad.csv"], "--reference: "),  # a CSV without the reference's columns
        (["--reference", "{tmp}/garbled.csv"], "--reference: "),  # pandas' two-line parser error
        (["--out", "{tmp}/file"], "--out: "),
        (["--store", "{tmp}/file"], "--store: "),
    ],
)
def test_validate_bad_input_is_one_line_before_anything_is_made(tmp_path, capsys, args, words):
    """A reference that is not one was an unprefixed (or two-line) message or a KeyError
    traceback, after --out was made; an --out that is a file was a FileExistsError traceback."""
    from l4sim.cli import main

    (tmp_path / "bad.csv").write_text("a,b\n1,2\n")
    (tmp_path / "garbled.csv").write_text("a\n1\n1,2,3\n")
    (tmp_path / "file").write_text("x")
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    out = args[1] if args[0] == "--out" else str(tmp_path / "out")
    assert main(["validate", "--quick", "--quiet", *(["--out", out] if args[0] != "--out" else []), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {words}") and err.count("\n") == 1, err
    assert not (tmp_path / "out").exists()


def test_an_interrupted_validation_writes_no_comparison_from_a_partial_grid(tmp_path, capsys, monkeypatch):
    """Ctrl-C during the runs: the report was written from the runs done so far, every missing
    cell counted as off (summary.md: 'cells: 315 (153 simulated)', share within +-0.10 45 %)."""
    from l4sim.cli import main
    from l4sim.sweep import runner

    monkeypatch.setattr(runner, "run_study", lambda *a, **k: runner.Outcome(planned=315, done=153, interrupted=True))
    assert main(["validate", "--quick", "--quiet", "--out", str(tmp_path / "out")]) == 130
    err = capsys.readouterr().err
    assert "interrupted" in err and "153 of 315" in err, err
    assert not any((tmp_path / "out" / f).exists() for f in ("summary.md", "validation.csv", "report.html"))


def test_a_validation_against_other_references_is_its_own_design_and_an_edited_one_is_refused(tmp_path, capsys):
    """Validations of the same length shared one design name whatever their reference: the
    second replaced the first in the store. A validation against other references is now
    another design (the runs they share are not done again); a reference file edited since
    its validation is refused in one line, the store as it was."""
    import pandas as pd

    from l4sim.cli import main
    from l4sim.studies.reference import REFERENCE
    from l4sim.sweep.store import Store

    rows = pd.read_csv(REFERENCE)
    cell = (rows["aqm"] == "DualPI2") & (rows["n_bdp"] == 2.0)
    mine = tmp_path / "mine.csv"
    rows[cell & (rows["case"] == "cubic_ecn")].to_csv(mine, index=False)
    out = tmp_path / "out"
    argv = ["validate", "--quiet", "--trials", "1", "--duration", "1", "-j", "1", "--out", str(out)]
    assert main([*argv, "--reference", str(mine)]) == 0
    both = tmp_path / "both.csv"
    rows[cell & rows["case"].isin(["cubic_ecn", "cubic_noecn"])].to_csv(both, index=False)
    capsys.readouterr()
    assert main([*argv, "--reference", str(both)]) == 0
    with Store(out / "store") as st:
        assert {r["design"]: (r["total"], r["done"]) for r in st.status()} == {
            "validate-1x1s-mine": (1, 1),
            "validate-1x1s-both": (2, 2),
        }
        assert len(st.runs()) == 2  # the cell both designs have was run once
    before = (out / "store" / "index.sqlite").read_bytes()
    rows[cell & (rows["case"] == "cubic_noecn")].to_csv(mine, index=False)
    capsys.readouterr()
    assert main([*argv, "--reference", str(mine)]) == 2
    out_text, err = capsys.readouterr()
    assert err.startswith("error: --out: ") and err.count("\n") == 1, err
    assert "'validate-1x1s-mine'" in err and "another --out" in err, err
    assert (out / "store" / "index.sqlite").read_bytes() == before
