//! Scenario configuration: the serde contract between Python (or a TOML file) and the core.
//!
//! Units follow the study: rates in Mbit/s, delays and RTTs in ms, durations in s.
//! Every struct denies unknown keys, and [`Scenario::validate`] checks values, so bad input
//! is rejected with the field and the value before anything runs.

use serde::{Deserialize, Serialize};

use crate::cc::CcSpec;
use crate::net::graph;
use crate::qdisc::dualpi2::DualPi2Filter;
use crate::qdisc::htb::HtbClassSpec;
use crate::qdisc::netem::{FourState, GilbertElliott};
use crate::qdisc::prio::DscpFilter;
use crate::qdisc::QdiscSpec;
use crate::tcp::TcpSpec;
use crate::traffic::dist::SizeDist;
use crate::traffic::SourceSpec;

/// `SOCK_MIN_RCVBUF`: Linux's smallest receive buffer (2 x (2048 + an aligned sk_buff)).
const SOCK_MIN_RCVBUF: u32 = 4608;

/// An invalid scenario: `field` is a dotted path such as `flows[1].cc`.
#[derive(Clone, Debug, PartialEq)]
pub struct ScenarioError {
    pub field: String,
    pub message: String,
}

impl std::fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.field.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.field, self.message)
        }
    }
}

impl std::error::Error for ScenarioError {}

fn err(field: impl Into<String>, message: impl Into<String>) -> ScenarioError {
    ScenarioError {
        field: field.into(),
        message: message.into(),
    }
}

/// A shaped egress's `rate` (Mbit/s) against its line's (None: no serialization). Linux keeps
/// what an HTB class sends faster than its device in the qdisc (the driver's full ring stops
/// the dequeues); the model's line has no such back-pressure, so the excess would wait
/// unmanaged in front of it. Scenario validation and `World::set_link` both ask.
pub fn check_shaping_rate(field: &str, rate: f64, line: Option<f64>) -> Result<(), ScenarioError> {
    match line.filter(|&l| rate > l) {
        Some(line) => Err(err(
            field,
            format!(
                "the shaping rate must not exceed the link's line rate ({line} Mbit/s), got \
                 {rate} Mbit/s (the model has no back-pressure from a busy line to the qdisc)"
            ),
        )),
        None => Ok(()),
    }
}

/// Deserialize `text` as `T`, reporting errors with their path below `prefix` and without
/// serde_json's "at line L column C" (the text is usually generated, not typed).
fn parse_at<T: serde::de::DeserializeOwned>(text: &str, prefix: &str) -> Result<T, ScenarioError> {
    let de = &mut serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let path = match (prefix.is_empty(), path == ".") {
            (_, true) => prefix.to_string(),
            (true, false) => path,
            (false, false) => format!("{prefix}.{path}"),
        };
        let inner = e.into_inner();
        let mut message = inner.to_string();
        if !(inner.is_syntax() || inner.is_eof()) {
            if let Some(i) = message.rfind(" at line ") {
                message.truncate(i);
            }
        }
        err(path, message)
    })
}

/// serde buffers internally tagged enums (`kind = ...`: the topology, qdiscs, sources), so an
/// error inside one names only where the enum starts. Narrow it down: parse the document again
/// without one key of that object at a time; the first whose removal changes the error holds
/// the bad value (serde raises it while visiting that key, before it checks for missing
/// fields), so descend into it, down to the value itself; the tag is tried last, as removing
/// it changes any error in its spec. In an array, the shortest prefix that keeps the error
/// ends with the bad element. A missing field is found by parsing the specs inside on their
/// own ([`locate_missing`]).
fn locate_in_tagged(text: &str, e: &ScenarioError) -> Option<ScenarioError> {
    use serde_json::Value;
    let doc: Value = serde_json::from_str(text).ok()?;
    if e.message.starts_with("missing field") {
        let at = pointer(&e.field);
        return locate_missing(doc.pointer(&at)?, &e.field, &e.message);
    }
    // The baseline is the re-serialized document's error (its keys may come in another order).
    let base = parse_at::<Scenario>(&doc.to_string(), "").err()?;
    if base.field != e.field {
        return None;
    }
    let without = |at: &str, child: &str| -> Option<Value> {
        let mut d = doc.clone();
        match d.pointer_mut(at)? {
            Value::Object(m) => drop(m.remove(child)?),
            _ => return None,
        }
        Some(d)
    };
    let changes = |at: &str, child: &str| {
        without(at, child)
            .is_some_and(|d| parse_at::<Scenario>(&d.to_string(), "").err() != Some(base.clone()))
    };
    let mut field = e.field.clone();
    let mut at = pointer(&field);
    loop {
        let tag = tag_key(&at, doc.pointer(&at)?);
        if let Some(named) = tag.and_then(|tag| not_a_name(&doc, &at, &field, tag)) {
            return Some(named);
        }
        let (child, array) = match doc.pointer(&at)? {
            // The tag last: removing it changes any error in its spec.
            Value::Object(m) => {
                let (tags, mut keys): (Vec<&String>, Vec<&String>) =
                    m.keys().partition(|k| Some(k.as_str()) == tag);
                keys.extend(tags);
                (keys.into_iter().find(|c| changes(&at, c)).cloned(), false)
            }
            // serde stops at an array's first bad element, so the shortest prefix that still
            // gives the error ends with it: a binary search, as traces and CDFs can be long.
            Value::Array(a) => {
                let keeps = |k: usize| {
                    let mut d = doc.clone();
                    if let Some(Value::Array(a)) = d.pointer_mut(&at) {
                        a.truncate(k);
                    }
                    parse_at::<Scenario>(&d.to_string(), "").err() == Some(base.clone())
                };
                let (mut lo, mut hi) = (0, a.len());
                while lo < hi {
                    let mid = (lo + hi) / 2;
                    if keeps(mid) {
                        hi = mid;
                    } else {
                        lo = mid + 1;
                    }
                }
                ((hi > 0).then(|| (hi - 1).to_string()), true)
            }
            _ => break,
        };
        let Some(child) = child else {
            break;
        };
        field = match (array, field.is_empty()) {
            (true, _) => format!("{field}[{child}]"),
            (false, true) => child.clone(),
            (false, false) => format!("{field}.{child}"),
        };
        at = format!("{at}/{child}");
    }
    (field != e.field).then(|| err(field, base.message))
}

