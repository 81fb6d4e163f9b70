//! Golden outputs: each `tests/golden/NAME.scenario.json` runs and its whole result (every
//! per-flow and per-qdisc figure and the time series, less the wall-clock time) must equal
//! `NAME.result.json` byte for byte. The scenarios cover every CC, every qdisc (the classful
//! ones, netem and wifi in `graph_every_kind`), every traffic source (there too, and the IETF-106
//! web mix in `ietf106_web_dualpi2`) and every topology kind with DSCP policy routes, so a
//! refactor or a speed change that alters any packet's fate fails here.
//!
//! A deliberate model change regenerates the files with `L4SIM_BLESS=1 cargo test --release
//! --test golden` and says in its commit what changed and why.

use std::path::PathBuf;

use l4sim_core::scenario::Scenario;

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// The result as canonical JSON text, without the wall-clock figure.
fn canonical(sc: &Scenario) -> String {
    let r = l4sim_core::sim::run(sc).expect("golden scenario runs");
    assert!(
        r.conservation_ok,
        "{}: packet conservation violated",
        sc.name
    );
    let mut v = serde_json::to_value(&r).unwrap();
    v.as_object_mut().unwrap().remove("wall_seconds");
    serde_json::to_string_pretty(&v).unwrap() + "\n"
}

#[test]
fn every_golden_scenario_reproduces_its_result_byte_for_byte() {
    let bless = std::env::var_os("L4SIM_BLESS").is_some();
    let mut names: Vec<PathBuf> = std::fs::read_dir(golden_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".scenario.json"))
        .collect();
    names.sort();
    assert!(names.len() >= 13, "golden scenarios missing");
    let mut failed = Vec::new();
    for path in names {
        let text = std::fs::read_to_string(&path).unwrap();
        let sc = Scenario::from_json(&text).unwrap_or_else(|e| panic!("{path:?}: {e}"));
        let got = canonical(&sc);
        let want_path = PathBuf::from(
            path.to_string_lossy()
                .replace(".scenario.json", ".result.json"),
        );
        if bless {
            std::fs::write(&want_path, &got).unwrap();
            continue;
        }
        let want = std::fs::read_to_string(&want_path)
            .unwrap_or_else(|_| panic!("{want_path:?} missing: bless with L4SIM_BLESS=1"));
        if got != want {
            let line = got
                .lines()
                .zip(want.lines())
                .position(|(a, b)| a != b)
                .map_or(0, |i| i + 1);
            failed.push(format!("{} (first difference at line {line})", sc.name));
        }
    }
    assert!(failed.is_empty(), "golden outputs changed: {failed:?}");
}
