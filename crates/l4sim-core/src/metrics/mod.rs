//! Measurements collected while a run goes: counters, fixed-size histograms and
//! fixed-interval samples, so memory does not grow with the number of packets.

pub mod hist;
pub mod results;
