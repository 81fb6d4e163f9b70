//! The names the core accepts, read from the serde enums themselves so that there is one
//! definition of each: congestion controls (`CcSpec`), qdisc kinds (`QdiscSpec`), traffic
//! source kinds (`SourceSpec`), topology kinds (`TopologySpec`) and the values of
//! `net.ipv4.tcp_ecn` (`EcnSysctl`). The Python package's `CC_NAMES`, `QDISC_KINDS`, ...
//! come from here (`l4sim._core.registry()`), so Python can never reject what the core accepts.
//!
//! serde lists every variant it accepts when it rejects an unknown one ("unknown variant `x`,
//! expected one of `a`, `b`"); asking it with a name no variant has gives the list.

use serde::de::DeserializeOwned;
use serde_json::json;

use crate::cc::CcSpec;
use crate::qdisc::QdiscSpec;
use crate::scenario::TopologySpec;
use crate::tcp::EcnSysctl;
use crate::traffic::SourceSpec;

const PROBE: &str = "\u{1}no such variant\u{1}";

/// The variant names serde accepts for `T`, given the JSON value that asks for an unknown one.
fn variants<T: DeserializeOwned + std::fmt::Debug>(probe: serde_json::Value) -> Vec<String> {
    let err = serde_json::from_value::<T>(probe).expect_err("the probe name is no variant");
    let text = err.to_string();
    let list = text
        .split_once("expected one of ")
        .or_else(|| text.split_once("expected "))
        .map(|(_, rest)| rest)
        .unwrap_or_else(|| panic!("serde's unknown-variant message changed: {text}"));
    // serde words it "`a`", "`a` or `b`" or "one of `a`, `b`, `c`".
    list.split(", ")
        .flat_map(|s| s.split("` or `"))
        .map(|s| s.trim().trim_matches('`').to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// Congestion-control names (`flows[].cc.name`).
pub fn cc_names() -> Vec<String> {
    variants::<CcSpec>(json!({ "name": PROBE }))
}

/// The congestion controls that set `TCP_CONG_NEEDS_ECN`: their sockets ask for ECN whatever
/// `tcp_ecn` says (`tcp_ecn_send_syn`, `tcp_ca_needs_ecn`).
pub fn cc_needs_ecn() -> Vec<String> {
    use crate::cc::CongestionControl;
    cc_names()
        .into_iter()
        .filter(|n| {
            let spec: CcSpec = serde_json::from_value(json!({ "name": n })).expect("a listed CC");
            let cc = crate::cc::build(
                &spec,
                crate::time::Jiffies::new(250),
                crate::rng::Rng::new(1, 0),
            );
            cc.flags().needs_ecn
        })
        .collect()
}

/// Qdisc kinds (`qdisc.kind`).
pub fn qdisc_kinds() -> Vec<String> {
    variants::<QdiscSpec>(json!({ "kind": PROBE }))
}

/// Traffic source kinds (`flows[].source.kind`).
pub fn source_kinds() -> Vec<String> {
    variants::<SourceSpec>(json!({ "kind": PROBE }))
}

/// Topology kinds (`topology.kind`).
pub fn topology_kinds() -> Vec<String> {
    variants::<TopologySpec>(json!({ "kind": PROBE }))
}

/// Values of `net.ipv4.tcp_ecn` (`flows[].tcp.ecn`, `flows[].receiver.ecn`).
pub fn ecn_sysctls() -> Vec<String> {
    variants::<EcnSysctl>(json!(PROBE))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prague_and_dctcp_need_ecn() {
        assert_eq!(cc_needs_ecn(), ["dctcp", "prague"]);
    }

    #[test]
    fn every_listed_cc_parses_and_names_itself() {
        let names = cc_names();
        assert!(names.len() >= 7, "{names:?}");
        for n in &names {
            let s: CcSpec = serde_json::from_value(json!({ "name": n })).unwrap();
            assert_eq!(s.name(), n);
        }
    }

    #[test]
    fn every_listed_qdisc_kind_is_a_variant() {
        let kinds = qdisc_kinds();
        assert!(kinds.contains(&"dualpi2".to_string()), "{kinds:?}");
        for k in &kinds {
            // bfifo/pfifo need a limit; any error must be about the fields, not the kind.
            if let Err(e) = serde_json::from_value::<QdiscSpec>(json!({ "kind": k })) {
                assert!(!e.to_string().contains("unknown variant"), "{k}: {e}");
            }
        }
    }

    #[test]
    fn every_listed_source_kind_is_a_variant() {
        let kinds = source_kinds();
        assert_eq!(kinds[0], "bulk");
        for k in &kinds {
            if let Ok(s) = serde_json::from_value::<SourceSpec>(json!({ "kind": k })) {
                assert_eq!(s.kind(), k);
            } else {
                let e = serde_json::from_value::<SourceSpec>(json!({ "kind": k })).unwrap_err();
                assert!(!e.to_string().contains("unknown variant"), "{k}: {e}");
            }
        }
    }

    #[test]
    fn ecn_sysctls_and_topologies() {
        for v in ecn_sysctls() {
            serde_json::from_value::<EcnSysctl>(json!(v)).unwrap();
        }
        assert_eq!(topology_kinds(), vec!["dumbbell", "tree", "graph"]);
    }
}
