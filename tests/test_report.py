"""The study report compares with the testbed (issue 11, item 4), checked in a real headless
Chromium (Selenium): per metric the simulation | testbed | difference panels, titles with the
trials per cell, out-of-tolerance cells highlighted, no empty column, no Python repr, no table
wider than the page. The report is built from synthetic per-run rows (no simulation), so the
test is fast. The browser part skips only when Chromium or its driver is missing and
``L4SIM_REQUIRE_BROWSER`` is unset. Its screenshot goes to ``out/report-test/`` (or
``$L4SIM_ARTIFACTS``).
"""

from __future__ import annotations

import html
import os
import re
from pathlib import Path

import pandas as pd
import pytest

from l4sim.studies import plots
from l4sim.studies.analysis import cells
from l4sim.studies.report import COMPARED, VERDICT_SHARE_TOL, reference_comparison, render_report
from l4sim_testdata import REPO, headless_chromium

AQMS = ("FIFO", "DualPI2", "FQ_Codel")
BUFS = (0.5, 2.0)
ECN = ("none", "classic")
TRIALS = 2


def _runs() -> pd.DataFrame:
    """Two trials per cell of the reference's conditions: the testbed's means, except FIFO at
    2 x BDP without classic ECN, where Prague takes 95 % (out of tolerance)."""
    ref = pd.read_csv(REPO / "python" / "l4sim" / "studies" / "presets" / "anrw24_testbed.csv")
    rows = []
    for a in AQMS:
        for b in BUFS:
            for e in ECN:
                r = ref[(ref["aqm"] == a) & (ref["n_bdp"] == b) & (ref["rx_legacy_ecn"] == (e == "classic"))].iloc[0]
                tl, tc = float(r["l4s_tput_mean"]), float(r["legacy_tput_mean"])
                if (a, b, e) == ("FIFO", 2.0, "none"):
                    tl, tc = 90.0, 4.0
                for t in range(1, TRIALS + 1):
                    rows.append(
                        dict(
                            aqm=a, n_bdp=b, rx_classic_ecn=e, btl_capacity=100, base_rtt=10,
                            ecn_threshold=None if a == "FIFO" else 5, ecn_fallback=0, cc_classic="cubic",
                            trial=t, model_version="test", utilisation=0.95,
                            l4s_tput_mbps=tl + t - 1.5, classic_tput_mbps=tc,
                            l4s_qdelay_ms=float(r["l4s_qdelay_ms"]) * (1 + 0.05 * t),
                            classic_qdelay_ms=float(r["legacy_qdelay_ms"]) * (1 + 0.05 * t),
                        )
                    )  # fmt: skip
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("report") / "report.html"
    return render_report(_runs(), out, title="report test", figures={})


def test_comparison_flags_exactly_the_cell_out_of_tolerance():
    ref = reference_comparison(cells(_runs()))
    assert ref is not None and len(ref) == len(AQMS) * len(BUFS) * len(ECN)
    off = ref[ref["share_diff"].abs() > VERDICT_SHARE_TOL]
    assert list(zip(off["aqm"], off["n_bdp"], off["rx_classic_ecn"], strict=True)) == [("FIFO", 2.0, "none")]
    assert ref["rel_delay_tb"].notna().all() and ref["rel_delay_sim"].notna().all()


def test_compare_figure_has_three_sides_in_two_sizes_and_log_delays(tmp_path):
    c = cells(_runs())
    from l4sim.studies.report import reference_cells

    tb = reference_cells()
    tb = tb[tb["aqm"].isin(AQMS) & tb["n_bdp"].isin(BUFS)]
    full = plots.compare_figure(c, tb, "qdelay", trials=(2, 10))
    heat = [ax for ax in full.axes if ax.images]
    assert len(heat) == 3 * len(ECN)  # sim | testbed | difference, per classic-ECN case
    assert any("2 trials/cell" in ax.get_title() for ax in heat)
    assert "simulation (2) vs testbed (10 trials per cell)" in full._suptitle.get_text()
    assert any("10 trials/cell" in ax.get_title() for ax in heat)
    norm = heat[0].images[0].norm
    assert isinstance(norm, plots.matplotlib.colors.LogNorm)  # 1 ms and 100 ms differ
    assert abs(norm(1.0) - norm(100.0)) > 0.5 or norm.vmax < 100
    texts = [t.get_text() for t in heat[0].texts]
    assert all(re.fullmatch(r"[\d.]+\n\([\d.]+\)", t) for t in texts), texts  # L4S (classic)
    col = plots.compare_figure(c, tb, "share", trials=(2, 10), size="column")
    assert col.get_size_inches()[0] == pytest.approx(plots.COLUMN_WIDTH_IN)
    files = plots.save(col, tmp_path / "col", ("pdf",))
    assert files[0].read_bytes()[:4] == b"%PDF"


def _headings(page: str) -> list[str]:
    heads = re.findall(r"<thead>(.*?)</thead>", page)
    return [html.unescape(h) for th in heads for h in re.findall(r"<th>(.*?)</th>", th)]