/// The tag `tag` of the spec at JSON pointer `at` (field path `field`) if it is not a string,
/// as an error saying which names it may take.
fn not_a_name(doc: &serde_json::Value, at: &str, field: &str, tag: &str) -> Option<ScenarioError> {
    let tag_at = format!("{at}/{tag}");
    let v = doc.pointer(&tag_at).filter(|v| !v.is_string())?;
    let mut d = doc.clone();
    *d.pointer_mut(&tag_at)? = serde_json::Value::from("?");
    let e = parse_at::<Scenario>(&d.to_string(), "").err()?;
    let (_, names) = e.message.split_once("unknown variant `?`, expected ")?;
    let message = format!("unknown variant `{v}`, expected {names}");
    let field = if field.is_empty() {
        tag.to_string()
    } else {
        format!("{field}.{tag}")
    };
    Some(err(field, message))
}

/// serde reads a number as an internally tagged enum's tag by its variant index (`kind = 7`
/// would be the eighth qdisc kind): every tag under `v` must be a name.
fn check_tags(
    doc: &serde_json::Value,
    v: &serde_json::Value,
    at: &str,
    field: &str,
) -> Result<(), ScenarioError> {
    use serde_json::Value;
    if let Some(e) = tag_key(at, v).and_then(|tag| not_a_name(doc, at, field, tag)) {
        return Err(e);
    }
    match v {
        Value::Object(m) => m.iter().try_for_each(|(k, c)| {
            let f = if field.is_empty() {
                k.clone()
            } else {
                format!("{field}.{k}")
            };
            check_tags(doc, c, &format!("{at}/{k}"), &f)
        }),
        Value::Array(a) => a.iter().enumerate().try_for_each(|(i, c)| {
            check_tags(doc, c, &format!("{at}/{i}"), &format!("{field}[{i}]"))
        }),
        _ => Ok(()),
    }
}

/// The key that tags the enum spec at JSON pointer `at`, if it is one: `kind` (topologies,
/// qdiscs, sources), `dist` (sizes) or a congestion control's `name`.
fn tag_key(at: &str, v: &serde_json::Value) -> Option<&'static str> {
    let m = v.as_object()?;
    ["kind", "dist"]
        .into_iter()
        .find(|k| m.contains_key(*k))
        .or((at.ends_with("/cc") && m.contains_key("name")).then_some("name"))
}

/// A field path as a JSON pointer: "flows[0].source" -> "/flows/0/source".
fn pointer(field: &str) -> String {
    field
        .split('.')
        .filter(|s| !s.is_empty())
        .flat_map(|s| s.split('['))
        .map(|p| format!("/{}", p.trim_end_matches(']')))
        .collect()
}

