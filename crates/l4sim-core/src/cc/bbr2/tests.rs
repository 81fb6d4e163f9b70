//! Behaviour tests of BBRv2 against tcp_bbr2.c (v2alpha and L4STeam).

use super::*;
use crate::cc::bbr1::testpath::Path;
use crate::cc::bbr1::BW_UNIT;
use crate::cc::{CcSpec, CongestionControl, EcnMode};
use crate::rng::{stream, Rng};
use crate::time::{MS, SEC};

fn bbr2(p: Bbr2Params) -> Bbr2 {
    Bbr2::new(p, Rng::new(11, stream::CC))
}

/// A flow in steady PROBE_BW with a known model: bw 50000 pkt/s (so that cwnd 100 is below
/// the BDP-based target), min_rtt `rtt_us`, cwnd 100.
fn steady(p: Bbr2Params, cycle_idx: u32, rtt_us: u32) -> (Bbr2, Sock) {
    steady_bw(p, cycle_idx, rtt_us, 50_000)
}

fn steady_bw(p: Bbr2Params, cycle_idx: u32, rtt_us: u32, pps: u64) -> (Bbr2, Sock) {
    let mut b = bbr2(p);
    let mut sk = Sock::new(1448);
    sk.now = 10 * SEC;
    sk.delivered = 10_000;
    sk.delivered_ce = 0;
    b.init(&mut sk);
    sk.snd_cwnd = 100;
    sk.packets_out = 100;
    b.mode = BbrMode::ProbeBw;
    b.full_bw_reached = true;
    b.cycle_idx = cycle_idx;
    b.cycle_mstamp = sk.now;
    b.probe_wait_us = 10_000_000;
    b.min_rtt_us = rtt_us;
    b.min_rtt_stamp = b.clock.at(sk.now);
    b.probe_rtt_min_us = rtt_us;
    b.probe_rtt_min_stamp = b.min_rtt_stamp;
    b.max_bw = [pps * BW_UNIT / 1_000_000; 2];
    sk.pacing_rate = pps * 1448;
    b.loss_round_delivered = 0;
    b.next_rtt_delivered = 0;
    b.alpha_last_delivered = sk.delivered;
    b.alpha_last_delivered_ce = sk.delivered_ce;
    (b, sk)
}

/// One ACK ending a round: `n` delivered (`ce` of them CE-marked), `lost` lost out of
/// `tx_in_flight`.
fn ack_round(b: &mut Bbr2, sk: &mut Sock, n: u64, ce: u64, lost: u64, tx_in_flight: u32) {
    let prior = sk.delivered;
    sk.delivered += n;
    sk.delivered_ce += ce;
    sk.lost += lost;
    sk.now += 20 * MS;
    sk.delivered_mstamp = sk.now;
    let rs = RateSample {
        prior_delivered: prior,
        delivered: n as i64,
        delivered_ce: ce as i64,
        interval: 20 * MS as i64,
        rtt: b.min_rtt_us as i64 * 1000,
        acked_sacked: n as u32,
        losses: lost as u32,
        lost,
        tx_in_flight,
        prior_in_flight: sk.packets_out,
        ece_delta: ce as u32,
        ..Default::default()
    };
    // The core marks each lost segment first (`skb_marked_lost`; no send-time sample here,
    // so only the loss-round bookkeeping runs), then calls `cong_control`.
    for _ in 0..lost {
        b.skb_marked_lost(sk, None);
    }
    b.in_ack_event(sk, ce > 0);
    b.cong_control(sk, &rs);
}

#[test]
fn a_lost_segment_sent_while_probing_cuts_inflight_hi_where_the_loss_rate_crossed_2pct() {
    let (mut b, sk) = steady(Bbr2Params::default(), BW_PROBE_UP, 20_000);
    b.bw_probe_samples = true;
    let floor = ((b.target_inflight(&sk) as u64 * (256 - 76)) >> 8) as u32;
    let lost = |tx_in_flight, lost| RateSample {
        tx_in_flight,
        lost,
        ..Default::default()
    };
    // 3 of 201: not above loss_thresh (5/256 of 201 = 3), nothing happens.
    b.skb_marked_lost(&sk, Some(&lost(201, 3)));
    assert_eq!(b.inflight_hi(), UNSET32);
    assert!(b.loss_in_round);
    // 4 of 201: too high. Before this segment 3 of 200 were lost, within the budget of
    // ceil(200 * 5 / 256) = 4; the loss rate crossed the threshold one segment into it:
    // inflight_hi = 200 + (1 << 8) / (256 - 5) = 201 (above the 0.7 x target floor).
    b.skb_marked_lost(&sk, Some(&lost(201, 4)));
    assert!(floor < 201, "the floor {floor} would hide the prefix");
    assert_eq!(b.inflight_hi(), 201);
    assert_eq!(b.cycle_idx(), BW_PROBE_DOWN);
    // Not probing: only the bookkeeping.
    let (mut b, sk) = steady(Bbr2Params::default(), BW_PROBE_CRUISE, 20_000);
    b.skb_marked_lost(&sk, Some(&lost(201, 50)));
    assert_eq!(b.inflight_hi(), UNSET32);
}