def test_every_table_heading_is_in_words_and_factors_read_as_written(report, tmp_path):
    """No internal column name (``share_sim``, ``l4s_tput_mbps_mean``) heads a table of the
    reproduce or the validate report; buffer sizes read 0.5, not 0.500."""
    from l4sim.studies import reference, validate

    ref = reference.load_reference(reference.REFERENCE)
    ref = ref[ref["aqm"].isin(AQMS) & ref["n_bdp"].isin(BUFS)]
    cmp = validate.compare(_runs(), ref)
    page = validate.write_html(cmp, validate.summarise(cmp, _runs(), ref), {}, tmp_path / "v.html", md="")
    for p in (report, page):
        text = p.read_text()
        heads = _headings(text)
        assert "L4S share (sim)" in heads and "buffer (x BDP)" in heads, heads
        assert not [h for h in heads if re.search(r"[a-z0-9]_[a-z0-9]", h)], heads
        assert "<td>0.5</td>" in text and "<td>0.500</td>" not in text
    assert "L4S throughput (Mbit/s)" in _headings(report.read_text())  # the cell table


def test_table_numbers_are_fixed_point_with_about_three_digits():
    from l4sim.studies.report import fmt_number

    got = [fmt_number(x) for x in (4.57e-05, -1.3e-16, 0.4541, 4.531, 45.31, 453.1, 12345.6, 3.0, True, None)]
    assert got == ["0.000", "0.000", "0.454", "4.53", "45.3", "453", "12,346", "3", "yes", ""]


@pytest.fixture
def driver():
    d = headless_chromium(1200, 900)
    try:
        yield d
    finally:
        d.quit()


def test_report_in_a_browser_shows_sim_testbed_difference_per_metric(report, driver):
    from selenium.webdriver.common.by import By

    driver.get(report.as_uri())
    for value, heading in COMPARED:
        sec = driver.find_element(By.ID, f"compare-{value}")
        h = sec.find_element(By.TAG_NAME, "h3").text
        assert heading in h and f"{TRIALS} trials per cell" in h and "10 trials per cell" in h, h
        figs = sec.find_elements(By.CSS_SELECTOR, "figure.panel")
        assert [f.get_attribute("id") for f in figs] == [f"{value}-{s}" for s in ("sim", "testbed", "diff")]
        for f in figs:  # each panel's image decoded and drawn
            img = f.find_element(By.TAG_NAME, "img")
            assert driver.execute_script("return arguments[0].naturalWidth", img) > 100
            assert img.get_attribute("alt").startswith(heading)
        tops = {round(f.rect["y"]) for f in figs}
        assert len(tops) == 1, "the three panels are side by side"
        links = [a.text for a in sec.find_elements(By.CSS_SELECTOR, "p.files a")]
        assert links == ["full page (PDF)", "one paper column, 3.5 in (PDF)"], links
        assert (report.parent / "figures" / f"compare_{value}_column.pdf").read_bytes()[:4] == b"%PDF"
    # out-of-tolerance: the FIFO 2 x BDP no-ECN row, and its share difference cell
    rows = driver.find_elements(By.CSS_SELECTOR, "tr.out-of-tolerance")
    assert rows and any(r.text.split()[:3] == ["FIFO", "2", "none"] for r in rows)
    assert driver.find_elements(By.CSS_SELECTOR, "tr.out-of-tolerance td.off")
    assert driver.find_element(By.PARTIAL_LINK_TEXT, "docs/validation.md")
    # no table wider than the page unless in its scrolling wrapper; no column that is only n/a
    width = driver.execute_script("return document.body.clientWidth")
    for t in driver.find_elements(By.TAG_NAME, "table"):
        parent = t.find_element(By.XPATH, "..")
        assert parent.get_attribute("class") == "scroll"
        assert parent.rect["width"] <= width + 1
        n = len(t.find_elements(By.CSS_SELECTOR, "thead th"))
        body = t.find_elements(By.CSS_SELECTOR, "tbody tr")
        for j in range(n):
            col = [r.find_elements(By.CSS_SELECTOR, "td,th")[j].text for r in body]
            assert any(x not in ("", "n/a") for x in col), (t.text[:80], j)
    assert driver.execute_script("return document.documentElement.scrollWidth") <= width + 20
    tables = " ".join(t.get_attribute("textContent") for t in driver.find_elements(By.TAG_NAME, "table"))
    assert not re.search(r"\de[-+]\d", tables), "a number in exponent notation"
    text = driver.find_element(By.TAG_NAME, "body").text
    for repr_ in ("{'", "dict(", "VerdictRules(", "np.float", "nan", "None", "True", "False"):
        assert repr_ not in text, repr_
    out = Path(os.environ.get("L4SIM_ARTIFACTS") or REPO / "out" / "report-test")
    out.mkdir(parents=True, exist_ok=True)
    driver.find_element(By.ID, "compare-share").location_once_scrolled_into_view  # noqa: B018 (scrolls)
    driver.save_screenshot(str(out / "comparison.png"))
