//! Helpers for end-to-end scenario tests.
#![allow(dead_code)]

use l4sim_core::metrics::results::RunResult;
use l4sim_core::scenario::Scenario;
use serde_json::{json, Value};

/// A `graph` topology `h1 - r1 - h2`; `first` and `second` are the two links' keys besides
/// their ends (`rate`, `delay_ms`, `ab`, `ba`).
pub fn two_hops(first: Value, second: Value) -> Value {
    let link = |a: &str, b: &str, mut keys: Value| {
        keys["a"] = json!(a);
        keys["b"] = json!(b);
        keys
    };
    json!({"kind": "graph",
        "nodes": [{"name": "h1", "kind": "host"}, {"name": "h2", "kind": "host"}, {"name": "r1"}],
        "links": [link("h1", "r1", first), link("r1", "h2", second)]})
}

/// Bytes of a buffer of `n_bdp` bandwidth-delay products, as the study sizes them.
pub fn bdp_bytes(n_bdp: f64, mbps: f64, rtt_ms: f64) -> u64 {
    (n_bdp * mbps * 1e6 * rtt_ms / 1e3 / 8.0) as u64
}

/// A dumbbell scenario with the given qdisc and flows (JSON values).
pub fn dumbbell(duration: f64, mbps: f64, rtt_ms: f64, qdisc: Value, flows: Vec<Value>) -> Value {
    json!({
        "duration": duration,
        "seed": 1,
        "sample_interval": 0.1,
        "topology": {"kind": "dumbbell", "base_rtt": rtt_ms,
                     "bottleneck": {"rate": mbps, "qdisc": qdisc}},
        "flows": flows,
    })
}

pub fn flow(name: &str, cc: Value) -> Value {
    json!({"name": name, "cc": cc})
}

pub fn run(v: &Value) -> RunResult {
    let sc = Scenario::from_json(&v.to_string()).expect("valid scenario");
    let r = l4sim_core::sim::run(&sc).expect("runs");
    assert!(r.conservation_ok, "packet conservation violated");
    r
}

/// Goodput ceiling of a link: payload share of each 1514-byte frame.
pub fn max_goodput(mbps: f64) -> f64 {
    mbps * 1448.0 / 1514.0
}