/// The innermost spec under `v` that, parsed on its own, misses the same field: a qdisc
/// (`qdisc`, `child`, `children[i]`), `source`, `size`, `bottleneck`, netem's `gemodel` or
/// `loss_state`, or an element of `bottlenecks`, `links`, `nodes`, `routes`, an HTB's
/// `classes` or a prio's `filters`.
fn locate_missing(v: &serde_json::Value, field: &str, message: &str) -> Option<ScenarioError> {
    use serde_json::Value;
    fn parse_as<T: serde::de::DeserializeOwned>(v: &Value, f: &str) -> Result<(), ScenarioError> {
        parse_at::<T>(&v.to_string(), f).map(drop)
    }
    let alone = |key: &str, array: bool, c: &Value, f: &str| -> Option<ScenarioError> {
        match (key, array) {
            ("qdisc" | "child", false) | ("children", true) => parse_as::<QdiscSpec>(c, f),
            ("source", false) => parse_as::<SourceSpec>(c, f),
            ("size", false) => parse_as::<SizeDist>(c, f),
            ("bottleneck", false) => parse_as::<BottleneckSpec>(c, f),
            ("bottlenecks", true) => parse_as::<TreeBottleneck>(c, f),
            ("links", true) => parse_as::<graph::LinkSpec>(c, f),
            ("nodes", true) => parse_as::<graph::NodeSpec>(c, f),
            ("routes", true) => parse_as::<graph::PolicyRoute>(c, f),
            ("classes", true) => parse_as::<HtbClassSpec>(c, f),
            // prio's filters name a band, DualPI2's a class
            ("filters", true) => match parse_as::<DscpFilter>(c, f) {
                Err(e) if e.message == message => Err(e),
                _ => parse_as::<DualPi2Filter>(c, f),
            },
            ("gemodel", false) => parse_as::<GilbertElliott>(c, f),
            ("loss_state", false) => parse_as::<FourState>(c, f),
            _ => return None,
        }
        .err()
    };
    // (path, value, key or, for an array element, the array's key, is an element)
    let children: Vec<(String, &Value, &str, bool)> = match v {
        Value::Object(m) => m
            .iter()
            .map(|(k, c)| {
                let f = if field.is_empty() {
                    k.clone()
                } else {
                    format!("{field}.{k}")
                };
                (f, c, k.as_str(), false)
            })
            .collect(),
        Value::Array(a) => {
            let key = field.rsplit('.').next().unwrap_or("");
            let key = key.split('[').next().unwrap_or(key);
            a.iter()
                .enumerate()
                .map(|(i, c)| (format!("{field}[{i}]"), c, key, true))
                .collect()
        }
        _ => return None,
    };
    for (f, c, key, array) in children {
        if let Some(inner) = locate_missing(c, &f, message) {
            return Some(inner);
        }
        if let Some(e) = alone(key, array, c, &f).filter(|e| e.message == message) {
            return Some(e);
        }
    }
    None
}

fn default_seed() -> u64 {
    1
}
fn default_sample_interval() -> f64 {
    0.1
}
/// The finest time-series step, s: every flow and qdisc is sampled at each step and the run
/// keeps them all, so a step given in the wrong unit (1e-9) would fill memory. Per-packet
/// delays are in the histograms and the per-packet records, not the series.
pub const MIN_SAMPLE_INTERVAL: f64 = 1e-3;
fn default_nic_rate() -> f64 {
    10_000.0
}

/// One simulation run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    #[serde(default)]
    pub name: String,
    /// Seed of every random stream in the run.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Simulated time, s (the iperf3 `-t`).
    pub duration: f64,
    /// Resolution of the time series, s.
    #[serde(default = "default_sample_interval")]
    pub sample_interval: f64,
    pub topology: TopologySpec,
    pub flows: Vec<FlowSpec>,
}

/// The network.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum TopologySpec {
    /// The study's testbed: senders -> delay node (netem, half the base RTT each way) ->
    /// router (HTB shaper at the bottleneck rate, qdisc under test as its child) -> receivers.
    Dumbbell {
        /// Base RTT, ms (netem adds half in each direction); flows may override it.
        base_rtt: f64,
        bottleneck: BottleneckSpec,
        /// Line rate of the hosts' and routers' NICs, Mbit/s.
        #[serde(default = "default_nic_rate")]
        nic_rate: f64,
    },
    /// The multi-bottleneck tree: sender pairs -> group-of-four routers -> root -> mirrored
    /// toward the receivers. `bottlenecks` places a shaper + qdisc on named links.
    Tree {
        base_rtt: f64,
        /// Number of sender/receiver pairs (a multiple of 4, 12 in the study).
        pairs: u32,
        #[serde(default = "default_nic_rate")]
        nic_rate: f64,
        bottlenecks: Vec<TreeBottleneck>,
    },
    /// Any network: named hosts and routers, links, shaped egresses, policy routes
    /// ([`crate::net::graph`]). Flows name their `from` and `to` hosts.
    Graph(crate::net::graph::GraphSpec),
}

/// A shaped egress: HTB class at `rate` with `qdisc` as its child.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BottleneckSpec {
    /// Mbit/s.
    pub rate: f64,
    pub qdisc: QdiscSpec,
    /// HTB burst, bytes. Default: one MTU-sized frame (a constant-rate server).
    #[serde(default)]
    pub burst: Option<u32>,
}

/// A bottleneck on a tree link. `link` names the data egress: "up_pair{j}" / "down_pair{j}"
/// (pair router j), "up_agg{k}" (group-of-four router k -> root) / "down_agg{k}" (root ->
/// the receivers' group router k); see [`crate::net::topology::tree`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TreeBottleneck {
    pub link: String,
    #[serde(flatten)]
    pub spec: BottleneckSpec,
}

fn default_streams() -> u32 {
    1
}
/// Parallel streams a scenario may hold in all (iperf3's `-P` stops at 128): each is a
/// connection of a few kB, so 1e8 given by mistake would fill memory before the first event.
pub const MAX_STREAMS: u64 = 100_000;
/// Sender/receiver pairs of the tree topology: each brings hosts, links and routes, built
/// before the first event (4e6 asked for 3 GB at once).
pub const MAX_TREE_PAIRS: u32 = 10_000;

