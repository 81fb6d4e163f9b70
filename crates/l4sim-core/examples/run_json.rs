//! Run a scenario JSON file with the pure-Rust core and print its speed, for profiling
//! without Python: `cargo run --release --example run_json -- scenario.json`.

fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("usage: run_json SCENARIO.json");
    let text = std::fs::read_to_string(&path).expect("readable file");
    let sc = l4sim_core::scenario::Scenario::from_json(&text).unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(2)
    });
    let r = l4sim_core::sim::run(&sc).expect("runs");
    for f in &r.flows {
        println!(
            "{:<10} {:<8} {:>8.2} Mbit/s  qdelay {:>7.3} ms  retrans {}",
            f.name, f.cc, f.goodput_mbps, f.qdelay_ms, f.retrans
        );
    }
    println!(
        "{} bottleneck pkts, {} events in {:.3} s wall: {:.0} pkts/s, {:.0} events/s, {:.0}x real time",
        r.bottleneck_pkts,
        r.events,
        r.wall_seconds,
        r.bottleneck_pkts as f64 / r.wall_seconds,
        r.events as f64 / r.wall_seconds,
        r.sim_seconds / r.wall_seconds
    );
}
