//! End-to-end checks of the traffic sources and of stepping a simulation.

mod common;

use common::{bdp_bytes, dumbbell, run, two_hops};
use l4sim_core::metrics::results::RunResult;
use l4sim_core::net::shaper::{default_burst, Shaper};
use l4sim_core::scenario::Scenario;
use l4sim_core::sim::World;
use l4sim_core::time::{millis, secs, Rate, SEC};
use serde_json::{json, Value};

fn prague() -> Value {
    json!({"name": "prague"})
}

fn l4s_flow(name: &str, source: Value) -> Value {
    json!({"name": name, "cc": prague(), "tcp": {"ecn": "accecn"},
           "receiver": {"cc": prague(), "tcp": {"ecn": "accecn"}}, "source": source})
}

fn web(rate: f64) -> Value {
    json!({"kind": "web", "rate": rate})
}

#[test]
fn web_arrivals_are_poisson_at_their_rate() {
    // 100 requests/s of 10 KB for 20 s on an idle 1 Gbit/s link: every one completes.
    let sc = dumbbell(
        20.5,
        1000.0,
        10.0,
        json!({"kind": "pfifo", "limit": 10000}),
        vec![json!({"name": "w", "cc": {"name": "cubic"},
                    "source": {"kind": "web", "rate": 100, "size": {"dist": "fixed", "bytes": 10000}, "stop": 20}})],
    );
    let r = run(&sc);
    let n = r.connections.len() as f64;
    // Poisson(2000): 4 standard deviations is 179.
    assert!((n - 2000.0).abs() < 179.0, "{n} arrivals");
    // Inter-arrival gaps: exponential, so their coefficient of variation is about 1.
    let mut t: Vec<f64> = r.connections.iter().map(|c| c.start_s).collect();
    t.sort_by(f64::total_cmp);
    let gaps: Vec<f64> = t.windows(2).map(|w| w[1] - w[0]).collect();
    let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
    let sd = (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64).sqrt();
    assert!((mean - 0.01).abs() < 0.001, "mean gap {mean}");
    assert!((sd / mean - 1.0).abs() < 0.1, "cv {}", sd / mean);
    assert!(r
        .connections
        .iter()
        .all(|c| c.size == 10_000 && c.new_connection));
    assert_eq!(
        r.flows[0].bytes_delivered,
        10_000 * r.connections.len() as u64
    );
}

#[test]
fn web_sizes_follow_the_bounded_pareto() {
    let sc = dumbbell(
        30.0,
        1000.0,
        10.0,
        json!({"kind": "pfifo", "limit": 10000}),
        vec![json!({"name": "w", "cc": {"name": "cubic"}, "source": web(200.0)})],
    );
    let r = run(&sc);
    let sizes: Vec<f64> = r.connections.iter().map(|c| c.size as f64).collect();
    assert!(sizes.len() > 5000);
    assert!(sizes.iter().all(|&s| (1000.0..=1e6).contains(&s)));
    // Median of the bounded Pareto (alpha 0.9, 1 KB - 1 MB): 2.16 KB.
    let mut s = sizes.clone();
    s.sort_by(f64::total_cmp);
    let median = s[s.len() / 2];
    assert!((median / 2160.0 - 1.0).abs() < 0.06, "median {median}");
}

#[test]
fn a_fixed_size_web_flow_completes_in_the_hand_computed_time_on_an_idle_link() {
    // 10 full segments fit the initial window. The client's request reaches the server after
    // one one-way delay, the handshake takes one RTT, then the 10 frames are serialised at
    // 100 Mbit/s and the last one takes one more one-way delay: FCT = 2 RTTs + the frames
    // (plus the small packets' serialisation, a few microseconds).
    let bytes = 10 * 1448;
    let sc = dumbbell(
        1.0,
        100.0,
        10.0,
        json!({"kind": "pfifo", "limit": 1000}),
        vec![json!({"name": "w", "cc": {"name": "cubic"},
                    "source": {"kind": "web", "trace": [[0.0, bytes]]}})],
    );
    let r = run(&sc);
    assert_eq!(r.connections.len(), 1);
    let c = &r.connections[0];
    assert!(c.requested && c.new_connection);
    // From the end of the handshake at the server, the frames reach the router back to back
    // (10 Gbit/s NIC) after the 5 ms one-way delay; the HTB class (tc's default burst)
    // releases them at 100 Mbit/s.
    let btl = Rate::mbps(100.0);
    let nic = Rate::mbps(10_000.0);
    let mut htb = Shaper::new(btl, default_burst(btl));
    let t0 = millis(5.0);
    let mut t = 0;
    for i in 0..10 {
        let arrival = t0 + (i + 1) * nic.tx_time(1514);
        t = htb.ready_at(arrival.max(t));
        htb.charge(t, 1514);
    }
    let last_byte = t + nic.tx_time(1514);
    // Without the handshake: from when the client would send its HTTP request (the SYN/ACK
    // leaves), one one-way delay before the server can send.
    let want_no_hs = last_byte as f64 / 1e9 + 0.005;
    assert!(
        (c.fct_no_handshake_s - want_no_hs).abs() < 5e-6,
        "{} vs {want_no_hs}",
        c.fct_no_handshake_s
    );
    // With it: the request's and the SYN's one-way trips before that.
    let want = want_no_hs + 0.010;
    assert!((c.fct_s - want).abs() < 30e-6, "{} vs {want}", c.fct_s);
}