#[test]
fn loss_above_2pct_while_probing_cuts_inflight_hi_to_max_of_tx_inflight_and_07_target() {
    let (mut b, mut sk) = steady(Bbr2Params::default(), BW_PROBE_UP, 20_000);
    b.bw_probe_samples = true;
    let target = b.target_inflight(&sk);
    // 3 lost of 60 in flight = 5% > 2%: inflight_hi = max(60, 0.7 * target).
    ack_round(&mut b, &mut sk, 20, 0, 3, 60);
    let floor = ((target as u64 * (256 - 76)) >> 8) as u32;
    assert_eq!(b.inflight_hi(), 60.max(floor));
    assert_eq!(b.cycle_idx(), BW_PROBE_DOWN, "probe stops: go DOWN");
    assert!(b.prev_probe_too_high);

    // With a small tx_in_flight, the 0.7 * target floor wins.
    let (mut b, mut sk) = steady(Bbr2Params::default(), BW_PROBE_UP, 20_000);
    b.bw_probe_samples = true;
    let target = b.target_inflight(&sk);
    ack_round(&mut b, &mut sk, 20, 0, 2, 10);
    assert_eq!(b.inflight_hi(), ((target as u64 * 180) >> 8) as u32);
    assert!(b.inflight_hi() > 10);
}

#[test]
fn loss_below_2pct_does_not_cut_inflight_hi() {
    let (mut b, mut sk) = steady(Bbr2Params::default(), BW_PROBE_UP, 20_000);
    b.bw_probe_samples = true;
    ack_round(&mut b, &mut sk, 20, 0, 1, 100); // 1% loss
    assert_eq!(b.inflight_hi(), UNSET32);
    assert_eq!(b.cycle_idx(), BW_PROBE_UP);
}

#[test]
fn loss_outside_probing_cuts_inflight_lo_by_beta_once_per_round() {
    let (mut b, mut sk) = steady(Bbr2Params::default(), BW_PROBE_CRUISE, 20_000);
    // The first loss starts a loss round; the response comes at its end.
    ack_round(&mut b, &mut sk, 20, 0, 1, 100);
    assert_eq!(b.inflight_lo(), UNSET32);
    let cwnd = sk.snd_cwnd;
    ack_round(&mut b, &mut sk, 20, 0, 0, 100);
    // inflight_lo = max(inflight_latest, 0.7 * cwnd) (0.7 is 180/256 in fixed point).
    assert_eq!(b.inflight_lo(), cwnd * 180 / 256);
    assert!(sk.snd_cwnd <= b.inflight_lo());
    // No further cut in a loss-free round.
    let lo = b.inflight_lo();
    ack_round(&mut b, &mut sk, 20, 0, 0, 100);
    assert_eq!(b.inflight_lo(), lo);
}

fn ecn_params(enable: bool) -> Bbr2Params {
    Bbr2Params {
        ecn_enable: Some(enable),
        ..Default::default()
    }
}

