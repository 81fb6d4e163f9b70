//! `prio` (net/sched/sch_prio.c): strict priority over `bands` child qdiscs.
//!
//! Classification (`prio_classify`): the first tc filter that matches picks the band (our
//! filters match the packet's DSCP, as `tc filter ... u32 match ip dsfield` does); without a
//! match, `priomap[skb->priority & TC_PRIO_MAX]`. On a router `skb->priority` is
//! `rt_tos2priority(iph->tos)` (`ip_forward`), i.e. `ip_tos2prio[IPTOS_TOS(tos) >> 1]`
//! (net/ipv4/route.c), so best-effort traffic gets band 1 with the default priomap.
//! `prio_dequeue` takes from the lowest-numbered band whose child gives a packet; a child
//! that holds packets but may not send yet (a `tbf` out of tokens) is skipped, as Linux's
//! child dequeue returns NULL. The default child is `pfifo limit 1000` (`tx_queue_len`).

use serde::{Deserialize, Serialize};

use super::{Drop, Qdisc, QdiscSpec, QueueDisc};
use crate::packet::Packet;
use crate::rng::Rng;
use crate::time::{SimTime, NEVER};

/// `TC_PRIO_*` of each `IPTOS_TOS(tos) >> 1` (`ip_tos2prio`; ECN_OR_COST(x) is x).
const IP_TOS2PRIO: [u8; 16] = [0, 0, 0, 0, 2, 2, 2, 2, 6, 6, 6, 6, 4, 4, 4, 4];
/// tc's default priomap (`prio_tc_map` / `sch_default_prio2band`).
const DEFAULT_PRIOMAP: [u8; 16] = [1, 2, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1];

/// A tc filter steering a DSCP to a band.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DscpFilter {
    pub dscp: u8,
    /// Band, counted from 0 (tc's class `1:1` is band 0).
    pub band: u8,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrioParams {
    /// `bands` (2..16, default 3).
    #[serde(default = "default_bands")]
    pub bands: u8,
    /// `priomap`: band per `TC_PRIO_*` value (16 entries; default tc's).
    #[serde(default = "default_priomap")]
    pub priomap: Vec<u8>,
    /// Filters, tried in order.
    #[serde(default)]
    pub filters: Vec<DscpFilter>,
    /// One child per band (missing ones: `pfifo limit 1000`).
    #[serde(default)]
    pub children: Vec<QdiscSpec>,
}

fn default_bands() -> u8 {
    3
}

fn default_priomap() -> Vec<u8> {
    DEFAULT_PRIOMAP.to_vec()
}

impl PrioParams {
    pub fn validate(&self) -> Result<(), (String, String)> {
        if !(2..=16).contains(&self.bands) {
            return Err((
                "bands".into(),
                format!("bands must be 2..16, got {}", self.bands),
            ));
        }
        if self.priomap.len() != 16 {
            return Err((
                "priomap".into(),
                format!(
                    "priomap needs 16 entries (a band per TC_PRIO_* value), got {}",
                    self.priomap.len()
                ),
            ));
        }
        let bad_band = |b: u8| b >= self.bands;
        if let Some(b) = self.priomap.iter().find(|&&b| bad_band(b)) {
            if self.priomap == DEFAULT_PRIOMAP {
                // Linux's prio_tune refuses it too (-EINVAL): the default map uses band 2.
                return Err((
                    "bands".into(),
                    format!(
                        "{} bands are too few for the default priomap, which uses bands 0-2: \
                         give 3 or more, or a priomap of your own",
                        self.bands
                    ),
                ));
            }
            return Err((
                "priomap".into(),
                format!("band {b} does not exist ({} bands)", self.bands),
            ));
        }
        for (i, f) in self.filters.iter().enumerate() {
            if f.dscp > 63 {
                return Err((
                    format!("filters[{i}].dscp"),
                    format!("a DSCP is 0..63, got {}", f.dscp),
                ));
            }
            if bad_band(f.band) {
                return Err((
                    format!("filters[{i}].band"),
                    format!("band {} does not exist ({} bands)", f.band, self.bands),
                ));
            }
        }
        if self.children.len() > self.bands as usize {
            return Err((
                "children".into(),
                format!("{} children for {} bands", self.children.len(), self.bands),
            ));
        }
        for (i, c) in self.children.iter().enumerate() {
            c.validate()
                .map_err(|(f, m)| (format!("children[{i}].{f}"), m))?;
        }
        Ok(())
    }
}