#[test]
fn finished_connections_are_retired_so_state_stays_flat() {
    // The IETF-106 load: 600 new connections per second for 60 s on 120 Mbit/s.
    let mut flows = vec![];
    for (name, ecn) in [("web_ecn", true), ("web_classic", false)] {
        let mut f = if ecn {
            l4s_flow(name, web(300.0))
        } else {
            json!({"name": name, "cc": {"name": "cubic"}, "source": web(300.0)})
        };
        f["source"]["stop"] = json!(59.0);
        flows.push(f);
    }
    let sc = dumbbell(60.0, 120.0, 10.0, json!({"kind": "dualpi2"}), flows);
    let scn = Scenario::from_json(&sc.to_string()).unwrap();
    let mut w = World::new(&scn).unwrap();
    let mut max_slots = 0;
    for i in 1..=60 {
        w.run_until(i * SEC);
        max_slots = max_slots.max(w.conn_slots());
    }
    let r = w.result("ietf", 0.0);
    assert!(r.conservation_ok);
    assert!(r.connections.len() > 34_000, "{}", r.connections.len());
    // Slots are bounded by the connections open at once, not by the 36,000 finished.
    assert!(max_slots < 400, "{max_slots} connection slots");
    assert!(w.live_conns() < 50, "{} live at the end", w.live_conns());
}

#[test]
fn udp_cbr_keeps_its_rate_through_an_idle_link() {
    let sc = dumbbell(
        10.0,
        100.0,
        10.0,
        json!({"kind": "pfifo", "limit": 1000}),
        vec![json!({"name": "u", "source": {"kind": "udp", "rate_mbps": 20, "ecn": "ect1"}})],
    );
    let r = run(&sc);
    let f = &r.flows[0];
    assert_eq!(f.cc, "udp");
    assert!((f.goodput_mbps - 20.0).abs() < 0.05, "{}", f.goodput_mbps);
    assert_eq!(r.qdiscs[0].drops, 0);
    // All of it is in the L4S class.
    let l4s = r
        .classes
        .iter()
        .find(|c| c.kind == "class" && c.name == "l4s")
        .unwrap();
    assert_eq!(l4s.deq_pkts, r.qdiscs[0].deq_pkts);
}

#[test]
fn unresponsive_udp_overload_is_dropped_not_delivered() {
    let sc = dumbbell(
        5.0,
        10.0,
        10.0,
        json!({"kind": "bfifo", "limit": bdp_bytes(2.0, 10.0, 10.0)}),
        vec![json!({"name": "u", "source": {"kind": "udp", "rate_mbps": 20}})],
    );
    let r = run(&sc);
    assert!(r.conservation_ok);
    // The link carries its capacity (payload share of 1242-byte frames), the rest is dropped.
    let cap = 10.0 * 1200.0 / 1242.0;
    assert!(
        (r.flows[0].goodput_mbps - cap).abs() < 0.3,
        "{}",
        r.flows[0].goodput_mbps
    );
    assert!(r.qdiscs[0].drops > 3000);
}

#[test]
fn udp_faster_than_the_sender_nic_is_dropped_at_its_device_queue() {
    // 20 Gbit/s of UDP from a host on a 1 Gbit/s NIC (no qdisc on the host link): the
    // device queue (txqueuelen 1000) drops the excess at the host instead of holding 19
    // Gbit/s of packets per simulated second, and the host link carries its line rate.
    let mut sc = dumbbell(
        0.5,
        1000.0,
        10.0,
        json!({"kind": "pfifo", "limit": 1000}),
        vec![json!({"name": "u", "source": {"kind": "udp", "rate_mbps": 20000}})],
    );
    sc["topology"]["nic_rate"] = json!(1000.0);
    let r = run(&sc);
    let f = &r.flows[0];
    // About 19 of every 20 packets never leave the host.
    let share = f.pkts_dropped as f64 / f.data_pkts_sent as f64;
    assert!((share - 0.95).abs() < 0.01, "{share}");
    let cap = 1000.0 * 1200.0 / 1242.0;
    assert!(
        (f.goodput_mbps - cap).abs() < 0.05 * cap,
        "{}",
        f.goodput_mbps
    );
}

#[test]
fn udp_prague_fills_an_idle_link_and_backs_off_under_marking() {
    // Alone on 20 Mbit/s with a 50 Mbit/s ceiling, through DualPI2's L queue: fills the link
    // with a sub-millisecond queue.
    let sc = dumbbell(
        20.0,
        20.0,
        20.0,
        json!({"kind": "dualpi2"}),
        vec![json!({"name": "call", "source": {"kind": "udp_prague", "max_rate_mbps": 50}})],
    );
    let r = run(&sc);
    assert_eq!(
        r.flows[0].cc, "udp_prague",
        "the flow's default cc does not drive it"
    );
    let g = r.flows[0].goodput_mbps;
    assert!(g > 0.85 * 20.0 * 1200.0 / 1242.0, "goodput {g}");
    let l4s = r
        .classes
        .iter()
        .find(|c| c.kind == "class" && c.name == "l4s")
        .unwrap();
    assert!(
        l4s.sojourn_p50_ms < 1.0,
        "L queue median {}",
        l4s.sojourn_p50_ms
    );
    assert!(l4s.marks > 100);
    let recs = &r.udp_records["call"];
    // one per 100 ms, the one ending with the run included
    assert_eq!(recs.len(), 200);
    assert_eq!(recs.last().unwrap().t, 20.0);
    let r_ce: u64 = r.flows[0].ce_received;
    assert!(
        r.flows[0].ce_fed_back > 0 && r.flows[0].ce_fed_back <= r_ce,
        "CE echoed to the sender"
    );
    let late: Vec<_> = recs.iter().filter(|x| x.t > 10.0).collect();
    let mark = late.iter().map(|x| x.mark_frac).sum::<f64>() / late.len() as f64;
    assert!(mark > 0.0 && mark < 0.5, "mark fraction {mark}");
    // On an idle link under its ceiling it sends at the ceiling.
    let sc = dumbbell(
        10.0,
        100.0,
        20.0,
        json!({"kind": "dualpi2"}),
        vec![json!({"name": "call", "source": {"kind": "udp_prague", "max_rate_mbps": 5}})],
    );
    let r = run(&sc);
    let late: Vec<_> = r.udp_records["call"]
        .iter()
        .filter(|x| x.t > 5.0)
        .map(|x| x.rate_mbps)
        .collect();
    let rate = late.iter().sum::<f64>() / late.len() as f64;
    assert!((rate - 5.0).abs() < 0.25, "rate {rate}");
}

