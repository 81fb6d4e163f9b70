//! `udp`: unresponsive UDP at a constant bit rate, or on/off (alternating `on` and `off`
//! periods of fixed length), with a fixed ECN codepoint. The rate counts UDP payload bits,
//! as an application sets it; packets leave at exact intervals (no jitter).

use serde::{Deserialize, Serialize};

use super::{positive, stop_time};
use crate::packet::{hdr, skb, Dir, Ecn, Packet};
use crate::time::{secs, SimTime, NEVER};

/// UDP header bytes.
pub const UDP_HDR: u32 = 8;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Codepoint {
    #[default]
    NotEct,
    Ect0,
    Ect1,
    Ce,
}

impl From<Codepoint> for Ecn {
    fn from(c: Codepoint) -> Ecn {
        match c {
            Codepoint::NotEct => Ecn::NotEct,
            Codepoint::Ect0 => Ecn::Ect0,
            Codepoint::Ect1 => Ecn::Ect1,
            Codepoint::Ce => Ecn::Ce,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UdpSpec {
    /// Sending rate while on, Mbit/s of payload.
    pub rate_mbps: f64,
    /// UDP payload bytes per packet.
    #[serde(default = "default_packet_size")]
    pub packet_size: u32,
    /// ECN codepoint of every packet.
    #[serde(default)]
    pub ecn: Codepoint,
    /// On/off: seconds sending, then seconds silent (both or neither).
    #[serde(default)]
    pub on: Option<f64>,
    #[serde(default)]
    pub off: Option<f64>,
    /// Stop sending at this time, s.
    #[serde(default)]
    pub stop: Option<f64>,
}

fn default_packet_size() -> u32 {
    1200
}

impl UdpSpec {
    pub fn validate(&self) -> Result<(), (String, String)> {
        positive("rate_mbps", self.rate_mbps)?;
        if self.rate_mbps > 1e6 {
            return Err((
                "rate_mbps".into(),
                format!(
                    "{} Mbit/s is beyond any link here (at most 1e6)",
                    self.rate_mbps
                ),
            ));
        }
        let max = hdr::MAX_MTU - hdr::IP - UDP_HDR;
        if self.packet_size == 0 || self.packet_size > max {
            return Err((
                "packet_size".into(),
                format!("must be in 1..={max} bytes, got {}", self.packet_size),
            ));
        }
        match (self.on, self.off) {
            (None, None) => Ok(()),
            (Some(on), Some(off)) => {
                positive("on", on)?;
                positive("off", off)
            }
            (Some(_), None) => Err(("off".into(), "on/off needs both `on` and `off`".into())),
            (None, Some(_)) => Err(("on".into(), "on/off needs both `on` and `off`".into())),
        }
    }
}

/// Addressing of a UDP flow, filled in by the simulator.
#[derive(Clone, Debug, PartialEq)]
pub struct UdpParams {
    pub flow: u32,
    pub group: u16,
    /// DSCP of the sender's packets.
    pub dscp: u8,
    pub sender: u32,
    pub receiver: u32,
    pub hash_fwd: u32,
    pub hash_rev: u32,
}

pub struct UdpSender {
    p: UdpParams,
    ecn: Ecn,
    payload: u32,
    /// Nanoseconds between packets while on.
    gap: f64,
    on_off: Option<(SimTime, SimTime)>,
    phase_end: SimTime,
    stop: SimTime,
    /// Exact (fractional) time of the next packet, and its rounded value.
    next_f: f64,
    next: SimTime,
    /// Exact time of the last packet sent (None before the first), and the end of the last
    /// off period: where a new rate takes up the spacing ([`UdpSender::set_rate`]).
    last_f: Option<f64>,
    off_until: SimTime,
    seq: u32,
    pub packets_sent: u64,
}

impl UdpSender {
    pub fn new(p: &UdpParams, spec: &UdpSpec) -> UdpSender {
        UdpSender {
            p: p.clone(),
            ecn: spec.ecn.into(),
            payload: spec.packet_size,
            gap: gap_ns(spec.packet_size, spec.rate_mbps),
            on_off: spec.on.zip(spec.off).map(|(a, b)| (secs(a), secs(b))),
            phase_end: NEVER,
            stop: stop_time(spec.stop),
            next_f: 0.0,
            next: NEVER,
            last_f: None,
            off_until: 0,
            seq: 0,
            packets_sent: 0,
        }
    }

    /// Send at `rate_mbps` from `now` on: the next packet leaves one new gap after the last
    /// one (not before now, nor inside an off period), as an application re-pacing its sends.
    pub fn set_rate(&mut self, rate_mbps: f64, now: SimTime) {
        self.gap = gap_ns(self.payload, rate_mbps);
        if let Some(last) = self.last_f {
            self.next_f = (last + self.gap).max(now as f64).max(self.off_until as f64);
            self.next = self.next_f.round() as SimTime;
        }
    }

    /// Start sending at `now`.
    pub fn start(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        self.next_f = now as f64;
        self.next = now;
        if let Some((on, _)) = self.on_off {
            self.phase_end = now + on;
        }
        self.on_timer(now, out);
    }

    pub fn on_timer(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        while self.next <= now && self.next < self.stop {
            if let Some((on, off)) = self.on_off {
                if self.next >= self.phase_end {
                    // The on period is over: resume after the off period.
                    let resume = self.phase_end + off;
                    self.phase_end = resume + on;
                    self.off_until = resume;
                    self.next_f = resume as f64;
                    self.next = resume;
                    continue;
                }
            }
            let mut pkt = Packet::new(self.p.flow, Dir::Fwd, self.p.sender, self.p.receiver);
            pkt.payload = self.payload;
            pkt.len = hdr::ETH + hdr::IP + UDP_HDR + self.payload;
            pkt.ecn = self.ecn;
            pkt.hash = self.p.hash_fwd;
            pkt.group = self.p.group;
            pkt.dscp = self.p.dscp;
            pkt.seq = self.seq;
            pkt.skb = skb::UDP;
            pkt.ts_val = self.next;
            out.push(pkt);
            self.seq = self.seq.wrapping_add(1);
            self.packets_sent += 1;
            self.last_f = Some(self.next_f);
            self.next_f += self.gap;
            self.next = self.next_f.round() as SimTime;
        }
    }

    pub fn next_timer(&self) -> SimTime {
        if self.next >= self.stop {
            NEVER
        } else {
            self.next
        }
    }

    pub fn done(&self) -> bool {
        self.next >= self.stop
    }
}

/// Nanoseconds between packets of `payload` bytes at `rate_mbps` of payload.
fn gap_ns(payload: u32, rate_mbps: f64) -> f64 {
    payload as f64 * 8.0 / (rate_mbps * 1e6) * 1e9
}

/// Counts what arrives; sends nothing back.
#[derive(Default)]
pub struct UdpReceiver {
    pub bytes_received: u64,
    pub packets_received: u64,
    pub ce_received: u64,
    /// Packets missing from the sequence so far (highest seen + 1 - received).
    next_seq: u32,
}

impl UdpReceiver {
    pub fn on_packet(&mut self, pkt: &Packet) {
        self.bytes_received += pkt.payload as u64;
        self.packets_received += 1;
        if pkt.ecn == Ecn::Ce {
            self.ce_received += 1;
        }
        self.next_seq = self.next_seq.max(pkt.seq.wrapping_add(1));
    }

    pub fn lost(&self) -> u64 {
        (self.next_seq as u64).saturating_sub(self.packets_received)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::SEC;

    fn params() -> UdpParams {
        UdpParams {
            flow: 0,
            group: 0,
            dscp: 0,
            sender: 0,
            receiver: 1,
            hash_fwd: 1,
            hash_rev: 2,
        }
    }

    /// 1200-byte payloads at `rate_mbps`, always on, Not-ECT.
    fn cbr(rate_mbps: f64) -> UdpSpec {
        UdpSpec {
            rate_mbps,
            packet_size: 1200,
            ecn: Codepoint::NotEct,
            on: None,
            off: None,
            stop: None,
        }
    }

    /// Run the sender's timers while they fall before `end`.
    fn send_until(s: &mut UdpSender, end: SimTime, out: &mut Vec<Packet>) {
        while s.next_timer() < end {
            s.on_timer(s.next_timer(), out);
        }
    }

    fn count_until(spec: &UdpSpec, end: SimTime) -> u64 {
        let (mut s, mut out) = (UdpSender::new(&params(), spec), Vec::new());
        s.start(0, &mut out);
        send_until(&mut s, end, &mut out);
        out.len() as u64
    }

    #[test]
    fn cbr_sends_exactly_its_rate() {
        // 5 Mbit/s of 1200-byte payloads: 520.83 packets per second.
        let n = count_until(&cbr(5.0), 10 * SEC);
        assert_eq!(n, 5209, "{n}");
    }

    #[test]
    fn a_new_rate_spaces_the_packets_from_the_last_one_sent() {
        let (mut s, mut out) = (UdpSender::new(&params(), &cbr(5.0)), Vec::new());
        s.start(0, &mut out);
        send_until(&mut s, 5 * SEC, &mut out);
        let last = out.last().unwrap().ts_val;
        s.set_rate(10.0, 5 * SEC);
        // 1200 bytes at 10 Mbit/s: 960 us after the last packet, not the old 1920 us.
        assert_eq!(s.next_timer(), last + 960_000);
        send_until(&mut s, 10 * SEC, &mut out);
        // 5 s at 520.83 packets/s, then 5 s at 1041.67.
        assert!((7810..=7814).contains(&out.len()), "{}", out.len());
    }

    fn one_second_on_one_off() -> UdpSpec {
        UdpSpec {
            ecn: Codepoint::Ect1,
            on: Some(1.0),
            off: Some(1.0),
            ..cbr(1.2)
        }
    }

    #[test]
    fn a_new_rate_in_an_off_period_waits_for_the_next_on_period() {
        let spec = one_second_on_one_off();
        let (mut s, mut out) = (UdpSender::new(&params(), &spec), Vec::new());
        s.start(0, &mut out);
        send_until(&mut s, SEC + SEC / 2, &mut out);
        s.set_rate(2.4, SEC + SEC / 2);
        assert_eq!(s.next_timer(), 2 * SEC);
    }

    #[test]
    fn on_off_sends_only_while_on() {
        // 125 packets per on-second, five on-seconds in 10 s.
        let n = count_until(&one_second_on_one_off(), 10 * SEC);
        assert!((620..=630).contains(&n), "{n}");
    }

    #[test]
    fn stop_ends_sending() {
        let spec = UdpSpec {
            ecn: Codepoint::Ect0,
            stop: Some(2.0),
            ..cbr(1.2)
        };
        assert_eq!(count_until(&spec, 10 * SEC), 250);
    }
}