#[test]
fn ecn_enabled_cuts_inflight_lo_by_alpha_times_ecn_factor_on_a_ce_round() {
    let (mut b, mut sk) = steady(ecn_params(true), BW_PROBE_CRUISE, 2_000);
    ack_round(&mut b, &mut sk, 20, 20, 0, 100);
    assert!(b.ecn_eligible());
    assert_eq!(
        b.ecn_alpha(),
        256,
        "alpha starts at 1 and a full-CE round keeps it"
    );
    // inflight_lo = cwnd * (1 - 1.0/3) in 1/256 units: 100 * (256 - 85) / 256.
    assert_eq!(b.inflight_lo(), 100 * 171 / 256);
    assert_eq!(sk.snd_cwnd, 100 * 171 / 256);
    // A second CE round with alpha decaying toward the CE fraction (half marked).
    let lo = b.inflight_lo();
    ack_round(&mut b, &mut sk, 20, 10, 0, 100);
    let alpha = b.ecn_alpha();
    assert_eq!(alpha, ((240 * 256) >> 8) + ((16 * 128) >> 8));
    let cut = 256 - ((alpha * 85) >> 8);
    assert_eq!(b.inflight_lo(), ((lo as u64 * cut as u64) >> 8) as u32);
}

#[test]
fn ecn_alpha_follows_the_ce_fraction_with_gain_one_sixteenth() {
    let (mut b, mut sk) = steady(ecn_params(true), BW_PROBE_CRUISE, 2_000);
    for _ in 0..200 {
        ack_round(&mut b, &mut sk, 20, 0, 0, 100);
    }
    assert!(b.ecn_alpha() < 5, "{}", b.ecn_alpha());
}

#[test]
fn ce_is_ignored_when_ecn_is_disabled_or_min_rtt_exceeds_ecn_max_rtt() {
    // v2alpha default: ecn_enable = false.
    let (mut b, mut sk) = steady(Bbr2Params::default(), BW_PROBE_CRUISE, 2_000);
    ack_round(&mut b, &mut sk, 20, 20, 0, 100);
    assert!(!b.ecn_eligible());
    assert_eq!(b.inflight_lo(), UNSET32);
    assert_eq!(sk.snd_cwnd, 120, "cwnd grows by the 20 acked");
    // Enabled, but min_rtt 10 ms > ecn_max_rtt_us 5 ms.
    let (mut b, mut sk) = steady(ecn_params(true), BW_PROBE_CRUISE, 10_000);
    ack_round(&mut b, &mut sk, 20, 20, 0, 100);
    assert!(!b.ecn_eligible());
    assert_eq!(b.inflight_lo(), UNSET32);
    // The L4S variant uses ECN at any RTT (ecn_max_rtt_us = 0).
    let l4s = Bbr2Params {
        variant: Bbr2Variant::L4s,
        ..Default::default()
    };
    let (mut b, mut sk) = steady(l4s, BW_PROBE_CRUISE, 10_000);
    ack_round(&mut b, &mut sk, 20, 20, 0, 100);
    assert!(b.ecn_eligible());
    assert_eq!(b.inflight_lo(), 100 * 171 / 256);
}

#[test]
fn high_ce_fraction_while_probing_cuts_inflight_hi_like_loss() {
    let (mut b, mut sk) = steady(ecn_params(true), BW_PROBE_UP, 2_000);
    b.bw_probe_samples = true;
    b.ecn_eligible = true;
    ack_round(&mut b, &mut sk, 20, 10, 0, 80); // 50% CE >= ecn_thresh
    assert!(b.inflight_hi() != UNSET32);
    assert_eq!(b.cycle_idx(), BW_PROBE_DOWN);
}

#[test]
fn l4s_variant_sets_ect1_only_with_accecn() {
    let l4s = Bbr2Params {
        variant: Bbr2Variant::L4s,
        ..Default::default()
    };
    for (mode, ect1) in [
        (EcnMode::None, false),
        (EcnMode::Rfc3168, false),
        (EcnMode::AccEcn, true),
    ] {
        let mut b = bbr2(l4s.clone());
        let mut sk = Sock::new(1448);
        sk.ecn_mode = mode;
        b.init(&mut sk);
        assert_eq!(sk.ect1, ect1, "{mode:?}");
        assert!(sk.pacing_needed);
    }
    let mut b = bbr2(Bbr2Params::default());
    let mut sk = Sock::new(1448);
    sk.ecn_mode = EcnMode::AccEcn;
    b.init(&mut sk);
    assert!(!sk.ect1, "v2alpha never uses ECT(1)");
}