#[test]
fn chunks_and_messages_on_persistent_connections_record_every_transfer() {
    let sc = dumbbell(
        20.0,
        100.0,
        10.0,
        json!({"kind": "bfifo", "limit": bdp_bytes(2.0, 100.0, 10.0)}),
        vec![
            l4s_flow(
                "video",
                json!({"kind": "chunks", "rate_mbps": 10, "period": 2}),
            ),
            json!({"name": "bg", "cc": {"name": "cubic"},
                   "source": {"kind": "messages", "rate": 10, "batch_min": 1, "batch_max": 10,
                              "message_size": 65000, "persistent": true}}),
        ],
    );
    let r = run(&sc);
    assert!(r.conservation_ok);
    let video: Vec<_> = r.connections.iter().filter(|c| c.flow == "video").collect();
    // A chunk every 2 s from t = 0: the last one (t = 18 s) completes before the end.
    assert_eq!(video.len(), 10);
    assert!(video.iter().all(|c| c.size == 2_500_000));
    assert_eq!(video.iter().filter(|c| c.new_connection).count(), 1);
    assert!(video.iter().all(|c| c.fct_s < 2.0), "chunks must keep up");
    let vg = r.flows.iter().find(|f| f.name == "video").unwrap();
    assert!(
        (vg.goodput_mbps - 10.0 * 18.0 / 20.0).abs() < 1.5,
        "{}",
        vg.goodput_mbps
    );
    let bg: Vec<_> = r.connections.iter().filter(|c| c.flow == "bg").collect();
    assert!(bg.len() > 500, "{}", bg.len());
    assert!(bg.iter().all(|c| c.size == 65_000));
    // The persistent connections are sampled as a bulk flow's first stream is: srtt over
    // the 10 ms base RTT in the time series and once a second (they were NaN and empty).
    for (i, name) in [(0, "video"), (1, "bg")] {
        let srtt = &r.series.flows[i].srtt_ms;
        assert!(srtt[20..].iter().all(|&x| x >= 10.0), "{name}: {srtt:?}");
        assert!(r.rtt_samples[name].len() >= 19, "{name}");
    }
}

/// A flow's message start times (its transfers' records), per connection.
fn message_starts(r: &RunResult, flow: &str) -> std::collections::BTreeMap<u64, Vec<f64>> {
    let mut per_conn = std::collections::BTreeMap::<u64, Vec<f64>>::new();
    for c in r.connections.iter().filter(|c| c.flow == flow) {
        per_conn.entry(c.id).or_default().push(c.start_s);
    }
    per_conn
}

#[test]
fn message_sessions_write_on_their_own_connection_for_their_duration_then_close() {
    // MGEN-like: two sessions a second (periodic), each writing a 20 KB message at once and
    // then every 0.1 s for 1 s on its own connection (ten messages), then closing.
    let session = |poisson: f64| {
        json!({"kind": "messages", "rate": 2, "poisson": false, "message_size": 20000,
               "session": {"duration": 1.0, "rate": 10, "poisson_fraction": poisson}, "stop": 8})
    };
    let sc = dumbbell(
        10.0,
        100.0,
        10.0,
        json!({"kind": "pfifo", "limit": 1000}),
        vec![
            json!({"name": "periodic", "cc": {"name": "cubic"}, "source": session(0.0)}),
            json!({"name": "poisson", "cc": {"name": "cubic"}, "source": session(1.0)}),
        ],
    );
    let r = run(&sc);
    for name in ["periodic", "poisson"] {
        let recs: Vec<_> = r.connections.iter().filter(|c| c.flow == name).collect();
        let per_conn = message_starts(&r, name);
        // Sessions open at 0.5, 1.0, ... 7.5 s (the source stops at 8 s): 15.
        assert_eq!(per_conn.len(), 15, "{name}");
        assert_eq!(
            recs.iter().filter(|c| c.new_connection).count(),
            15,
            "{name}"
        );
        assert!(
            recs.iter().all(|c| c.size == 20_000 && c.fct_s < 0.1),
            "{name}"
        );
        let counts: Vec<usize> = per_conn.values().map(|v| v.len()).collect();
        if name == "periodic" {
            assert!(counts.iter().all(|&n| n == 10), "{counts:?}");
            for starts in per_conn.values() {
                let gaps: Vec<f64> = starts.windows(2).map(|w| w[1] - w[0]).collect();
                assert!(gaps.iter().all(|g| (g - 0.1).abs() < 1e-6), "{gaps:?}");
                assert!(starts[9] - starts[0] < 1.0);
            }
        } else {
            // 1 + Poisson(10) messages: mean 11 over 15 sessions (sd about 0.8).
            let mean = counts.iter().sum::<usize>() as f64 / counts.len() as f64;
            assert!((mean - 11.0).abs() < 2.5, "{counts:?}");
            assert!(counts.iter().any(|&n| n != counts[0]), "{counts:?}");
        }
        // Each session's connection closed after its last message.
        let f = r.flows.iter().find(|f| f.name == name).unwrap();
        assert_eq!(f.bytes_delivered, 20_000 * recs.len() as u64);
    }
    let mut w = World::new(&Scenario::from_json(&sc.to_string()).unwrap()).unwrap();
    w.run();
    assert_eq!(w.live_conns(), 0, "every session ended and closed");
}