fn is_zero(v: &u8) -> bool {
    *v == 0
}

fn is_bulk(s: &SourceSpec) -> bool {
    s.is_bulk()
}

/// One sender with its receiver: an iperf3 client by default, or another traffic source.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    pub name: String,
    /// Sender's congestion control (default cubic, Linux's), for every connection it opens.
    #[serde(default)]
    pub cc: CcSpec,
    /// What the flow sends (default: bulk, an iperf3 transfer).
    #[serde(default, skip_serializing_if = "is_bulk")]
    pub source: SourceSpec,
    /// Sender host settings.
    #[serde(default)]
    pub tcp: TcpSpec,
    /// Receiver host settings.
    #[serde(default)]
    pub receiver: ReceiverSpec,
    /// Parallel streams (iperf3 `-P`); goodput is summed over them.
    #[serde(default = "default_streams")]
    pub streams: u32,
    /// Start time, s.
    #[serde(default)]
    pub start: f64,
    /// Bytes per stream; absent: bulk transfer for the whole run.
    #[serde(default)]
    pub size: Option<u64>,
    /// Base RTT of this flow, ms (dumbbell: overrides the topology's).
    #[serde(default)]
    pub base_rtt: Option<f64>,
    /// Tree: sender/receiver pair index this flow uses.
    #[serde(default)]
    pub pair: Option<u32>,
    /// When the flow ends, s: its source stops and its connections close at once (as
    /// `Simulation.remove_flow`); absent: at the end of the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<f64>,
    /// Graph topology: the sender's and the receiver's host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// DSCP of the packets its senders send (0..63; `IP_TOS` = dscp << 2), for `prio`
    /// filters and policy routes.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dscp: u8,
}

/// Receiver side of a flow.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReceiverSpec {
    /// The receiving socket's congestion control (decides AccECN acceptance for Prague
    /// listeners and DCTCP-style CE echo). Default: cubic's flags (plain Linux receiver).
    pub cc: Option<CcSpec>,
    pub tcp: TcpSpec,
}

impl FlowSpec {
    /// The source's own parameters, and the flow keys that only a bulk flow takes.
    pub fn validate_source(&self, p: &str) -> Result<(), ScenarioError> {
        self.source
            .validate()
            .map_err(|(f, m)| err(format!("{p}.source.{f}"), m))?;
        if !self.source.is_bulk() {
            let kind = self.source.kind();
            if self.size.is_some() {
                return Err(err(
                    format!("{p}.size"),
                    format!("applies to bulk flows only; a {kind} source sizes its own transfers"),
                ));
            }
            if self.streams != 1 {
                return Err(err(
                    format!("{p}.streams"),
                    format!(
                        "applies to bulk flows only, got {} for a {kind} source",
                        self.streams
                    ),
                ));
            }
        }
        Ok(())
    }
}

impl Scenario {
    /// Parse JSON, reporting the path of a bad key or value.
    pub fn from_json(s: &str) -> Result<Scenario, ScenarioError> {
        if let Ok(doc) = serde_json::from_str::<serde_json::Value>(s) {
            check_tags(&doc, &doc, "", "")?;
        }
        let sc: Scenario = parse_at(s, "").map_err(|e| locate_in_tagged(s, &e).unwrap_or(e))?;
        sc.validate()?;
        Ok(sc)
    }

