//! Running a scenario: build the topology and endpoints, run the engine to the end time,
//! collect the results.

use crate::metrics::results::RunResult;
use crate::scenario::{Scenario, ScenarioError};

/// Version of the model, recorded with every result (part of the results-store key).
pub const MODEL_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Run a validated scenario to completion.
pub fn run(_sc: &Scenario) -> RunResult {
    todo!("engine")
}

/// Parse, validate and run a JSON scenario; returns the JSON result.
pub fn run_json(json: &str) -> Result<String, ScenarioError> {
    let sc = Scenario::from_json(json)?;
    let r = run(&sc);
    Ok(serde_json::to_string(&r).expect("results serialize"))
}