#[test]
fn a_poisson_fraction_of_sessions_writes_at_exponential_gaps_the_rest_periodically() {
    // The study's MGEN scripts: a quarter of the sessions POISSON, the rest PERIODIC. 200
    // sessions of 1 s at 10 messages a second: a periodic one writes every 0.1 s exactly.
    let sc = dumbbell(
        12.0,
        100.0,
        10.0,
        json!({"kind": "pfifo", "limit": 1000}),
        vec![
            json!({"name": "m", "cc": {"name": "cubic"}, "source": {"kind": "messages",
                "rate": 20, "poisson": false, "message_size": 1000, "stop": 10,
                "session": {"duration": 1.0, "rate": 10, "poisson_fraction": 0.25}}}),
        ],
    );
    let r = run(&sc);
    let per_conn = message_starts(&r, "m");
    assert_eq!(per_conn.len(), 199);
    let periodic = |v: &Vec<f64>| v.windows(2).all(|w| (w[1] - w[0] - 0.1).abs() < 1e-6);
    let poisson = per_conn.values().filter(|v| !periodic(v)).count();
    // Binomial(199, 0.25): 50 +- 6; a Poisson session with every gap 0.1 s does not happen.
    assert!((30..=70).contains(&poisson), "{poisson}");
}

#[test]
fn a_message_session_cannot_also_be_persistent() {
    let sc = dumbbell(
        1.0,
        100.0,
        10.0,
        json!({"kind": "pfifo", "limit": 1000}),
        vec![
            json!({"name": "m", "source": {"kind": "messages", "rate": 1, "message_size": 1000,
                    "persistent": true, "session": {"duration": 1, "rate": 5}}}),
        ],
    );
    let e = Scenario::from_json(&sc.to_string()).unwrap_err();
    assert_eq!(e.field, "flows[0].source.session", "{e}");
}

/// A periodic `messages` source (`source`'s fields added) on one persistent CUBIC connection
/// with the `tcp` settings, over 100 Mbit/s with `rtt_ms` base RTT, for `duration` s: the
/// messages completed and the data segments sent. Every message arrives whole.
fn messages_on_one_connection(duration: f64, rtt_ms: f64, tcp: Value, source: Value) -> (u64, u64) {
    let mut src = json!({"kind": "messages", "poisson": false, "persistent": true});
    src.as_object_mut()
        .unwrap()
        .extend(source.as_object().unwrap().clone());
    let size = src["message_size"].as_u64().unwrap();
    let sc = dumbbell(
        duration,
        100.0,
        rtt_ms,
        json!({"kind": "pfifo", "limit": 1000}),
        vec![json!({"name": "m", "cc": {"name": "cubic"}, "tcp": tcp, "source": src})],
    );
    let r = run(&sc);
    assert!(r.conservation_ok);
    let n = r.connections.len() as u64;
    assert!(r.connections.iter().all(|c| c.size == size));
    assert_eq!(r.flows[0].bytes_delivered, size * n);
    (n, r.flows[0].data_pkts_sent)
}

#[test]
fn a_batch_of_small_writes_leaves_in_full_segments_behind_the_first() {
    // Ten 1,000-byte messages written at once, once a second, on one connection. The first
    // batch is written before the handshake ends: 10,000 bytes in 7 segments (6 x 1448 +
    // 1312). Later batches: the first message leaves at once (nothing unacknowledged);
    // the second waits, autocorked, while the first is still in the host's NIC queue, and the
    // other eight join its skb (tcp_sendmsg fills the unsent tail): 9,000 bytes in 7 segments
    // at the first transmit completion, 8 packets a batch. Nagle's test alone (autocorking
    // off) gives the same: the second waits for the first's ACK, the others join it, and the
    // full segments the skb grows leave as it grows (tcp_mss_split_point cuts the short end
    // off). With neither, the messages leave one by one until TCP Small Queues' limit (two
    // skbs, or about 1 ms at the pacing rate) holds the next, and the rest join that one:
    // more packets.
    let sent = |autocorking: bool, nodelay: bool| {
        let (n, sent) = messages_on_one_connection(
            9.5,
            10.0,
            json!({"autocorking": autocorking, "nodelay": nodelay}),
            json!({"rate": 1, "batch_min": 10, "batch_max": 10, "message_size": 1000}),
        );
        // Batches at 1, 2, ..., 9 s.
        assert_eq!(n, 90);
        sent
    };
    assert_eq!(sent(true, false), 7 + 8 * 8);
    assert_eq!(sent(true, true), 7 + 8 * 8);
    assert_eq!(sent(false, false), 7 + 8 * 8);
    assert!(sent(false, true) > 7 + 8 * 8);
}

#[test]
fn nagle_holds_small_writes_while_a_small_segment_is_unacknowledged() {
    // A 100-byte message every 2 ms on one connection over a 20 ms path. With TCP_NODELAY
    // each leaves in a segment of its own once the connection is open. Without it (Linux's
    // default) Nagle's test holds a short segment while the last short one sent is
    // unacknowledged (Minshall), so the
    // messages written meanwhile leave together when its ACK arrives: a few segments per
    // round trip. Every byte arrives either way.
    let sent = |nodelay: bool| {
        let (n, sent) = messages_on_one_connection(
            4.0,
            20.0,
            json!({"nodelay": nodelay}),
            json!({"rate": 500, "message_size": 100, "stop": 3}),
        );
        assert!(n >= 1499, "{n} messages");
        (n, sent)
    };
    let (n, segs) = sent(true);
    // (Those written during the handshake, 20 ms, leave together in the first segment.)
    assert_eq!(segs, n - 10);
    let (n, segs) = sent(false);
    assert!(segs < n / 4, "{segs} segments for {n} messages");
}

#[test]
fn requested_chunks_complete_half_a_round_trip_later_than_pushed_ones() {
    // One stream alone on an idle path (10 ms base RTT): a requested chunk starts when the
    // player's request reaches the server, half a round trip after the push would have.
    let fcts = |request: bool| {
        let sc = dumbbell(
            9.0,
            100.0,
            10.0,
            json!({"kind": "bfifo", "limit": bdp_bytes(2.0, 100.0, 10.0)}),
            vec![l4s_flow(
                "video",
                json!({"kind": "chunks", "rate_mbps": 10, "period": 2, "request": request}),
            )],
        );
        let r = run(&sc);
        assert!(r.conservation_ok);
        let c: Vec<_> = r.connections.iter().filter(|c| c.flow == "video").collect();
        assert_eq!(c.len(), 5);
        assert!(c.iter().all(|c| c.requested == request));
        c.iter().map(|c| c.fct_s).collect::<Vec<_>>()
    };
    let (pushed, requested) = (fcts(false), fcts(true));
    for (p, q) in pushed.iter().zip(&requested).skip(1) {
        let later_ms = (q - p) * 1e3;
        assert!((5.0..5.5).contains(&later_ms), "{later_ms} ms later");
    }
}

