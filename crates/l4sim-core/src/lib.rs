//! l4sim-core: a packet-level simulator of Linux TCP, ECN/L4S congestion controls and
//! qdiscs, for studying TCP Prague against classic traffic at a bottleneck.

pub mod cc;
pub mod engine;
pub mod metrics;
pub mod net;
pub mod packet;
pub mod qdisc;
pub mod registry;
pub mod rng;
pub mod scenario;
pub mod sim;
pub mod tcp;
pub mod time;
pub mod traffic;