pub struct Prio {
    /// Band per DSCP (filters first, then the priomap), computed once.
    band_of: [[u8; 4]; 64],
    bands: Vec<Qdisc>,
}

impl Prio {
    pub fn new(p: &PrioParams, mut rng: Rng) -> Prio {
        let mut band_of = [[0u8; 4]; 64];
        for (dscp, row) in band_of.iter_mut().enumerate() {
            for (ecn, band) in row.iter_mut().enumerate() {
                let tos = (dscp as u8) << 2 | ecn as u8;
                let prio = IP_TOS2PRIO[((tos & 0x1e) >> 1) as usize];
                *band = p
                    .filters
                    .iter()
                    .find(|f| f.dscp == dscp as u8)
                    .map_or(p.priomap[prio as usize], |f| f.band);
            }
        }
        let bands = (0..p.bands as usize)
            .map(|b| {
                let spec = p
                    .children
                    .get(b)
                    .cloned()
                    .unwrap_or(QdiscSpec::Pfifo { limit: 1000 });
                Qdisc::child(&spec, Rng::new(rng.next_u64(), b as u64))
            })
            .collect();
        Prio { band_of, bands }
    }

    /// The band a packet goes to.
    pub fn classify(&self, pkt: &Packet) -> usize {
        self.band_of[pkt.dscp as usize & 63][pkt.ecn.bits() as usize] as usize
    }
}