fn strip_wall(r: &l4sim_core::metrics::results::RunResult) -> String {
    let mut v = serde_json::to_value(r).unwrap();
    v.as_object_mut().unwrap().remove("wall_seconds");
    v.to_string()
}

#[test]
fn stepping_to_the_end_gives_the_one_shot_result_byte_for_byte() {
    let sc = dumbbell(
        6.0,
        100.0,
        10.0,
        json!({"kind": "dualpi2"}),
        vec![
            l4s_flow("l4s", json!({"kind": "bulk"})),
            json!({"name": "classic", "cc": {"name": "cubic"}}),
            l4s_flow("web", web(50.0)),
            json!({"name": "call", "source": {"kind": "udp_prague"}, "start": 1.0}),
        ],
    );
    let scn = Scenario::from_json(&sc.to_string()).unwrap();
    let one = l4sim_core::sim::run(&scn).unwrap();
    let mut w = World::new(&scn).unwrap();
    let mut t = 0;
    while t < w.end() {
        t = (t + millis(370.0)).min(w.end());
        w.run_until(t);
        let _ = w.drain();
    }
    let stepped = w.result(&scn.name, 0.0);
    assert_eq!(strip_wall(&one), strip_wall(&stepped));
}

#[test]
fn swapping_the_aqm_mid_run_takes_effect_and_drops_what_the_old_one_held() {
    // Prague and CUBIC through PIE (classic ECN behaviour for both: Prague's queue delay is
    // the shared one); at 10 s the AQM becomes DualPI2 and Prague's delay falls below 1 ms.
    let limit = 10000;
    let sc = dumbbell(
        20.0,
        100.0,
        10.0,
        json!({"kind": "pie", "ecn": true, "limit": limit}),
        vec![
            l4s_flow("l4s", json!({"kind": "bulk"})),
            json!({"name": "classic", "cc": {"name": "cubic"}}),
        ],
    );
    let scn = Scenario::from_json(&sc.to_string()).unwrap();
    let mut w = World::new(&scn).unwrap();
    w.run_until(10 * SEC);
    let before = w.drain();
    let spec = serde_json::from_value(json!({"kind": "dualpi2"})).unwrap();
    w.set_link(None, None, Some(spec)).unwrap();
    w.run_until(11 * SEC);
    let _ = w.drain();
    w.run_until(20 * SEC);
    let after = w.drain();
    let d = |v: &Value| {
        v["qdiscs"]["bottleneck"]["delay"]["l4s"]["mean_ms"]
            .as_f64()
            .unwrap()
    };
    assert!(d(&before) > 5.0, "under PIE: {}", d(&before));
    assert!(d(&after) < 1.0, "under DualPI2: {}", d(&after));
    let r = w.result("swap", 0.0);
    assert!(r.conservation_ok);
    assert_eq!(r.qdiscs[0].kind, "dualpi2");
}

#[test]
fn replacing_a_qdisc_that_holds_packets_it_may_not_send_yet_drops_them_all() {
    // A tbf without tokens and a netem whose packets are still in their delay hold packets
    // their dequeue does not give yet; `tc qdisc replace` frees them all (found by the
    // stateful fuzz test: they vanished uncounted and packet conservation failed).
    for old in [
        json!({"kind": "tbf", "rate_mbps": 5, "burst": 3000, "limit": 200000}),
        json!({"kind": "netem", "delay_ms": 20, "limit": 10000}),
        json!({"kind": "htb", "classes": [{"name": "a", "rate_mbps": 5}], "default": 0}),
    ] {
        let sc = dumbbell(
            2.0,
            50.0,
            10.0,
            old.clone(),
            vec![json!({"name": "a", "cc": {"name": "cubic"}})],
        );
        let scn = Scenario::from_json(&sc.to_string()).unwrap();
        let mut w = World::new(&scn).unwrap();
        w.run_until(SEC);
        let q = &w.result("x", 0.0).qdiscs[0];
        let held = q.enq_pkts - q.deq_pkts - q.drops;
        let spec = serde_json::from_value(json!({"kind": "fq_codel"})).unwrap();
        w.set_link(None, None, Some(spec)).unwrap();
        let r = w.result("x", 0.0);
        assert!(r.conservation_ok, "{old}");
        w.run_until(2 * SEC);
        assert!(w.result("x", 0.0).conservation_ok, "{old}");
        assert!(held > 0, "{old}: nothing held to drop");
    }
}

#[test]
fn lowering_a_flows_base_rtt_mid_run_keeps_its_access_link_in_order() {
    // Packets sent after the change take the shorter delay but leave behind those already on
    // the line (the stateful fuzz test: an exit scheduled before the current time panicked).
    let sc = dumbbell(
        2.0,
        40.0,
        100.0,
        json!({"kind": "dualpi2"}),
        vec![json!({"name": "a", "cc": {"name": "cubic"}})],
    );
    let scn = Scenario::from_json(&sc.to_string()).unwrap();
    let mut w = World::new(&scn).unwrap();
    w.run_until(SEC / 2);
    w.set_flow("a", &json!({"base_rtt": 1})).unwrap();
    w.run_until(2 * SEC);
    let r = w.result("x", 0.0);
    assert!(r.conservation_ok);
    assert!(
        r.flows[0].goodput_mbps > 20.0,
        "{}",
        r.flows[0].goodput_mbps
    );
}