#[test]
fn l4s_variant_uses_down_gain_091_and_cwnd_gain_225_in_up() {
    let l4s = Bbr2Params {
        variant: Bbr2Variant::L4s,
        ..Default::default()
    };
    let (mut b, _) = steady(l4s, BW_PROBE_DOWN, 2_000);
    b.update_gains();
    assert_eq!(b.pacing_gain, 256 * 91 / 100);
    b.cycle_idx = BW_PROBE_UP;
    b.update_gains();
    assert_eq!(b.cwnd_gain, 512 + 64);
    let (mut b, _) = steady(Bbr2Params::default(), BW_PROBE_DOWN, 2_000);
    b.update_gains();
    assert_eq!(b.pacing_gain, 192);
    b.cycle_idx = BW_PROBE_UP;
    b.update_gains();
    assert_eq!(b.cwnd_gain, 512);
}

#[test]
fn probe_bw_cycles_down_cruise_refill_up_on_a_path() {
    let mut p = Path::new(12.0, 20);
    let mut b = bbr2(Bbr2Params::default());
    b.init(&mut p.sk);
    let mut seq: Vec<(u64, u32)> = Vec::new();
    p.run(&mut b, 4 * SEC, &mut |sk, cc| {
        let mut o = Vec::new();
        cc.observe(&mut o);
        if o[0].1 as u32 != BbrMode::ProbeBw as u32 {
            return;
        }
        let idx = o[1].1 as u32;
        if seq.last().is_none_or(|l| l.1 != idx) {
            seq.push((sk.now, idx));
        }
    });
    assert_eq!(seq[0].1, BW_PROBE_DOWN, "DRAIN leads to DOWN");
    assert!(seq.len() >= 8, "{seq:?}");
    for w in seq.windows(2) {
        let next = match w[0].1 {
            BW_PROBE_DOWN => BW_PROBE_CRUISE,
            BW_PROBE_CRUISE => BW_PROBE_REFILL,
            BW_PROBE_REFILL => BW_PROBE_UP,
            _ => BW_PROBE_DOWN,
        };
        assert_eq!(w[1].1, next, "{seq:?}");
        if w[0].1 == BW_PROBE_REFILL {
            // REFILL lasts one round.
            let d = w[1].0 - w[0].0;
            assert!((19 * MS..30 * MS).contains(&d), "refill {d}");
        }
    }
    // Reno-coexistence timing: a probe every ~BDP (about 20-30) rounds, well below 2 s.
    let downs: Vec<u64> = seq
        .iter()
        .filter(|s| s.1 == BW_PROBE_REFILL)
        .map(|s| s.0)
        .collect();
    for w in downs.windows(2) {
        let gap = w[1] - w[0];
        assert!(gap > 300 * MS && gap < 1500 * MS, "gap {gap}");
    }
}

#[test]
fn probe_rtt_holds_cwnd_at_half_bdp_when_the_5s_filter_expires() {
    let (mut b, mut sk) = steady_bw(Bbr2Params::default(), BW_PROBE_CRUISE, 20_000, 1000);
    b.inflight_hi = 200;
    // RTT samples above the 5 s-old minimum do not refresh probe_rtt_min. (The stamps are
    // jiffies: the filter has expired once more than 1250 of them have passed.)
    b.probe_rtt_min_stamp = b.clock.at(sk.now - 5 * SEC - 4 * MS);
    b.probe_rtt_min_us = 10_000;
    sk.packets_out = 100;
    ack_round(&mut b, &mut sk, 20, 0, 0, 100);
    assert_eq!(b.mode(), BbrMode::ProbeRtt);
    // bdp = 1000 pkt/s * 20 ms = 20 pkts; half of it is 10, rounded up to 11 because the
    // bw sample is rounded up (DIV_ROUND_UP) and the BDP too, as in Linux.
    assert_eq!(b.probe_rtt_cwnd(), 11);
    assert_eq!(sk.snd_cwnd, 11);
}

