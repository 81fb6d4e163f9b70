//! Connections: the endpoints of one TCP connection or one UDP flow, in a slab whose slots
//! are reused once every packet of a finished connection has left the network.

use std::collections::VecDeque;

use crate::packet::Packet;
use crate::tcp::{TcpReceiver, TcpSender};
use crate::time::{SimTime, NEVER};
use crate::traffic::udp::{UdpReceiver, UdpSender};
use crate::traffic::udp_prague::{UdpPragueReceiver, UdpPragueSender};

/// The two endpoints of a connection. Side 0 is the data sender, side 1 the receiver.
pub enum Conn {
    Tcp(Box<(TcpSender, TcpReceiver)>),
    Udp(Box<(UdpSender, UdpReceiver)>),
    UdpPrague(Box<(UdpPragueSender, UdpPragueReceiver)>),
}

impl Conn {
    pub fn on_packet(&mut self, side: usize, pkt: &Packet, now: SimTime, out: &mut Vec<Packet>) {
        match self {
            Conn::Tcp(c) => {
                if side == 0 {
                    c.0.on_packet(pkt, now, out)
                } else {
                    c.1.on_packet(pkt, now, out)
                }
            }
            Conn::Udp(c) => {
                if side == 1 {
                    c.1.on_packet(pkt)
                }
            }
            Conn::UdpPrague(c) => {
                if side == 0 {
                    c.0.on_packet(pkt, now, out)
                } else {
                    c.1.on_packet(pkt, now, out)
                }
            }
        }
    }

    pub fn on_timer(&mut self, side: usize, now: SimTime, out: &mut Vec<Packet>) {
        match self {
            Conn::Tcp(c) => {
                if side == 0 {
                    c.0.on_timer(now, out)
                } else {
                    c.1.on_timer(now, out)
                }
            }
            Conn::Udp(c) => {
                if side == 0 {
                    c.0.on_timer(now, out)
                }
            }
            Conn::UdpPrague(c) => {
                if side == 0 {
                    c.0.on_timer(now, out)
                } else {
                    c.1.on_timer(now, out)
                }
            }
        }
    }

    pub fn next_timer(&self, side: usize) -> SimTime {
        match self {
            Conn::Tcp(c) => {
                if side == 0 {
                    c.0.next_timer()
                } else {
                    c.1.next_timer()
                }
            }
            Conn::Udp(c) => {
                if side == 0 {
                    c.0.next_timer()
                } else {
                    NEVER
                }
            }
            Conn::UdpPrague(c) => {
                if side == 0 {
                    c.0.next_timer()
                } else {
                    c.1.next_timer()
                }
            }
        }
    }

    /// Payload bytes the receiving application has in order.
    pub fn delivered(&self) -> u64 {
        match self {
            Conn::Tcp(c) => c.1.stats.bytes_delivered,
            Conn::Udp(c) => c.1.bytes_received,
            Conn::UdpPrague(c) => c.1.bytes_received(),
        }
    }

    /// Data packets the sender transmitted and the receiver took in.
    pub fn data_sent(&self) -> u64 {
        match self {
            Conn::Tcp(c) => c.0.stats.data_pkts_sent,
            Conn::Udp(c) => c.0.packets_sent,
            Conn::UdpPrague(c) => c.0.packets_sent(),
        }
    }
    pub fn data_received(&self) -> u64 {
        match self {
            Conn::Tcp(c) => c.1.stats.data_pkts_received,
            Conn::Udp(c) => c.1.packets_received,
            Conn::UdpPrague(c) => c.1.packets_received(),
        }
    }

    pub fn tcp(&self) -> Option<&(TcpSender, TcpReceiver)> {
        match self {
            Conn::Tcp(c) => Some(c),
            _ => None,
        }
    }
}

/// A transfer written on a connection and not yet fully delivered.
#[derive(Clone, Copy, Debug)]
pub struct Pending {
    /// Receiver's in-order byte count at which the transfer is complete.
    pub until: u64,
    pub size: u64,
    /// When the application asked for it.
    pub start: SimTime,
    /// The sender's retransmission count when it was written.
    pub retrans: u64,
}

/// One connection and the simulator's bookkeeping of it.
pub struct Stream {
    pub conn: Conn,
    /// The scenario flow it belongs to.
    pub flow: u32,
    /// Connection number within the run (RNG streams and records).
    pub id: u64,
    /// Scheduled wake-up of side 0 and side 1 (NEVER: none pending).
    pub armed: [SimTime; 2],
    pub data_dropped: u64,
    /// Packets of this connection inside the network (pipes and qdiscs).
    pub in_net: u64,
    /// No more endpoint processing: finished, or its flow was removed. Packets still
    /// arriving are discarded; the slot is freed when `in_net` reaches 0.
    pub closing: bool,
    pub opened_at: SimTime,
    /// Transfers in order of writing (sized connections).
    pub pending: VecDeque<Pending>,
    /// Its transfers are asked for by the receiving host (`web`): see [`Request`].
    pub requested: bool,
    /// Requests on their way to the data sender, oldest first.
    pub requests: VecDeque<Request>,
    /// Requests lost on the way, to send again at `request_retry_at` (NEVER: none due).
    pub requests_lost: u32,
    pub request_retries: u32,
    pub request_retry_at: SimTime,
    /// A `messages` session still writing: its next message's time and its end.
    pub session: Option<Session>,
}

/// A session's schedule (`messages` with `session`): the application writes `size` bytes at
/// `next`, and so on until `end`, at a fixed period or at exponential gaps (`poisson`).
#[derive(Clone, Copy, Debug)]
pub struct Session {
    pub next: SimTime,
    pub end: SimTime,
    pub size: u64,
    pub poisson: bool,
}

/// What a request asks the data sender for when it arrives: to open the connection (the
/// client's SYN of a new connection, whose size the sender already knows) or to write more
/// bytes on its persistent connection (an HTTP request).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Request {
    Open,
    Write(u64),
}

impl Stream {
    pub fn new(conn: Conn, flow: u32, id: u64, now: SimTime) -> Stream {
        Stream {
            conn,
            flow,
            id,
            armed: [NEVER; 2],
            data_dropped: 0,
            in_net: 0,
            closing: false,
            opened_at: now,
            pending: VecDeque::new(),
            requested: false,
            requests: VecDeque::new(),
            requests_lost: 0,
            request_retries: 0,
            request_retry_at: NEVER,
            session: None,
        }
    }
}