#[test]
fn a_rate_change_for_a_source_without_a_rate_is_refused() {
    // It was accepted and did nothing (the sources' default set_rate is empty).
    let sc = dumbbell(
        2.0,
        100.0,
        10.0,
        json!({"kind": "dualpi2"}),
        vec![json!({"name": "bulk", "cc": {"name": "cubic"}})],
    );
    let scn = Scenario::from_json(&sc.to_string()).unwrap();
    let mut w = World::new(&scn).unwrap();
    w.run_until(SEC / 2);
    let e = w.set_flow("bulk", &json!({"rate": 20})).unwrap_err();
    assert_eq!(e.field, "rate");
    assert!(
        e.message.starts_with("a bulk source has no rate"),
        "{}",
        e.message
    );
}

#[test]
fn a_udp_flow_sends_at_its_new_rate_from_the_change_on() {
    // The Simulation's docs promise it; the change was accepted and did nothing.
    let sc = dumbbell(
        4.0,
        100.0,
        10.0,
        json!({"kind": "dualpi2"}),
        vec![json!({"name": "cbr", "cc": {"name": "cubic"},
                    "source": {"kind": "udp", "rate_mbps": 5.0}})],
    );
    let scn = Scenario::from_json(&sc.to_string()).unwrap();
    let mut w = World::new(&scn).unwrap();
    w.run_until(2 * SEC);
    let e = w.set_flow("cbr", &json!({"rate": 0})).unwrap_err();
    assert_eq!(e.field, "rate");
    w.set_flow("cbr", &json!({"rate": 20})).unwrap();
    w.run_until(4 * SEC);
    let r = w.result("x", 0.0);
    assert!(r.conservation_ok);
    // 2 s at 5 Mbit/s, 2 s at 20 Mbit/s of payload: 50 Mbit over 4 s.
    let g = r.flows[0].goodput_mbps;
    assert!((g - 12.5).abs() < 0.2, "{g}");
}