#[test]
fn spec_bbr2_parses_variant_and_params_and_rejects_unknown_keys() {
    let s: CcSpec =
        serde_json::from_str(r#"{"name":"bbr2","variant":"l4s","ecn_enable":true}"#).unwrap();
    match &s {
        CcSpec::Bbr2(p) => {
            assert_eq!(p.variant, Bbr2Variant::L4s);
            assert_eq!(p.ecn_enable, Some(true));
        }
        _ => panic!(),
    }
    let s: CcSpec = serde_json::from_str(r#"{"name":"bbr2"}"#).unwrap();
    assert_eq!(s, CcSpec::Bbr2(Bbr2Params::default()));
    let e = serde_json::from_str::<CcSpec>(r#"{"name":"bbr2","ecn_enabled":true}"#)
        .unwrap_err()
        .to_string();
    assert!(e.contains("ecn_enabled"), "{e}");
}

#[test]
fn receiver_echo_is_dctcp_style_only_with_ecn_enabled() {
    assert!(!bbr2(Bbr2Params::default()).flags().dctcp_echo);
    assert!(bbr2(ecn_params(true)).flags().dctcp_echo);
}

// ---- BBR v3 (the same engine with the v3 switches, see bbr3.rs) ----

use crate::cc::bbr3::{Bbr3, Bbr3Params};

fn v3(ecn_low: bool) -> Bbr2Params {
    Bbr3Params {
        ecn_low,
        ..Default::default()
    }
    .engine()
}

/// `steady` with the ECN mode negotiated before `init`.
fn steady_ecn(p: Bbr2Params, cycle_idx: u32, rtt_us: u32, mode: EcnMode) -> (Bbr2, Sock) {
    let (mut b, mut sk) = steady(p, cycle_idx, rtt_us);
    sk.ecn_mode = mode;
    let keep = (b.clone(), sk.clone());
    b.init(&mut sk);
    // init resets the model; restore the steady state but keep the ECN decision.
    let ecn = b.r.ecn_enable;
    let (mut b, mut sk2) = keep;
    b.r.ecn_enable = ecn;
    sk2.ecn_mode = mode;
    (b, sk2)
}

#[test]
fn v3_uses_startup_gain_277_cwnd_gain_2_and_225_in_up_091_in_down() {
    let mut b = bbr2(v3(false));
    let mut sk = Sock::new(1448);
    b.init(&mut sk);
    b.update_gains();
    assert_eq!((b.pacing_gain, b.cwnd_gain), (710, 512));
    b.mode = BbrMode::ProbeBw;
    b.cycle_idx = BW_PROBE_UP;
    b.update_gains();
    assert_eq!((b.pacing_gain, b.cwnd_gain), (320, 576));
    b.cycle_idx = BW_PROBE_DOWN;
    b.update_gains();
    assert_eq!((b.pacing_gain, b.cwnd_gain), (232, 512));
    assert_eq!(
        Bbr3::new(Bbr3Params::default(), Rng::new(1, 0)).name(),
        "bbr3"
    );
}

#[test]
fn v3_uses_ce_only_with_negotiated_ecn_on_an_ecn_low_route() {
    // Default: no ecn_low -> CE ignored even with AccECN.
    let (mut b, mut sk) = steady_ecn(v3(false), BW_PROBE_CRUISE, 2_000, EcnMode::AccEcn);
    ack_round(&mut b, &mut sk, 20, 20, 0, 100);
    assert!(!b.ecn_eligible());
    assert_eq!(b.inflight_lo(), UNSET32);
    // ecn_low but ECN not negotiated -> ignored.
    let (mut b, mut sk) = steady_ecn(v3(true), BW_PROBE_CRUISE, 2_000, EcnMode::None);
    ack_round(&mut b, &mut sk, 20, 20, 0, 100);
    assert!(!b.ecn_eligible());
    // ecn_low and ECN negotiated -> eligible at the round start, so this round's CE counts
    // and cuts inflight_lo by alpha/3.
    let (mut b, mut sk) = steady_ecn(v3(true), BW_PROBE_CRUISE, 2_000, EcnMode::AccEcn);
    ack_round(&mut b, &mut sk, 20, 20, 0, 100);
    assert!(b.ecn_eligible());
    assert_eq!(b.inflight_lo(), 100 * 171 / 256);
    // ECN seen in this cycle without loss: ecn_reprobe_gain (0.5) starts a new probe (REFILL)
    // from CRUISE, which resets the lower bounds.
    ack_round(&mut b, &mut sk, 20, 0, 0, 100);
    assert_eq!(b.cycle_idx(), BW_PROBE_REFILL);
    assert_eq!(b.inflight_lo(), UNSET32);
    // min_rtt above ecn_max_rtt_us (5 ms) -> not eligible.
    let (mut b, mut sk) = steady_ecn(v3(true), BW_PROBE_CRUISE, 10_000, EcnMode::AccEcn);
    ack_round(&mut b, &mut sk, 20, 20, 0, 100);
    assert!(!b.ecn_eligible());
}

#[test]
fn v3_ce_fraction_must_exceed_half_to_stop_a_probe() {
    let (mut b, mut sk) = steady_ecn(v3(true), BW_PROBE_UP, 2_000, EcnMode::AccEcn);
    b.ecn_eligible = true;
    b.bw_probe_samples = true;
    ack_round(&mut b, &mut sk, 20, 10, 0, 80); // exactly 50%: not too high in v3
    assert_eq!(b.inflight_hi(), UNSET32);
    b.bw_probe_samples = true;
    ack_round(&mut b, &mut sk, 20, 11, 0, 80); // 55%
    assert_ne!(b.inflight_hi(), UNSET32);
    assert_eq!(b.cycle_idx(), BW_PROBE_DOWN);
}

/// STARTUP in Recovery: `k` ACKs each marking one loss within a loss round, then the ACK that
/// ends the round with 5% loss of tx_in_flight. Returns whether STARTUP ended.
fn startup_loss_exit(p: Bbr2Params, k: u32) -> bool {
    let mut b = bbr2(p);
    let mut sk = Sock::new(1448);
    sk.now = SEC;
    sk.delivered = 1000;
    b.init(&mut sk);
    b.min_rtt_us = 20_000;
    b.max_bw = [1000 * BW_UNIT / 1_000_000; 2];
    sk.ca_state = CaState::Recovery;
    sk.packets_out = 100;
    let start = sk.delivered;
    for _ in 0..k {
        sk.delivered += 1;
        sk.now += MS;
        let rs = RateSample {
            prior_delivered: start - 50,
            delivered: 50,
            interval: 20 * MS as i64,
            acked_sacked: 1,
            losses: 1,
            rtt: 20 * MS as i64,
            ..Default::default()
        };
        b.cong_control(&mut sk, &rs);
    }
    sk.delivered += 1;
    sk.now += MS;
    let rs = RateSample {
        prior_delivered: start + k as u64,
        delivered: 50,
        interval: 20 * MS as i64,
        acked_sacked: 1,
        lost: 5,
        tx_in_flight: 100,
        rtt: 20 * MS as i64,
        ..Default::default()
    };
    b.cong_control(&mut sk, &rs);
    b.full_bw_reached() && b.inflight_hi() != UNSET32
}

#[test]
fn startup_exits_on_loss_after_full_loss_cnt_events_8_in_v2_6_in_v3() {
    assert!(!startup_loss_exit(Bbr2Params::default(), 7));
    assert!(startup_loss_exit(Bbr2Params::default(), 8));
    assert!(!startup_loss_exit(v3(false), 5));
    assert!(startup_loss_exit(v3(false), 6));
}

#[test]
fn v3_probe_bw_cycles_and_ends_probe_up_on_a_bw_plateau() {
    let mut p = Path::new(12.0, 20);
    let mut b = Bbr3::new(Bbr3Params::default(), Rng::new(3, stream::CC));
    b.init(&mut p.sk);
    let mut seq: Vec<(u64, u32)> = Vec::new();
    p.run(&mut b, 4 * SEC, &mut |sk, cc| {
        let mut o = Vec::new();
        cc.observe(&mut o);
        if o[0].1 as u32 != BbrMode::ProbeBw as u32 {
            return;
        }
        let idx = o[1].1 as u32;
        if seq.last().is_none_or(|l| l.1 != idx) {
            seq.push((sk.now, idx));
        }
    });
    assert_eq!(seq[0].1, BW_PROBE_DOWN);
    assert!(seq.len() >= 8, "{seq:?}");
    for w in seq.windows(2) {
        let next = match w[0].1 {
            BW_PROBE_DOWN => BW_PROBE_CRUISE,
            BW_PROBE_CRUISE => BW_PROBE_REFILL,
            BW_PROBE_REFILL => BW_PROBE_UP,
            _ => BW_PROBE_DOWN,
        };
        assert_eq!(w[1].1, next, "{seq:?}");
        if w[0].1 == BW_PROBE_UP {
            // The plateau detector needs 3 rounds without 25% growth.
            let d = w[1].0 - w[0].0;
            assert!((40 * MS..200 * MS).contains(&d), "UP lasted {d}");
        }
    }
}

#[test]
fn spec_bbr3_gets_defaults_and_rejects_unknown_keys() {
    let s: CcSpec = serde_json::from_str(r#"{"name":"bbr3"}"#).unwrap();
    assert_eq!(s, CcSpec::Bbr3(Bbr3Params::default()));
    let s: CcSpec = serde_json::from_str(r#"{"name":"bbr3","ecn_low":true}"#).unwrap();
    assert!(matches!(s, CcSpec::Bbr3(ref p) if p.ecn_low));
    let e = serde_json::from_str::<CcSpec>(r#"{"name":"bbr3","variant":"l4s"}"#)
        .unwrap_err()
        .to_string();
    assert!(e.contains("variant"), "{e}");
}

/// Utilization and mean RTT over [2 s, 6 s] on a 12 Mbit/s, 20 ms path marking CE above a
/// 1 ms queue delay.
fn ce_path_run(cc: &mut dyn CongestionControl, ecn: EcnMode) -> (f64, f64) {
    let mut p = Path::new(12.0, 20);
    p.ce_thresh = Some(MS);
    p.sk.ecn_mode = ecn;
    cc.init(&mut p.sk);
    let mut d0 = 0;
    let mut rtt_sum = 0u64;
    let mut n = 0u64;
    let pps = p.pps();
    p.run(cc, 6 * SEC, &mut |sk, _| {
        if sk.now < 2 * SEC {
            d0 = sk.delivered;
        } else {
            rtt_sum += sk.srtt;
            n += 1;
        }
    });
    let util = (p.sk.delivered - d0) as f64 / (4.0 * pps);
    (util, rtt_sum as f64 / n as f64 / 1e6)
}

#[test]
fn all_variants_on_a_ce_marking_path_keep_utilization_high_and_queue_short() {
    let mut b = bbr2(Bbr2Params {
        variant: Bbr2Variant::L4s,
        ..Default::default()
    });
    let (util, rtt_ms) = ce_path_run(&mut b, EcnMode::AccEcn);
    assert!(util > 0.85, "util {util}");
    assert!(rtt_ms < 26.0, "srtt {rtt_ms}");
    let mut b = bbr2(Bbr2Params::default());
    let (util, rtt_ms) = ce_path_run(&mut b, EcnMode::AccEcn);
    assert!(
        util > 0.85 && rtt_ms < 30.0,
        "v2alpha: util {util} srtt {rtt_ms}"
    );
    let mut b = Bbr3::new(Bbr3Params::default(), Rng::new(5, stream::CC));
    let (util, rtt_ms) = ce_path_run(&mut b, EcnMode::AccEcn);
    assert!(
        util > 0.85 && rtt_ms < 30.0,
        "v3: util {util} srtt {rtt_ms}"
    );
    let mut b = Bbr3::new(
        Bbr3Params {
            ecn_low: true,
            ecn_max_rtt_us: 0,
            ..Default::default()
        },
        Rng::new(5, stream::CC),
    );
    let (util, rtt_ms) = ce_path_run(&mut b, EcnMode::AccEcn);
    assert!(
        util > 0.85 && rtt_ms < 30.0,
        "v3 ecn_low: util {util} srtt {rtt_ms}"
    );
}

#[test]
fn rto_outside_probing_seeds_inflight_lo_with_the_pre_rto_cwnd() {
    let (mut b, mut sk) = steady(Bbr2Params::default(), BW_PROBE_CRUISE, 20_000);
    b.ssthresh(&mut sk); // prior_cwnd = 100
    b.skb_marked_lost(&sk, None); // tcp_enter_loss marks the flight lost first
    sk.snd_cwnd = 1; // the core's RTO response
    b.cwnd_event(&mut sk, CaEvent::Loss);
    b.set_state(&mut sk, CaState::Loss);
    assert_eq!(b.inflight_lo(), 100);
    assert!(b.loss_in_round, "RTO marks the flight lost");
    // Leaving Loss restores the prior cwnd.
    b.set_state(&mut sk, CaState::Open);
    assert_eq!(sk.snd_cwnd, 100);
}

#[test]
fn probe_wait_is_2_to_3_s_and_reno_rounds_start_at_0_or_1() {
    let mut b = bbr2(Bbr2Params::default());
    for _ in 0..200 {
        b.pick_probe_wait();
        assert!((2_000_000..3_000_000).contains(&b.probe_wait_us));
        assert!(b.rounds_since_probe < 2);
    }
}

#[test]
fn reno_coexistence_probes_after_min_63_bdp_rounds() {
    // BDP-based: 1000 pkt/s x 20 ms = 20 pkts (+ quantization floor) of rounds.
    let (mut b, sk) = steady_bw(Bbr2Params::default(), BW_PROBE_CRUISE, 20_000, 1000);
    let rounds = b.target_inflight(&sk);
    assert!((20..=22).contains(&rounds), "{rounds}");
    b.rounds_since_probe = rounds - 1;
    assert!(!b.is_reno_coexistence_probe_time(&sk));
    b.rounds_since_probe = rounds;
    assert!(b.is_reno_coexistence_probe_time(&sk));
    // Large BDP: capped at 63 rounds.
    let (mut b, sk) = steady_bw(Bbr2Params::default(), BW_PROBE_CRUISE, 20_000, 50_000);
    b.rounds_since_probe = 62;
    assert!(!b.is_reno_coexistence_probe_time(&sk));
    b.rounds_since_probe = 63;
    assert!(b.is_reno_coexistence_probe_time(&sk));
}

#[test]
fn probe_up_doubles_inflight_hi_growth_each_round() {
    let (mut b, mut sk) = steady(Bbr2Params::default(), BW_PROBE_UP, 20_000);
    sk.snd_cwnd = 64;
    b.bw_probe_up_rounds = 0;
    b.raise_inflight_hi_slope(&sk);
    assert_eq!(b.bw_probe_up_cnt, 64); // +1 per cwnd acked in the first round
    b.raise_inflight_hi_slope(&sk);
    assert_eq!(b.bw_probe_up_cnt, 32);
    b.raise_inflight_hi_slope(&sk);
    assert_eq!(b.bw_probe_up_cnt, 16);
}

#[test]
fn down_holds_until_inflight_leaves_15pct_headroom_below_inflight_hi() {
    let (mut b, sk) = steady(Bbr2Params::default(), BW_PROBE_DOWN, 20_000);
    b.inflight_hi = 100;
    let bw = b.max_bw();
    // headroom = 15% of 100 (38/256 -> 14 segments): cruise only at <= 86.
    assert!(!b.check_time_to_cruise(&sk, 87, bw));
    assert!(b.check_time_to_cruise(&sk, 86, bw));
}

/// Utilization, loss rate and the final flow over [2 s, 8 s] on a 12 Mbit/s, 20 ms path with
/// a tail-drop buffer of `buf` packets.
fn lossy_path_run(cc: &mut dyn CongestionControl, buf: u32) -> (f64, f64, Path) {
    let mut p = Path::new(12.0, 20);
    p.buffer = Some(buf);
    cc.init(&mut p.sk);
    let mut d0 = 0;
    let mut l0 = 0;
    let pps = p.pps();
    p.run(cc, 8 * SEC, &mut |sk, _| {
        if sk.now < 2 * SEC {
            d0 = sk.delivered;
            l0 = sk.lost;
        }
    });
    let util = (p.sk.delivered - d0) as f64 / (6.0 * pps);
    let loss = (p.sk.lost - l0) as f64 / (p.sk.delivered - d0 + p.sk.lost - l0) as f64;
    (util, loss, p)
}

#[test]
fn v2_and_v3_on_a_shallow_tail_drop_buffer_learn_inflight_hi_and_keep_loss_low() {
    let mut b = bbr2(Bbr2Params::default());
    // A 3-packet buffer: probing UP to 1.25 BDP overflows it.
    let (util, loss, _) = lossy_path_run(&mut b, 3);
    assert!(b.inflight_hi() != UNSET32, "loss set an upper bound");
    assert!(util > 0.8, "util {util}");
    assert!(loss < 0.02, "loss {loss}");
    let mut b = Bbr3::new(Bbr3Params::default(), Rng::new(5, stream::CC));
    let (util, loss, _) = lossy_path_run(&mut b, 3);
    assert!(b.0.inflight_hi() != UNSET32, "loss set an upper bound");
    assert!(util > 0.8, "v3 util {util}");
    assert!(loss < 0.02, "v3 loss {loss}");
}

#[test]
fn v1_on_a_shallow_tail_drop_buffer_keeps_the_link_busy_despite_loss() {
    let mut b = crate::cc::bbr1::Bbr1::new(Default::default(), Rng::new(5, stream::CC));
    let (util, loss, _) = lossy_path_run(&mut b, 3);
    assert!(util > 0.9, "util {util}");
    // BBRv1 does not react to loss below the policer threshold: it keeps probing at 1.25x
    // every 8 phases and loses more than v2 would.
    assert!(loss > 0.005, "loss {loss}");
}
