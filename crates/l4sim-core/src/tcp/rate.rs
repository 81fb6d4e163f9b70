//! Delivery-rate sampling as Linux tcp_rate.c (`tcp_rate_skb_sent`, `tcp_rate_skb_delivered`,
//! `tcp_rate_gen`), with the "sent after" choice of the sampled segment (5.18, in the 5.15
//! stable series since spring 2022, so in the study's 5.15.72).

use super::rack::sent_after;
use crate::cc::{RateSample, Sock};
use crate::time::SimTime;

/// Per-segment snapshot taken at (re)transmission (`TCP_SKB_CB(skb)->tx`).
#[derive(Clone, Copy, Debug, Default)]
pub struct TxInfo {
    pub first_tx: SimTime,
    pub delivered_mstamp: SimTime,
    pub delivered: u64,
    pub delivered_ce: u64,
    pub lost: u64,
    pub in_flight: u32,
    pub app_limited: bool,
    /// Already counted in a rate sample (Linux zeroes `tx.delivered_mstamp`).
    pub counted: bool,
}

/// Connection-level sampler state.
#[derive(Clone, Copy, Debug, Default)]
pub struct RateSampler {
    /// Send time of the most recently delivered segment (`tp->first_tx_mstamp`).
    pub first_tx_mstamp: SimTime,
    /// The current ACK's sample has a prior (a segment was delivered on it).
    pub have_prior: bool,
}

impl RateSampler {
    /// `tcp_rate_skb_sent`: snapshot before the segment joins packets_out. `in_flight` is
    /// `tcp_set_tx_in_flight`'s: packets in flight once the segment's whole skb is sent, the
    /// same for every segment of a GSO burst.
    pub fn on_sent(&mut self, sk: &mut Sock, now: SimTime, in_flight: u32) -> TxInfo {
        if sk.packets_out == 0 {
            self.first_tx_mstamp = now;
            sk.delivered_mstamp = now;
        }
        TxInfo {
            first_tx: self.first_tx_mstamp,
            delivered_mstamp: sk.delivered_mstamp,
            delivered: sk.delivered,
            delivered_ce: sk.delivered_ce,
            lost: sk.lost,
            in_flight,
            app_limited: sk.app_limited != 0,
            counted: false,
        }
    }
    /// `tcp_rate_skb_delivered` for a segment sent at `tx_time` (end `end_seq`).
    pub fn on_delivered(
        &mut self,
        rs: &mut RateSample,
        tx: &mut TxInfo,
        tx_time: SimTime,
        end_seq: u32,
        retrans: bool,
        sacked: bool,
    ) {
        if tx.counted {
            return;
        }
        if !self.have_prior || sent_after(tx_time, self.first_tx_mstamp, end_seq, rs.last_end_seq) {
            self.have_prior = true;
            rs.prior_delivered = tx.delivered;
            rs.prior_delivered_ce = tx.delivered_ce;
            rs.prior_mstamp = tx.delivered_mstamp;
            rs.is_app_limited = tx.app_limited;
            rs.is_retrans = retrans;
            rs.last_end_seq = end_seq;
            rs.tx_in_flight = tx.in_flight;
            rs.prior_lost = tx.lost;
            self.first_tx_mstamp = tx_time;
            rs.snd_interval = tx_time.saturating_sub(tx.first_tx) as i64;
        }
        if sacked {
            tx.counted = true;
        }
    }
    /// `tcp_rate_gen`: finish the sample of this ACK.
    pub fn generate(
        &mut self,
        sk: &mut Sock,
        rs: &mut RateSample,
        delivered: u32,
        lost: u32,
        now: SimTime,
    ) {
        if sk.app_limited != 0 && sk.delivered > sk.app_limited {
            sk.app_limited = 0;
        }
        if delivered > 0 {
            sk.delivered_mstamp = now;
        }
        rs.acked_sacked = delivered;
        rs.losses = lost;
        if !self.have_prior {
            rs.delivered = -1;
            rs.interval = -1;
            return;
        }
        rs.delivered = (sk.delivered - rs.prior_delivered) as i64;
        rs.lost = sk.lost - rs.prior_lost;
        rs.delivered_ce = (sk.delivered_ce - rs.prior_delivered_ce) as i64;
        let snd = rs.snd_interval;
        let ack = now.saturating_sub(rs.prior_mstamp) as i64;
        rs.rcv_interval = ack;
        rs.interval = snd.max(ack);
        if sk.min_rtt != u64::MAX && rs.interval < sk.min_rtt as i64 {
            rs.interval = -1;
        }
    }
}
