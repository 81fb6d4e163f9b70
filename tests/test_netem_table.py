"""netem delay tables from samples, as iproute2's maketable builds them."""

from statistics import NormalDist

import numpy as np
import pytest

import l4sim
from l4sim.netem import delay_from_samples, table_from_samples


def test_two_samples_give_maketables_entries_in_c_arithmetic():
    # [0, 1]: mu 0.5, sigma 0.7071 (n-1). Grid points left of -0.7071 sigma have cdf 0, the last
    # of them fills entry 0 (-5793); those up to +0.7071 have cdf 1/2 and fill entry 2048 (5792);
    # cdf 1 falls past the table. The rest is interpolated with C's truncating division,
    # towards 32767 past entry 2048.
    mu, sigma, t = table_from_samples([0.0, 1.0])
    assert mu == 0.5 and sigma == pytest.approx(0.5**0.5)
    assert (t[0], t[2048]) == (-5793, 5792)
    assert t[1024] == -5793 + (1024 * 11585) // 2048
    assert t[4095] == 5792 + (2047 * 26975) // 2048
    assert len(t) == 4096 and t == sorted(t)


def test_normal_samples_give_the_normal_quantiles():
    x = np.random.default_rng(1).normal(20.0, 3.0, 200_000)
    mu, sigma, t = table_from_samples(x)
    assert mu == pytest.approx(20.0, abs=0.05) and sigma == pytest.approx(3.0, rel=0.01)
    k = np.arange(256, 3840, 64)  # the body of the table (the tails rest on few samples)
    want = np.array([NormalDist().inv_cdf(q) for q in k / 4096]) * 8192
    assert np.max(np.abs(np.asarray(t)[k] - want)) < 0.03 * 8192


def test_the_parameters_make_a_valid_netem():
    x = np.random.default_rng(2).gamma(2.0, 2.0, 20_000) + 5.0
    netem = {"kind": "netem", "limit": 10_000, **delay_from_samples(x)}
    sc = l4sim.Scenario.from_dict(
        {
            "duration": 2,
            "seed": 1,
            "topology": {"kind": "dumbbell", "base_rtt": 10, "bottleneck": {"rate": 100, "qdisc": netem}},
            "flows": [{"name": "a", "cc": "cubic"}],
        }
    )
    r = l4sim.run(sc)
    # The bottleneck netem adds about the samples' mean (9 ms) to the 10 ms base RTT.
    assert 10 + 0.8 * x.mean() < r.flows.loc[0, "mean_srtt_ms"] < 10 + 3 * x.mean()


def test_samples_without_spread_are_refused():
    with pytest.raises(ValueError, match="samples"):
        table_from_samples([3.0, 3.0, 3.0])
    with pytest.raises(ValueError, match="samples"):
        table_from_samples([1.0])


def test_measured_slot_gaps_make_a_slot_distribution():
    # Gaps between transmit opportunities, say from a capture: 4 ms +- 1 ms.
    gaps = np.random.default_rng(3).normal(4.0, 1.0, 20_000).clip(0.5)
    d = delay_from_samples(gaps)
    slot = {"slot_delay_ms": d["delay_ms"], "slot_jitter_ms": d["jitter_ms"], "slot_dist_table": d["dist_table"]}
    flows = [{"name": "a", "cc": "cubic"}]

    def run(qdisc):
        sc = l4sim.Scenario.from_dict(
            {
                "duration": 3,
                "seed": 1,
                "flows": flows,
                "topology": {"kind": "dumbbell", "base_rtt": 10, "bottleneck": {"rate": 20, "qdisc": qdisc}},
            }
        )
        return l4sim.run(sc).flows.loc[0]

    plain = run({"kind": "netem", "limit": 1000})
    slotted = run({"kind": "netem", "limit": 1000, "slot_packets": 8, **slot})
    # At most 8 packets per slot, sent at the 20 Mbit/s class rate (4.2 ms for the 8), and the
    # next slot's gap counts from the last of them (get_slot_next at that dequeue): about 8
    # packets per 8.2 ms, 12 Mbit/s, with the 1000-packet queue standing longer.
    assert 10 < slotted["goodput_mbps"] < 14 < 18 < plain["goodput_mbps"]
    assert slotted["mean_srtt_ms"] > plain["mean_srtt_ms"] + 10