impl QueueDisc for Prio {
    fn kind(&self) -> &'static str {
        "prio"
    }
    fn enqueue(&mut self, pkt: Packet, now: SimTime, drops: &mut Vec<Drop>) {
        let b = self.classify(&pkt);
        QueueDisc::enqueue(&mut self.bands[b], pkt, now, drops);
    }
    fn dequeue(&mut self, now: SimTime, drops: &mut Vec<Drop>) -> Option<Packet> {
        for q in &mut self.bands {
            if !q.is_empty() {
                if let Some(p) = q.dequeue(now, drops) {
                    return Some(p);
                }
            }
        }
        None
    }
    fn ready_at(&self, now: SimTime) -> SimTime {
        self.bands
            .iter()
            .filter(|q| !q.is_empty())
            .map(|q| q.ready_at(now))
            .min()
            .unwrap_or(now)
    }
    fn len(&self) -> usize {
        self.bands.iter().map(|q| q.len()).sum()
    }
    fn bytes(&self) -> u64 {
        self.bands.iter().map(|q| q.bytes()).sum()
    }
    fn next_timer(&self) -> SimTime {
        self.bands
            .iter()
            .map(|q| q.next_timer())
            .min()
            .unwrap_or(NEVER)
    }
    fn on_timer(&mut self, now: SimTime) {
        for q in &mut self.bands {
            if q.next_timer() <= now {
                q.on_timer(now);
            }
        }
    }
    fn observe(&self, out: &mut Vec<(&'static str, f64)>) {
        const NAMES: [&str; 4] = ["band0_pkts", "band1_pkts", "band2_pkts", "band3_pkts"];
        for (q, name) in self.bands.iter().zip(NAMES) {
            out.push((name, q.len() as f64));
        }
    }
    fn classes(&self) -> Vec<(String, &Qdisc)> {
        let bands = self.bands.iter().enumerate();
        bands.map(|(b, q)| (format!("band{b}"), q)).collect()
    }
    fn children_mut(&mut self) -> Vec<&mut Qdisc> {
        self.bands.iter_mut().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{Dir, Ecn};
    use crate::qdisc::tbf::TbfParams;
    use crate::time::{MS, SEC};

    fn pkt(dscp: u8) -> Packet {
        let mut p = Packet::new(0, Dir::Fwd, 0, 1);
        p.len = 1500;
        p.payload = 1434;
        p.dscp = dscp;
        p
    }

    fn params(filters: Vec<DscpFilter>, children: Vec<QdiscSpec>) -> PrioParams {
        PrioParams {
            bands: 3,
            priomap: default_priomap(),
            filters,
            children,
        }
    }

    #[test]
    fn default_priomap_puts_best_effort_in_band_1_and_af11_in_band_2() {
        let q = Prio::new(&params(vec![], vec![]), Rng::new(1, 1));
        assert_eq!(q.classify(&pkt(0)), 1);
        // DSCP 10 (AF11): TOS 0x28, IPTOS_TOS 0x08 -> TC_PRIO_BULK -> band 2.
        assert_eq!(q.classify(&pkt(10)), 2);
        // TOS 0x10 (IPTOS_LOWDELAY, DSCP 4) -> TC_PRIO_INTERACTIVE -> band 0; EF (DSCP 46,
        // TOS 0xb8, IPTOS_TOS 0x18) -> TC_PRIO_INTERACTIVE_BULK -> band 1.
        assert_eq!(q.classify(&pkt(4)), 0);
        assert_eq!(q.classify(&pkt(46)), 1);
        let mut ect = pkt(0);
        ect.ecn = Ecn::Ect0;
        assert_eq!(q.classify(&ect), 1);
    }

    #[test]
    fn two_bands_with_the_default_priomap_are_refused_naming_bands() {
        // As Linux's prio_tune: the default map sends TC_PRIO_BULK to band 2.
        let two = PrioParams {
            bands: 2,
            ..params(vec![], vec![])
        };
        let (field, msg) = two.validate().unwrap_err();
        assert_eq!(field, "bands");
        assert!(
            msg.starts_with("2 bands are too few for the default priomap"),
            "{msg}"
        );
        let own_map = PrioParams {
            priomap: vec![1; 16],
            ..two
        };
        assert!(own_map.validate().is_ok());
    }

    #[test]
    fn a_filter_overrides_the_priomap_and_band_0_goes_first() {
        let mut q = Prio::new(
            &params(vec![DscpFilter { dscp: 10, band: 0 }], vec![]),
            Rng::new(1, 1),
        );
        let mut d = Vec::new();
        q.enqueue(pkt(0), 0, &mut d);
        q.enqueue(pkt(10), 0, &mut d);
        assert_eq!(q.dequeue(0, &mut d).unwrap().dscp, 10);
        assert_eq!(q.dequeue(0, &mut d).unwrap().dscp, 0);
    }

    #[test]
    fn a_tbf_capped_band_never_exceeds_its_rate_and_the_other_band_takes_the_rest() {
        // Band 0 (DSCP 10) capped at 20 Mbit/s by tbf; both bands always backlogged; the
        // parent sends at most 100 Mbit/s (one 1500-byte packet per 120 us).
        let tbf = QdiscSpec::Tbf(TbfParams {
            rate_mbps: 20.0,
            burst: 3000,
            limit: Some(10_000_000),
            latency_ms: None,
            child: None,
        });
        let p = params(
            vec![DscpFilter { dscp: 10, band: 0 }],
            vec![tbf, QdiscSpec::Pfifo { limit: 100_000 }],
        );
        let mut q = Prio::new(&p, Rng::new(1, 1));
        let mut d = Vec::new();
        for _ in 0..20_000 {
            q.enqueue(pkt(10), 0, &mut d);
            q.enqueue(pkt(0), 0, &mut d);
        }
        let (mut capped, mut other) = (0u64, 0u64);
        let mut t = 0;
        while t < SEC {
            if let Some(p) = q.dequeue(t, &mut d) {
                if p.dscp == 10 {
                    capped += 1;
                } else {
                    other += 1;
                }
            }
            t += 120_000;
        }
        let capped_mbps = capped as f64 * 1500.0 * 8.0 / 1e6;
        let other_mbps = other as f64 * 1500.0 * 8.0 / 1e6;
        assert!(
            capped_mbps <= 20.0 + 3000.0 * 8.0 / 1e6,
            "capped band {capped_mbps} Mbit/s"
        );
        assert!(capped_mbps > 19.0, "capped band {capped_mbps} Mbit/s");
        assert!(
            (other_mbps - (100.0 - capped_mbps)).abs() < 0.5,
            "other band {other_mbps} Mbit/s"
        );
        assert!(q.ready_at(SEC) >= SEC && q.ready_at(SEC) < SEC + 2 * MS);
    }
}
