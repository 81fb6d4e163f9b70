//! Python bindings: the `l4sim._core` extension module.
//!
//! A thin layer over `l4sim_core::sim`: the scenario goes in as JSON text, the result comes
//! back as JSON text (the Python package turns it into DataFrames). The simulation runs with
//! the GIL released, so a thread pool in Python can run several scenarios at once.
//! Bad input raises `l4sim._core.ScenarioError` (a `ValueError`) whose text is
//! `"FIELD: MESSAGE"` and which carries `field` and `message` attributes.

use l4sim_core::scenario::{Scenario, ScenarioError as CoreScenarioError};
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

create_exception!(
    l4sim._core,
    ScenarioError,
    PyValueError,
    "An invalid scenario. `field` is the dotted path of the bad key or value (e.g. \
     `flows[1].cc`, empty when the whole document is at fault), `message` says what is wrong."
);

/// Turn the core's error into the Python exception, with `field` and `message` attributes.
fn to_py_err(py: Python<'_>, e: CoreScenarioError) -> PyErr {
    let err = ScenarioError::new_err(e.to_string());
    let value = err.value(py);
    // Setting attributes on a fresh exception instance cannot fail in practice; if it did,
    // the text still carries the field, so the error is not lost.
    let _ = value.setattr("field", e.field);
    let _ = value.setattr("message", e.message);
    err
}

/// Run a scenario given as JSON and return the result as JSON.
///
/// The GIL is released while the simulation runs.
#[pyfunction]
fn run(py: Python<'_>, scenario_json: &str) -> PyResult<String> {
    let json = scenario_json.to_owned();
    py.allow_threads(move || l4sim_core::sim::run_json(&json))
        .map_err(|e| to_py_err(py, e))
}

/// Parse and validate a scenario given as JSON without running it.
#[pyfunction]
fn validate(py: Python<'_>, scenario_json: &str) -> PyResult<()> {
    Scenario::from_json(scenario_json)
        .map(|_| ())
        .map_err(|e| to_py_err(py, e))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("MODEL_VERSION", l4sim_core::sim::MODEL_VERSION)?;
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    Ok(())
}
