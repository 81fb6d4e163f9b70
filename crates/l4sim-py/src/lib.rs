//! Python bindings: the `l4sim._core` extension module.
//!
//! A thin layer over `l4sim_core::sim`: the scenario goes in as JSON text, the result comes
//! back as JSON text (the Python package turns it into DataFrames). The simulation runs with
//! the GIL released, so a thread pool in Python can run several scenarios at once.
//! Bad input raises `l4sim._core.ScenarioError` (a `ValueError`) whose text is
//! `"FIELD: MESSAGE"` and which carries `field` and `message` attributes.

use l4sim_core::qdisc::QdiscSpec;
use l4sim_core::scenario::{FlowSpec, Scenario, ScenarioError as CoreScenarioError};
use l4sim_core::sim::World;
use l4sim_core::time::{secs, to_secs};
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

/// Parse and validate a scenario given as JSON without running it: every check a run makes
/// before its first event, including building the network (tree links, flow pairs), so that
/// a scenario that validates never fails when it runs.
#[pyfunction]
fn validate(py: Python<'_>, scenario_json: &str) -> PyResult<()> {
    let sc = Scenario::from_json(scenario_json).map_err(|e| to_py_err(py, e))?;
    World::new(&sc).map(|_| ()).map_err(|e| to_py_err(py, e))
}

/// A simulation you can step: built from a scenario (core JSON), advanced with `run_until`,
/// read with `drain` (what happened since the previous drain) and changed between steps.
/// Times are seconds of simulated time. Python's `l4sim.Simulation` wraps it.
#[pyclass(module = "l4sim._core")]
struct Simulation {
    world: World,
    name: String,
    wall: f64,
}

fn bad(py: Python<'_>, field: &str, e: impl std::fmt::Display) -> PyErr {
    to_py_err(
        py,
        CoreScenarioError {
            field: field.into(),
            message: e.to_string(),
        },
    )
}

#[pymethods]
impl Simulation {
    #[new]
    fn new(py: Python<'_>, scenario_json: &str) -> PyResult<Self> {
        let sc = Scenario::from_json(scenario_json).map_err(|e| to_py_err(py, e))?;
        let world = World::new(&sc).map_err(|e| to_py_err(py, e))?;
        Ok(Simulation {
            world,
            name: sc.name,
            wall: 0.0,
        })
    }

    /// Simulated time now, s.
    #[getter]
    fn now(&self) -> f64 {
        to_secs(self.world.now())
    }

    /// The scenario's end time (its duration), s.
    #[getter]
    fn end(&self) -> f64 {
        to_secs(self.world.end())
    }

    /// Process every event up to time `t` (s); the GIL is released meanwhile.
    fn run_until(&mut self, py: Python<'_>, t: f64) -> PyResult<()> {
        if !(t.is_finite() && t >= 0.0) {
            return Err(bad(py, "t", format!("must be a time in seconds, got {t}")));
        }
        let target = secs(t);
        let world = &mut self.world;
        let wall = py.allow_threads(move || {
            let t0 = std::time::Instant::now();
            world.run_until(target);
            t0.elapsed().as_secs_f64()
        });
        self.wall += wall;
        Ok(())
    }

    /// What happened since the previous drain, as JSON; `forget`: then drop it from the
    /// simulation's memory (see `World::forget_drained`).
    #[pyo3(signature = (forget=false))]
    fn drain(&mut self, forget: bool) -> String {
        let out = self.world.drain().to_string();
        if forget {
            self.world.forget_drained();
        }
        out
    }

    /// Add a flow (a scenario flow table, core JSON) starting now or at its `start`.
    fn add_flow(&mut self, py: Python<'_>, flow_json: &str) -> PyResult<()> {
        let f: FlowSpec = serde_json::from_str(flow_json).map_err(|e| bad(py, "flow", e))?;
        self.world.add_flow(f).map_err(|e| to_py_err(py, e))
    }

    /// Stop a flow: no new transfers, its connections close at once.
    fn remove_flow(&mut self, py: Python<'_>, name: &str) -> PyResult<()> {
        self.world.remove_flow(name).map_err(|e| to_py_err(py, e))
    }

    /// Change a flow from now on (JSON object with cc, tcp, receiver, base_rtt, rate).
    fn set_flow(&mut self, py: Python<'_>, name: &str, changes_json: &str) -> PyResult<()> {
        let v: serde_json::Value =
            serde_json::from_str(changes_json).map_err(|e| bad(py, "changes", e))?;
        self.world.set_flow(name, &v).map_err(|e| to_py_err(py, e))
    }

    /// Change a shaped link (`None`: the dumbbell's bottleneck): rate (Mbit/s) and/or qdisc
    /// (core JSON; replaces the qdisc, its queued packets are dropped).
    #[pyo3(signature = (name=None, rate=None, qdisc_json=None))]
    fn set_link(
        &mut self,
        py: Python<'_>,
        name: Option<&str>,
        rate: Option<f64>,
        qdisc_json: Option<&str>,
    ) -> PyResult<()> {
        let q = match qdisc_json {
            Some(j) => Some(serde_json::from_str::<QdiscSpec>(j).map_err(|e| bad(py, "qdisc", e))?),
            None => None,
        };
        self.world
            .set_link(name, rate, q)
            .map_err(|e| to_py_err(py, e))
    }

    /// The results so far (the whole run's once it reached its end), as JSON.
    fn result(&self) -> String {
        let r = self.world.result(&self.name, self.wall);
        serde_json::to_string(&r).expect("results serialize")
    }
}

/// The names the core accepts, from its enums (one registry for Python and Rust):
/// `cc` (congestion controls), `cc_needs_ecn` (those whose sockets ask for ECN whatever
/// tcp_ecn says), `qdisc` (qdisc kinds), `source` (traffic source kinds), `topology`
/// (topology kinds) and `ecn_sysctl` (values of net.ipv4.tcp_ecn).
#[pyfunction]
fn registry() -> std::collections::BTreeMap<&'static str, Vec<String>> {
    use l4sim_core::registry as r;
    [
        ("cc", r::cc_names()),
        ("cc_needs_ecn", r::cc_needs_ecn()),
        ("qdisc", r::qdisc_kinds()),
        ("source", r::source_kinds()),
        ("topology", r::topology_kinds()),
        ("ecn_sysctl", r::ecn_sysctls()),
    ]
    .into_iter()
    .collect()
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("MODEL_VERSION", l4sim_core::sim::MODEL_VERSION)?;
    // How this extension was built: "release" (pip / maturin), or what
    // benchmarks/pgo_build.py set ("pgo", "pgo-native", "pgo-training").
    m.add("BUILD", option_env!("L4SIM_BUILD").unwrap_or("release"))?;
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add_class::<Simulation>()?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(registry, m)?)?;
    Ok(())
}