    /// Check every value; the first problem found is returned.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        fn pos(field: &str, v: f64) -> Result<(), ScenarioError> {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err(err(field, format!("must be a positive number, got {v}")))
            }
        }
        /// A link rate in Mbit/s: positive and at least 1 bit/s once rounded (`Rate::mbps`),
        /// else serialisation times divide by zero.
        fn rate(field: &str, v: f64) -> Result<(), ScenarioError> {
            if v.is_finite() && v * 1e6 >= 1.0 {
                Ok(())
            } else {
                Err(err(
                    field,
                    format!("must be a rate of at least 1 bit/s (1e-6 Mbit/s), got {v}"),
                ))
            }
        }
        fn nonneg(field: &str, v: f64) -> Result<(), ScenarioError> {
            if v.is_finite() && v >= 0.0 {
                Ok(())
            } else {
                Err(err(field, format!("must be zero or positive, got {v}")))
            }
        }
        pos("duration", self.duration)?;
        pos("sample_interval", self.sample_interval)?;
        if self.sample_interval < MIN_SAMPLE_INTERVAL {
            return Err(err(
                "sample_interval",
                format!(
                    "{:?} s is below the finest time-series step, {MIN_SAMPLE_INTERVAL} s (1 ms)",
                    self.sample_interval
                ),
            ));
        }
        // `line`: the link's line rate, Mbit/s (None: no serialization).
        let check_btl = |prefix: &str,
                         b: &BottleneckSpec,
                         line: Option<f64>|
         -> Result<(), ScenarioError> {
            rate(&format!("{prefix}.rate"), b.rate)?;
            check_shaping_rate(&format!("{prefix}.rate"), b.rate, line)?;
            b.qdisc
                .validate()
                .map_err(|(f, m)| err(format!("{prefix}.qdisc.{f}"), m))?;
            if let crate::qdisc::QdiscSpec::Wifi(w) = &b.qdisc {
                if b.rate < w.phy_rate_mbps {
                    return Err(err(
                            format!("{prefix}.rate"),
                            format!(
                                "{} Mbit/s is below the wifi qdisc's phy_rate_mbps {}: the shaper, not \
                                 the air, would set the hop's pace (give a rate of at least the PHY rate)",
                                b.rate, w.phy_rate_mbps
                            ),
                        ));
                }
            }
            if let Some(burst) = b.burst {
                if burst < crate::packet::hdr::PSCHED_MTU {
                    return Err(err(
                        format!("{prefix}.burst"),
                        format!("HTB burst {burst} bytes is below one MTU (1514 bytes)"),
                    ));
                }
            }
            Ok(())
        };
        match &self.topology {
            TopologySpec::Dumbbell {
                base_rtt,
                bottleneck,
                nic_rate,
            } => {
                nonneg("topology.base_rtt", *base_rtt)?;
                rate("topology.nic_rate", *nic_rate)?;
                check_btl("topology.bottleneck", bottleneck, Some(*nic_rate))?;
            }
            TopologySpec::Tree {
                base_rtt,
                pairs,
                nic_rate,
                bottlenecks,
            } => {
                nonneg("topology.base_rtt", *base_rtt)?;
                rate("topology.nic_rate", *nic_rate)?;
                if *pairs == 0 || pairs % 4 != 0 {
                    return Err(err(
                        "topology.pairs",
                        format!("must be a positive multiple of 4, got {pairs}"),
                    ));
                }
                if *pairs > MAX_TREE_PAIRS {
                    return Err(err(
                        "topology.pairs",
                        format!("{pairs} pairs is beyond what a run can hold (at most {MAX_TREE_PAIRS}; the study's tree has 12)"),
                    ));
                }
                for (i, b) in bottlenecks.iter().enumerate() {
                    check_btl(
                        &format!("topology.bottlenecks[{i}]"),
                        &b.spec,
                        Some(*nic_rate),
                    )?;
                }
            }
            TopologySpec::Graph(g) => {
                g.validate(&check_btl)?;
                for (i, f) in self.flows.iter().enumerate() {
                    crate::net::graph::endpoints(g, f, &format!("flows[{i}]"))?;
                    if f.base_rtt.is_some() {
                        return Err(err(
                            format!("flows[{i}].base_rtt"),
                            "a graph flow's RTT is its path's links' delay_ms; base_rtt applies to the dumbbell and the tree",
                        ));
                    }
                }
            }
        }
        if let Some(i) = self.flows.iter().position(|f| f.pair.is_some()) {
            if !matches!(self.topology, TopologySpec::Tree { .. }) {
                return Err(err(
                    format!("flows[{i}].pair"),
                    "picks a host pair of the tree; this topology gives each flow its own hosts \
                     (a graph flow names them with from/to)",
                ));
            }
        }
        if !matches!(self.topology, TopologySpec::Graph(_)) {
            if let Some(i) = self
                .flows
                .iter()
                .position(|f| f.from.is_some() || f.to.is_some())
            {
                return Err(err(
                    format!("flows[{i}].from"),
                    "from/to name hosts of a graph topology; this topology places flows itself",
                ));
            }
        }
        if self.flows.is_empty() {
            return Err(err("flows", "at least one flow is needed"));
        }
        let mut names = std::collections::HashSet::new();
        let mut streams = 0u64;
        for (i, f) in self.flows.iter().enumerate() {
            let p = format!("flows[{i}]");
            if f.name.is_empty() {
                return Err(err(format!("{p}.name"), "must not be empty"));
            }
            if !names.insert(f.name.as_str()) {
                return Err(err(
                    format!("{p}.name"),
                    format!("duplicate flow name {:?}", f.name),
                ));
            }
            if let Some(stop) = f.stop {
                if !(stop.is_finite() && stop > f.start) {
                    return Err(err(
                        format!("{p}.stop"),
                        format!("must be after the flow's start ({} s), got {stop}", f.start),
                    ));
                }
            }
            if f.dscp > 63 {
                return Err(err(
                    format!("{p}.dscp"),
                    format!("a DSCP is 0..63, got {}", f.dscp),
                ));
            }
            if f.streams == 0 {
                return Err(err(format!("{p}.streams"), "must be at least 1, got 0"));
            }
            streams += f.streams as u64;
            if streams > MAX_STREAMS {
                return Err(err(
                    format!("{p}.streams"),
                    format!(
                        "{} streams bring the scenario to {streams}; at most {MAX_STREAMS} parallel \
                         streams in all",
                        f.streams
                    ),
                ));
            }
            nonneg(&format!("{p}.start"), f.start)?;
            if f.start >= self.duration {
                return Err(err(
                    format!("{p}.start"),
                    format!(
                        "{} s is not before the end of the run ({} s)",
                        f.start, self.duration
                    ),
                ));
            }
            if let Some(r) = f.base_rtt {
                nonneg(&format!("{p}.base_rtt"), r)?;
            }
            if f.size == Some(0) {
                return Err(err(format!("{p}.size"), "must be at least 1 byte, got 0"));
            }
            f.validate_source(&p)?;
            for (side, cc) in [("cc", Some(&f.cc)), ("receiver.cc", f.receiver.cc.as_ref())] {
                cc.map_or(Ok(()), CcSpec::validate)
                    .map_err(|(k, m)| err(format!("{p}.{side}.{k}"), m))?;
            }
            for (side, t) in [("tcp", &f.tcp), ("receiver.tcp", &f.receiver.tcp)] {
                if t.init_cwnd == 0 {
                    return Err(err(
                        format!("{p}.{side}.init_cwnd"),
                        "must be at least 1, got 0",
                    ));
                }
                pos(&format!("{p}.{side}.rto_min_ms"), t.rto_min_ms)?;
                if t.hz == 0 {
                    return Err(err(format!("{p}.{side}.hz"), "must be at least 1, got 0"));
                }
                if let Some(us) = t.jiffies_phase_us {
                    nonneg(&format!("{p}.{side}.jiffies_phase_us"), us)?;
                }
                for (k, v) in [
                    ("pacing_ss_ratio", t.pacing_ss_ratio),
                    ("pacing_ca_ratio", t.pacing_ca_ratio),
                ] {
                    if v == 0 {
                        return Err(err(
                            format!("{p}.{side}.{k}"),
                            "must be a positive percentage, got 0",
                        ));
                    }
                }
                nonneg(
                    &format!("{p}.{side}.comp_sack_delay_us"),
                    t.comp_sack_delay_us,
                )?;
                let [lo, def, hi] = t.rmem;
                if lo > def || def > hi || def < SOCK_MIN_RCVBUF {
                    return Err(err(
                        format!("{p}.{side}.rmem"),
                        format!(
                            "must be [min, default, max] bytes with min <= default <= max and \
                             default at least {SOCK_MIN_RCVBUF}, got [{lo}, {def}, {hi}]"
                        ),
                    ));
                }
                if let Some(m) = t.mss.filter(|m| !(88..=9000).contains(m)) {
                    return Err(err(
                        format!("{p}.{side}.mss"),
                        format!("must be in 88..=9000, got {m}"),
                    ));
                }
                if !matches!(t.ecn_option, 0 | 2) {
                    return Err(err(
                        format!("{p}.{side}.ecn_option"),
                        format!(
                            "must be 0 (never send the AccECN option) or 2 (on every segment \
                             with room, the Linux default), got {}",
                            t.ecn_option
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: &str = r#"{
        "duration": 10, "seed": 3,
        "topology": {"kind": "dumbbell", "base_rtt": 10,
                     "bottleneck": {"rate": 100, "qdisc": {"kind": "bfifo", "limit": 250000}}},
        "flows": [{"name": "a", "cc": {"name": "reno"}}]
    }"#;

    #[test]
    fn a_valid_scenario_parses() {
        let s = Scenario::from_json(OK).unwrap();
        assert_eq!(s.seed, 3);
        assert_eq!(s.flows[0].streams, 1);
    }

    #[test]
    fn a_rate_below_one_bit_per_second_is_an_error_not_a_division_by_zero() {
        let bad = OK.replace("\"rate\": 100", "\"rate\": 1e-9");
        let e = Scenario::from_json(&bad).unwrap_err();
        assert_eq!(e.field, "topology.bottleneck.rate", "{e}");
        let ok = OK.replace("\"rate\": 100", "\"rate\": 1e-6");
        Scenario::from_json(&ok).unwrap();
    }

    #[test]
    fn a_sample_interval_below_1_ms_is_an_error_not_a_memory_flood() {
        let bad = OK.replace("\"seed\": 3", "\"seed\": 3, \"sample_interval\": 1e-9");
        let e = Scenario::from_json(&bad).unwrap_err();
        assert_eq!(e.field, "sample_interval", "{e}");
        let ok = OK.replace("\"seed\": 3", "\"seed\": 3, \"sample_interval\": 0.001");
        Scenario::from_json(&ok).unwrap();
    }

    /// Settings that would be ignored or make a run useless are errors naming the field.
    #[test]
    fn what_would_be_ignored_or_empty_is_an_error() {
        let flow = |extra: &str| {
            OK.replace(
                r#"[{"name": "a", "cc": {"name": "reno"}}]"#,
                &format!(r#"[{{"name": "a", {extra}}}]"#),
            )
        };
        for (extra, field) in [
            (
                r#""source": {"kind": "bulk", "foo": 5}"#,
                "flows[0].source.foo",
            ),
            (r#""source": {"kind": "web"}"#, "flows[0].source.rate"),
            (
                r#""source": {"kind": "web", "rate": 5, "trace": [[0, 1000]]}"#,
                "flows[0].source.rate",
            ),
            (
                r#""source": {"kind": "udp_prague", "max_rate_mbps": 5, "start_rate_mbps": 6}"#,
                "flows[0].source.start_rate_mbps",
            ),
            (r#""pair": 1"#, "flows[0].pair"),
            (
                r#""cc": {"name": "prague", "ecn_fallback": 7}"#,
                "flows[0].cc.ecn_fallback",
            ),
            (r#""cc": {"name": "cubic", "beta": 0}"#, "flows[0].cc.beta"),
            (
                r#""receiver": {"cc": {"name": "cubic", "bic_scale": 0}}"#,
                "flows[0].receiver.cc.bic_scale",
            ),
        ] {
            let e = Scenario::from_json(&flow(extra)).unwrap_err();
            assert_eq!(e.field, field, "{extra}: {e}");
        }
        Scenario::from_json(&flow(r#""source": {"kind": "web", "trace": [[0, 1000]]}"#)).unwrap();
        Scenario::from_json(&flow(r#""cc": {"name": "cubic", "beta": 1024}"#)).unwrap();
        let wifi = OK.replace(
            r#"{"kind": "bfifo", "limit": 250000}"#,
            r#"{"kind": "wifi", "phy_rate_mbps": 300}"#,
        );
        let e = Scenario::from_json(&wifi).unwrap_err();
        assert_eq!(e.field, "topology.bottleneck.rate", "{e}");
        Scenario::from_json(&wifi.replace("\"rate\": 100", "\"rate\": 300")).unwrap();
        let red = OK.replace(
            r#"{"kind": "bfifo", "limit": 250000}"#,
            r#"{"kind": "red", "limit": 1000, "min": 300, "max": 900}"#,
        );
        let e = Scenario::from_json(&red).unwrap_err();
        assert_eq!(e.field, "topology.bottleneck.qdisc.limit", "{e}");
    }

    #[test]
    fn more_than_100000_streams_in_all_is_an_error_naming_the_flow() {
        let two = OK.replace(
            r#"[{"name": "a", "cc": {"name": "reno"}}]"#,
            r#"[{"name": "a", "cc": {"name": "reno"}, "streams": 60000},
                {"name": "b", "cc": {"name": "reno"}, "streams": 40001}]"#,
        );
        let e = Scenario::from_json(&two).unwrap_err();
        assert_eq!(e.field, "flows[1].streams", "{e}");
        Scenario::from_json(&two.replace("40001", "40000")).unwrap();
    }

    #[test]
    fn sizes_that_would_fill_memory_before_the_first_event_are_errors() {
        let batch = |n: u64| {
            OK.replace(
                r#""cc": {"name": "reno"}}"#,
                &format!(
                    r#""cc": {{"name": "reno"}}, "source": {{"kind": "messages", "rate": 10,
                       "batch_max": {n}, "message_size": 1000}}}}"#
                ),
            )
        };
        let e = Scenario::from_json(&batch(MAX_STREAMS + 1)).unwrap_err();
        assert_eq!(e.field, "flows[0].source.batch_max", "{e}");
        Scenario::from_json(&batch(MAX_STREAMS)).unwrap();
        let tree = |pairs: u32| {
            OK.replace(
                r#"{"kind": "dumbbell", "base_rtt": 10,
                     "bottleneck": {"rate": 100, "qdisc": {"kind": "bfifo", "limit": 250000}}}"#,
                &format!(
                    r#"{{"kind": "tree", "base_rtt": 10, "pairs": {pairs}, "bottlenecks": []}}"#
                ),
            )
        };
        let e = Scenario::from_json(&tree(4_000_000)).unwrap_err();
        assert_eq!(e.field, "topology.pairs", "{e}");
        Scenario::from_json(&tree(MAX_TREE_PAIRS)).unwrap();
    }

    #[test]
    fn a_bottleneck_faster_than_its_nic_is_an_error() {
        // The dumbbell's bottleneck line runs at nic_rate (10 Gbit/s by default).
        let bad = OK.replace("\"rate\": 100", "\"rate\": 20000");
        let e = Scenario::from_json(&bad).unwrap_err();
        assert_eq!(e.field, "topology.bottleneck.rate", "{e}");
        assert!(
            e.message.contains("10000 Mbit/s") && e.message.contains("20000"),
            "{e}"
        );
        let ok = OK.replace("\"rate\": 100", "\"rate\": 10000");
        assert!(Scenario::from_json(&ok).is_ok());
    }

    #[test]
    fn unknown_key_names_its_path() {
        let bad = OK.replace("\"seed\": 3", "\"sed\": 3");
        let e = Scenario::from_json(&bad).unwrap_err();
        assert!(e.message.contains("sed"), "{e}");
    }

    #[test]
    fn unknown_cc_names_the_field_and_value() {
        let bad = OK.replace("\"reno\"", "\"vegas\"");
        let e = Scenario::from_json(&bad).unwrap_err();
        assert!(e.field.starts_with("flows[0].cc"), "{e}");
        assert!(e.message.contains("vegas"), "{e}");
    }

    #[test]
    fn unknown_qdisc_parameter_names_its_full_path() {
        let bad = OK.replace("\"limit\": 250000", "\"limt\": 250000");
        let e = Scenario::from_json(&bad).unwrap_err();
        assert_eq!(e.field, "topology.bottleneck.qdisc.limt", "{e}");
        assert!(e.message.contains("limt"), "{e}");
        assert!(!e.message.contains("line 1"), "{e}");
    }

    #[test]
    fn unknown_qdisc_kind_names_the_qdisc() {
        let bad = OK.replace("\"bfifo\"", "\"sfq\"");
        let e = Scenario::from_json(&bad).unwrap_err();
        assert_eq!(e.field, "topology.bottleneck.qdisc.kind", "{e}");
        assert!(e.message.contains("sfq"), "{e}");
    }

    #[test]
    fn a_kind_given_as_a_number_is_an_error_not_the_nth_kind() {
        // serde would read `"kind": 0` as the first qdisc kind (bfifo) and `"dist": 1` as the
        // second size distribution.
        let bad = OK.replace("\"kind\": \"bfifo\"", "\"kind\": 0");
        let e = Scenario::from_json(&bad).unwrap_err();
        assert_eq!(e.field, "topology.bottleneck.qdisc.kind", "{e}");
        assert!(
            e.message.contains("`0`") && e.message.contains("bfifo"),
            "{e}"
        );
        let size = OK.replace(
            r#""cc": {"name": "reno"}}"#,
            r#""cc": {"name": "reno"}, "source": {"kind": "web", "rate": 5,
               "size": {"dist": 1, "alpha": 1.2, "min": 1000, "max": 100000}}}"#,
        );
        let e = Scenario::from_json(&size).unwrap_err();
        assert_eq!(e.field, "flows[0].source.size.dist", "{e}");
        Scenario::from_json(&size.replace("\"dist\": 1", "\"dist\": \"pareto\"")).unwrap();
        let e = Scenario::from_json(&OK.replace("\"dumbbell\"", "0")).unwrap_err();
        assert_eq!(e.field, "topology.kind", "{e}");
        let e = Scenario::from_json(&OK.replace("\"reno\"", "2")).unwrap_err();
        assert_eq!(e.field, "flows[0].cc.name", "{e}");
    }

    #[test]
    fn zero_hz_is_rejected_with_its_path() {
        let bad = OK.replace(
            "\"cc\": {\"name\": \"reno\"}",
            "\"cc\": {\"name\": \"reno\"}, \"tcp\": {\"hz\": 0}",
        );
        let e = Scenario::from_json(&bad).unwrap_err();
        assert_eq!(e.field, "flows[0].tcp.hz", "{e}");
    }

    #[test]
    fn a_negative_tick_phase_is_rejected_with_its_path() {
        let bad = OK.replace(
            "\"cc\": {\"name\": \"reno\"}",
            "\"cc\": {\"name\": \"reno\"}, \"receiver\": {\"tcp\": {\"jiffies_phase_us\": -1}}",
        );
        let e = Scenario::from_json(&bad).unwrap_err();
        assert_eq!(e.field, "flows[0].receiver.tcp.jiffies_phase_us", "{e}");
    }

    #[test]
    fn an_unmodelled_ecn_option_mode_names_the_field_and_value() {
        let with = |v: u32| {
            OK.replace(
                "\"cc\": {\"name\": \"reno\"}",
                &format!(
                    "\"cc\": {{\"name\": \"reno\"}}, \"receiver\": {{\"tcp\": {{\"ecn_option\": {v}}}}}"
                ),
            )
        };
        let e = Scenario::from_json(&with(1)).unwrap_err();
        assert_eq!(e.field, "flows[0].receiver.tcp.ecn_option", "{e}");
        assert!(e.message.contains("got 1"), "{e}");
        Scenario::from_json(&with(0)).unwrap();
        Scenario::from_json(&with(2)).unwrap();
    }

    #[test]
    fn a_receive_buffer_out_of_order_or_too_small_names_rmem() {
        for (rmem, ok) in [
            ("[4096, 131072, 6291456]", true),
            ("[4096, 8388608, 6291456]", false),
            ("[4096, 1000, 6291456]", false),
        ] {
            let s = OK.replace(
                "\"cc\": {\"name\": \"reno\"}",
                &format!("\"cc\": {{\"name\": \"reno\"}}, \"receiver\": {{\"tcp\": {{\"rmem\": {rmem}}}}}"),
            );
            match Scenario::from_json(&s) {
                Ok(_) => assert!(ok, "{rmem} accepted"),
                Err(e) => {
                    assert!(!ok, "{rmem}: {e}");
                    assert_eq!(e.field, "flows[0].receiver.tcp.rmem", "{e}");
                    assert!(e.message.contains("got ["), "{e}");
                }
            }
        }
    }

    #[test]
    fn negative_rate_is_rejected() {
        let bad = OK.replace("\"rate\": 100", "\"rate\": -5");
        let e = Scenario::from_json(&bad).unwrap_err();
        assert_eq!(e.field, "topology.bottleneck.rate");
        assert!(e.message.contains("-5"), "{e}");
    }

    #[test]
    fn buffer_below_one_mtu_is_rejected() {
        let bad = OK.replace("250000", "1000");
        let e = Scenario::from_json(&bad).unwrap_err();
        assert_eq!(e.field, "topology.bottleneck.qdisc.limit");
        assert!(e.message.contains("1000"), "{e}");
    }
}