#[test]
fn changing_the_rate_mid_run_changes_what_the_link_carries() {
    let sc = dumbbell(
        20.0,
        100.0,
        10.0,
        json!({"kind": "bfifo", "limit": bdp_bytes(2.0, 100.0, 10.0)}),
        vec![json!({"name": "a", "cc": {"name": "cubic"}})],
    );
    let scn = Scenario::from_json(&sc.to_string()).unwrap();
    let mut w = World::new(&scn).unwrap();
    w.run_until(10 * SEC);
    // Not above the line (the 10 Gbit/s NIC): the model has no back-pressure from it.
    let e = w.set_link(None, Some(20_000.0), None).unwrap_err();
    assert_eq!(e.field, "rate");
    assert!(e.message.contains("(10000 Mbit/s)"), "{e}");
    w.set_link(None, Some(40.0), None).unwrap();
    w.run_until(secs(12.0));
    let _ = w.drain();
    w.run_until(20 * SEC);
    let v = w.drain();
    let tput: Vec<f64> = v["flows"]["a"]["tput_mbps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    let mean = tput.iter().sum::<f64>() / tput.len() as f64;
    assert!((mean - 40.0 * 1448.0 / 1514.0).abs() < 2.0, "{mean}");
}

#[test]
fn flows_added_and_removed_while_running() {
    let sc = dumbbell(
        10.0,
        100.0,
        10.0,
        json!({"kind": "dualpi2"}),
        vec![json!({"name": "a", "cc": {"name": "cubic"}})],
    );
    let scn = Scenario::from_json(&sc.to_string()).unwrap();
    let mut w = World::new(&scn).unwrap();
    w.run_until(2 * SEC);
    let f = serde_json::from_value(l4s_flow("b", json!({"kind": "bulk"}))).unwrap();
    w.add_flow(f).unwrap();
    let dup = serde_json::from_value(json!({"name": "a"})).unwrap();
    assert_eq!(w.add_flow(dup).unwrap_err().field, "name");
    w.run_until(6 * SEC);
    w.remove_flow("a").unwrap();
    assert!(w.remove_flow("a").is_err());
    w.run_until(10 * SEC);
    let r = w.result("dyn", 0.0);
    assert!(r.conservation_ok);
    let b = r.flows.iter().find(|f| f.name == "b").unwrap();
    assert_eq!(b.data_ecn, "ect1");
    assert!((b.start_s - 2.0).abs() < 1e-9);
    let tput_b = &r.series.flows[1].tput_mbps;
    assert!(tput_b[..19].iter().all(|x| x.is_nan() || *x == 0.0));
    // After a's removal b has the link.
    assert!(
        tput_b[85..].iter().all(|&x| x > 80.0),
        "{:?}",
        &tput_b[85..]
    );
    assert!(r.series.flows[0].tput_mbps[65..].iter().all(|x| x.is_nan()));
}

#[test]
fn a_flow_removed_the_instant_it_was_added_has_no_rate_and_no_say_in_fairness() {
    // Its span is zero: 0 bytes over 0 s made the goodput NaN, and Jain's index with it.
    let sc = dumbbell(
        2.0,
        100.0,
        10.0,
        json!({"kind": "bfifo", "limit": 250_000}),
        vec![
            json!({"name": "a", "cc": {"name": "cubic"}}),
            json!({"name": "b", "cc": {"name": "cubic"}}),
        ],
    );
    let scn = Scenario::from_json(&sc.to_string()).unwrap();
    let mut w = World::new(&scn).unwrap();
    w.run_until(SEC / 2);
    let late = serde_json::from_value(json!({"name": "late", "cc": {"name": "cubic"}})).unwrap();
    w.add_flow(late).unwrap();
    let at_once = w.result("at once", 0.0);
    w.remove_flow("late").unwrap();
    w.run_until(2 * SEC);
    let r = w.result("later", 0.0);
    for r in [&at_once, &r] {
        let late = r.flows.iter().find(|f| f.name == "late").unwrap();
        assert_eq!(late.goodput_mbps, 0.0);
        let (a, b) = (r.flows[0].goodput_mbps, r.flows[1].goodput_mbps);
        let two = (a + b).powi(2) / (2.0 * (a * a + b * b));
        assert!(
            (r.jain_index - two).abs() < 1e-12,
            "{} vs {two}",
            r.jain_index
        );
    }
}

#[test]
fn a_flow_with_a_stop_time_ends_then_and_its_bandwidth_goes_to_the_others() {
    let sc = dumbbell(
        6.0,
        50.0,
        10.0,
        json!({"kind": "pfifo", "limit": 1000}),
        vec![
            json!({"name": "early", "cc": {"name": "cubic"}, "start": 1.0, "stop": 3.0}),
            json!({"name": "late", "cc": {"name": "cubic"}}),
        ],
    );
    let r = run(&sc);
    let t = &r.series.t;
    let tput = |name: &str| {
        &r.series
            .flows
            .iter()
            .find(|f| f.name == name)
            .unwrap()
            .tput_mbps
    };
    let at = |x: f64| t.iter().position(|&v| (v - x).abs() < 1e-9).unwrap();
    // Sending before its stop (mean of the 100 ms samples from 2 to 3 s: single samples dip
    // when a burst of its window falls outside them).
    let early: f64 = tput("early")[at(2.0)..at(3.0)].iter().sum::<f64>() / 10.0;
    assert!(early > 5.0, "{early}");
    assert!(tput("early")[at(3.5)..]
        .iter()
        .all(|v| v.is_nan() || *v == 0.0));
    let late_after: f64 = tput("late")[at(4.5)..].iter().sum::<f64>() / (t.len() - at(4.5)) as f64;
    assert!(late_after > 45.0, "{late_after}");
}

#[test]
fn forgetting_drained_history_keeps_a_long_run_flat() {
    let sc = dumbbell(
        1e6,
        100.0,
        10.0,
        json!({"kind": "pfifo", "limit": 1000}),
        vec![l4s_flow("w", web(300.0))],
    );
    let sc = Scenario::from_json(&sc.to_string()).unwrap();
    let mut w = World::new(&sc).unwrap();
    let mut total = 0;
    for s in 1..=20 {
        w.run_until(secs(s as f64));
        let d = w.drain();
        total += d["connections"].as_array().unwrap().len();
        assert_eq!(
            d["t"].as_array().unwrap().len(),
            10,
            "each drain has its second's samples"
        );
        w.forget_drained();
    }
    assert!((total as f64 - 6000.0).abs() < 400.0, "{total} transfers");
    let r = w.result("", 0.0);
    assert!(r.series.t.is_empty() && r.connections.is_empty());
    assert_eq!(r.flows[0].name, "w");
}

#[test]
fn lost_requests_are_sent_again_and_every_transfer_completes() {
    // The client's uplink loses 30 % of its packets (its requests, SYN/ACKs and ACKs); 40
    // requests of 5 KB, 50 ms apart. A lost request is sent again after 1 s (the client's
    // SYN timeout), so every transfer completes, some after more than a second.
    let trace: Vec<Value> = (0..40).map(|i| json!([0.05 * i as f64, 5000])).collect();
    let sc = json!({
        "duration": 12.0, "seed": 3,
        "topology": two_hops(
            json!({"rate": 1000, "delay_ms": 2.5}),
            json!({"rate": 100, "delay_ms": 2.5,
                   "ba": {"rate": 100, "qdisc": {"kind": "netem", "loss": 0.3}}})),
        "flows": [{"name": "w", "cc": {"name": "cubic"}, "from": "h1", "to": "h2",
                   "source": {"kind": "web", "trace": trace}}],
    });
    let r = run(&sc);
    assert_eq!(r.connections.len(), 40);
    let slow = r.connections.iter().filter(|c| c.fct_s > 1.0).count();
    assert!(
        (3..30).contains(&slow),
        "{slow} transfers waited for a timeout"
    );
    // The fastest ones took the two round trips of an unlucky-free request and handshake.
    let fastest = r
        .connections
        .iter()
        .map(|c| c.fct_s)
        .fold(f64::MAX, f64::min);
    assert!((0.020..0.022).contains(&fastest), "{fastest}");
}

#[test]
fn a_lost_request_is_sent_again_when_the_syn_timer_armed_at_its_send_runs() {
    // One request at 10 ms, lost at the router 2.5 ms later (netem loss 1 on its egress to
    // the server, lifted at 30 ms). The client's SYN timer was armed at the send, at jiffy 2
    // (HZ 250, tick phase 0), to expire 250 jiffies later (TCP_TIMEOUT_INIT); 250 jiffies
    // file it on the wheel's level 1, in the 8-jiffy bucket after jiffy 252's: it runs at
    // jiffy 256, 1.024 s. (From the drop it would have been 1.0125 s and later.)
    let scenario = |loss: f64| {
        json!({
            "duration": 3.0, "seed": 1,
            "topology": two_hops(
                json!({"rate": 100, "delay_ms": 2.5,
                       "ba": {"rate": 100, "qdisc": {"kind": "netem", "loss": loss}}}),
                json!({"rate": 100, "delay_ms": 2.5})),
            "flows": [{"name": "w", "cc": {"name": "cubic"}, "from": "h1", "to": "h2",
                       "tcp": {"jiffies_phase_us": 0},
                       "receiver": {"tcp": {"jiffies_phase_us": 0}},
                       "source": {"kind": "web", "trace": [[0.01, 5000]]}}],
        })
    };
    let clean = run(&scenario(0.0));
    assert_eq!(clean.connections.len(), 1);
    let direct = clean.connections[0].fct_s;
    let mut w = World::new(&Scenario::from_json(&scenario(1.0).to_string()).unwrap()).unwrap();
    w.run_until(millis(30.0));
    let spec = serde_json::from_value(json!({"kind": "netem", "loss": 0.0})).unwrap();
    w.set_link(Some("r1->h1"), None, Some(spec)).unwrap();
    w.run_until(secs(3.0));
    let r = w.result("", 0.0);
    assert_eq!(r.connections.len(), 1);
    let c = &r.connections[0];
    assert!((c.start_s - 0.01).abs() < 1e-9, "{}", c.start_s);
    let retry = c.start_s + c.fct_s - direct;
    assert!((retry - 1.024).abs() < 1e-6, "sent again at {retry} s");
}

#[test]
fn a_requested_transfers_ecn_is_negotiated_with_the_client_as_the_active_end() {
    // A web client opens its connection: with the server at Linux's default tcp_ecn=2
    // (answer ECN, never ask) and the client at 1 (ask for it), its downloads use classic
    // ECN. A bulk flow between the same settings is opened by its data sender, which never
    // asks: no ECN. (Before, every connection was negotiated as if its data sender opened it.)
    let ecn = |sender: &str, receiver: &str| json!({"tcp": {"ecn": sender}, "receiver": {"tcp": {"ecn": receiver}}});
    let with = |mut f: Value, keys: Value| {
        for (k, v) in keys.as_object().unwrap() {
            f[k] = v.clone();
        }
        f
    };
    let trace: Vec<Value> = (0..10).map(|i| json!([0.1 * i as f64, 20_000])).collect();
    let web = json!({"name": "w", "cc": {"name": "cubic"},
                     "source": {"kind": "web", "trace": trace}});
    let bulk = json!({"name": "b", "cc": {"name": "cubic"}});
    let codel = json!({"kind": "codel", "ecn": true});
    let modes = |s: &str, r: &str| {
        let sc = dumbbell(
            1.5,
            100.0,
            20.0,
            codel.clone(),
            vec![with(web.clone(), ecn(s, r)), with(bulk.clone(), ecn(s, r))],
        );
        let res = run(&sc);
        (res.flows[0].ecn_mode.clone(), res.flows[1].ecn_mode.clone())
    };
    assert_eq!(
        modes("passive", "classic"),
        ("rfc3168".into(), "none".into())
    );
    // The other way round the bulk flow asks and the web client does not.
    assert_eq!(
        modes("classic", "passive"),
        ("none".into(), "rfc3168".into())
    );
    assert_eq!(
        modes("classic", "classic"),
        ("rfc3168".into(), "rfc3168".into())
    );
}

#[test]
fn a_persistent_web_response_waits_for_its_request() {
    // On a persistent connection each response starts when the request has crossed to the
    // server: half an RTT, then the last byte's half: about one base RTT for a small one.
    let trace: Vec<Value> = (0..20)
        .map(|i| json!([0.2 + 0.1 * i as f64, 2000]))
        .collect();
    let sc = dumbbell(
        3.0,
        100.0,
        20.0,
        json!({"kind": "pfifo", "limit": 1000}),
        vec![json!({"name": "w", "cc": {"name": "cubic"},
                    "source": {"kind": "web", "trace": trace, "persistent": true}})],
    );
    let r = run(&sc);
    assert_eq!(r.connections.len(), 20);
    assert!(r.connections[0].new_connection);
    for c in &r.connections[1..] {
        assert!(!c.new_connection && c.requested);
        assert!((0.020..0.0205).contains(&c.fct_s), "{}", c.fct_s);
    }
}

#[test]
fn a_links_utilisation_counts_each_rate_set_link_gave_it_over_its_time() {
    // A UDP source above the link's rate keeps it busy: 2 s at 100 Mbit/s, 2 s at 50. The
    // capacity is 300 Mbit, not the last rate over the whole run (200 Mbit: 1.5).
    let sc = dumbbell(
        4.0,
        100.0,
        20.0,
        json!({"kind": "bfifo", "limit": 100_000}),
        vec![
            json!({"name": "u", "source": {"kind": "udp", "rate_mbps": 200, "packet_size": 1458}}),
        ],
    );
    let scn = Scenario::from_json(&sc.to_string()).unwrap();
    let mut w = World::new(&scn).unwrap();
    w.run_until(2 * SEC);
    w.set_link(None, Some(50.0), None).unwrap();
    w.run_until(4 * SEC);
    let r = w.result("reshaped", 0.0);
    let link = r.links.iter().find(|l| l.name == "bottleneck").unwrap();
    assert_eq!(link.rate_mbps, 50.0);
    assert!(
        link.utilisation > 0.98 && link.utilisation <= 1.0,
        "{}",
        link.utilisation
    );
}

#[test]
fn each_stream_of_a_sized_bulk_flow_has_its_completion_in_the_connections() {
    // Two 5000-byte streams on an idle 100 Mbit/s, 20 ms path: each completes when the
    // receiver has its last byte, a handshake and the data's one-way trip after it opened
    // (1.5 RTT and some serialization), half an RTT before the sender's last ACK, which the
    // flow's completion_s is.
    let sc = dumbbell(
        1.0,
        100.0,
        20.0,
        json!({"kind": "bfifo", "limit": 250_000}),
        vec![json!({"name": "b", "cc": {"name": "cubic"}, "size": 5000, "streams": 2})],
    );
    let r = run(&sc);
    let rows: Vec<_> = r.connections.iter().filter(|c| c.flow == "b").collect();
    assert_eq!(rows.len(), 2);
    for c in &rows {
        assert_eq!((c.size, c.new_connection, c.requested), (5000, true, false));
        assert!(c.fct_s > 0.030 && c.fct_s < 0.031, "{}", c.fct_s);
        assert!(
            (c.fct_s - c.fct_no_handshake_s - 0.020).abs() < 1e-3,
            "{c:?}"
        );
    }
    let done = r.flows[0].completion_s.unwrap();
    let last = rows.iter().map(|c| c.start_s + c.fct_s).fold(0.0, f64::max);
    assert!((done - last - 0.010).abs() < 1e-3, "{done} vs {last}");
}
