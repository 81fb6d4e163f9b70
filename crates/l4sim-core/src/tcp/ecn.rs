//! ECN negotiation (RFC 3168 s6.1.1, AccECN RFC 9768 s3.1 Table 2) as the Linux AccECN
//! stack does it (`tcp_ecn_send_syn`, `tcp_ecn_create_request`, `tcp_ecn_rcv_synack`), and
//! the AccECN ACE counter codec (`__tcp_accecn_process`). See docs/linux-algorithms.md 2.1-2.4.
//!
//! The AccECN TCP option is modelled by its size (`accecn_option_len`: every segment that has
//! room carries it, `tcp_ecn_option = 2`, the Linux default), which shortens a sender's
//! segments by 12 bytes; its byte counters are not read, so senders decode the ACE field
//! with the rule `__tcp_accecn_process` uses without them (it differs only for ACKs that
//! cover more than 7 segments).

use serde::{Deserialize, Serialize};

use super::EcnSysctl;
use crate::cc::{CcFlags, EcnMode};
use crate::packet::{flags, hdr, Ecn};

/// `TCP_ACCECN_CEP_INIT_OFFSET`: the ACE counter starts at 5.
pub const ACE_INIT: u8 = 5;
/// `TCP_ACCECN_ACE_MAX_DELTA`: a receiver forces an ACK once this many CE marks are pending.
pub const ACE_MAX_DELTA: u32 = 6;

/// Bytes the AccECN option adds to an established segment carrying `n_sack` SACK blocks
/// (timestamps on), or `None` if not even `required` of its three 3-byte counter fields
/// fit (`tcp_options_fit_accecn`, called by `tcp_established_options` after the SACK
/// blocks): try 3 fields (2 + 9 = 11 bytes), padded up to a multiple of 4, or rounded down
/// when the padding fits in the two NOP bytes before the SACK blocks; drop a field while
/// the result does not fit in what is left of the 40 option bytes. `required` is the
/// receiver's `accecn_minlen`: the highest field (1 ECT(1), 2 CE, 3 ECT(0)) it has counted.
pub fn accecn_option_len(n_sack: u8, required: u8) -> Option<u32> {
    let remaining = hdr::OPTION_SPACE - hdr::TSTAMP_ALIGNED - hdr::sack_len(n_sack);
    let saving = if n_sack > 0 { 2 } else { 0 };
    (required..=3).rev().find_map(|fields| {
        let size = 2 + 3 * fields as u32;
        let aligned = if size & 3 > saving {
            size.next_multiple_of(4)
        } else {
            size & !3
        };
        (aligned <= remaining).then_some(aligned)
    })
}

/// The option field that counts bytes of codepoint `ecn` (`tcp_ecnfield_to_accecn_optfield`,
/// order 1: ECT(1), CE, ECT(0)); 0 for Not-ECT, which is not counted.
pub fn accecn_optfield(ecn: Ecn) -> u8 {
    match ecn {
        Ecn::NotEct => 0,
        Ecn::Ect1 => 1,
        Ecn::Ce => 2,
        Ecn::Ect0 => 3,
    }
}

/// What a SYN asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EcnRequest {
    None,
    Classic,
    AccEcn,
}

/// How a listener treats an AccECN SYN (docs/linux-algorithms.md 2.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AccEcnAccept {
    /// Mainline-bound L4STeam rule: tcp_ecn 3/4/5 (or a NEEDS_ACCECN listener) accept AccECN;
    /// 1/2 answer classic ECN; 0 none.
    #[default]
    Mainline,
    /// Older L4STeam patches (5.15-era testing kernels): tcp_ecn=1 answers classic,
    /// tcp_ecn>=2 (the default 2 included) accepts AccECN; 0 none.
    Legacy,
}

/// The client's request: the sysctl's outgoing column, overridden by the CC flags.
pub fn syn_request(sysctl: EcnSysctl, f: CcFlags) -> EcnRequest {
    let base = match sysctl {
        EcnSysctl::None | EcnSysctl::Passive | EcnSysctl::AccecnPassive => EcnRequest::None,
        EcnSysctl::Classic | EcnSysctl::AccecnClassicOut => EcnRequest::Classic,
        EcnSysctl::Accecn => EcnRequest::AccEcn,
    };
    if f.needs_accecn {
        EcnRequest::AccEcn
    } else if f.needs_ecn && base == EcnRequest::None {
        EcnRequest::Classic
    } else {
        base
    }
}

/// TCP flags of a SYN carrying `req`.
pub fn syn_flags(req: EcnRequest) -> u8 {
    match req {
        EcnRequest::None => 0,
        EcnRequest::Classic => flags::CWR | flags::ECE,
        EcnRequest::AccEcn => flags::AE | flags::CWR | flags::ECE,
    }
}

/// The listener's decision on a SYN with TCP `syn_flags` and IP codepoint `syn_ecn`.
pub fn listener_mode(
    syn_flags: u8,
    syn_ecn: Ecn,
    sysctl: EcnSysctl,
    f: CcFlags,
    rule: AccEcnAccept,
) -> EcnMode {
    let ae = syn_flags & flags::AE != 0;
    let cwr = syn_flags & flags::CWR != 0;
    let ece = syn_flags & flags::ECE != 0;
    if !(cwr && ece) {
        return EcnMode::None;
    }
    if ae {
        let accecn = f.needs_accecn
            || match rule {
                AccEcnAccept::Mainline => matches!(
                    sysctl,
                    EcnSysctl::Accecn | EcnSysctl::AccecnClassicOut | EcnSysctl::AccecnPassive
                ),
                AccEcnAccept::Legacy => !matches!(sysctl, EcnSysctl::None | EcnSysctl::Classic),
            };
        if accecn {
            return EcnMode::AccEcn;
        }
    }
    // tcp_ecn_create_request: classic ECN if the sysctl allows it and the SYN was not ECT
    // (or had the reserved/AE bit), or whenever the listener's CC needs ECN.
    let ecn_ok = sysctl != EcnSysctl::None;
    if ((!syn_ecn.is_ect() || ae) && ecn_ok) || f.needs_ecn {
        EcnMode::Rfc3168
    } else {
        EcnMode::None
    }
}

/// TCP flags of the SYN/ACK for the listener's decision. AccECN echoes the SYN's IP-ECN
/// field (RFC 9768 Table 2).
pub fn synack_flags(mode: EcnMode, syn_ecn: Ecn) -> u8 {
    match mode {
        EcnMode::None => 0,
        EcnMode::Rfc3168 => flags::ECE,
        EcnMode::AccEcn => match syn_ecn {
            Ecn::NotEct => flags::CWR,
            Ecn::Ect1 => flags::CWR | flags::ECE,
            Ecn::Ect0 => flags::AE,
            Ecn::Ce => flags::AE | flags::CWR,
        },
    }
}

/// The client's mode from the SYN/ACK (`tcp_ecn_rcv_synack`), given what it requested.
pub fn client_mode(req: EcnRequest, synack_flags: u8, f: CcFlags) -> EcnMode {
    let ae = synack_flags & flags::AE != 0;
    let cwr = synack_flags & flags::CWR != 0;
    let ece = synack_flags & flags::ECE != 0;
    let classic = if f.no_fallback_rfc3168 {
        EcnMode::None
    } else {
        EcnMode::Rfc3168
    };
    match req {
        EcnRequest::None => EcnMode::None,
        EcnRequest::Classic => {
            if ece && !cwr {
                classic
            } else {
                EcnMode::None
            }
        }
        EcnRequest::AccEcn => match (ae, cwr, ece) {
            (false, false, false) => EcnMode::None,
            (false, false, true) => classic,
            (true, true, true) => EcnMode::None, // broken reflector
            _ => EcnMode::AccEcn,
        },
    }
}

/// The ECN negotiation of a connection the data receiver opens (a `web` client asking a
/// server for a download): the client is the active end (`syn_request`) and the data sender
/// the listener (`listener_mode`), whatever way the simulator's handshake packets run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientOpened {
    /// The client's SYN: its ECN flags and IP codepoint.
    pub syn_flags: u8,
    pub syn_ecn: Ecn,
    /// The server's (data sender's) decision, which its SYN/ACK carries.
    pub server: EcnMode,
    /// The client's (data receiver's) mode from that SYN/ACK.
    pub client: EcnMode,
}

/// [`ClientOpened`] for a client with `net.ipv4.tcp_ecn` and CC flags `client` and a server
/// with `server` (and its AccECN rule).
pub fn client_opened(
    client: (EcnSysctl, CcFlags),
    server: (EcnSysctl, CcFlags, AccEcnAccept),
) -> ClientOpened {
    let req = syn_request(client.0, client.1);
    let syn = syn_flags(req);
    // tcp_ecn_send_syn: ECT only for a NEEDS_ECN CC.
    let syn_ecn = if req != EcnRequest::None && client.1.needs_ecn {
        Ecn::Ect0
    } else {
        Ecn::NotEct
    };
    let decided = listener_mode(syn, syn_ecn, server.0, server.1, server.2);
    ClientOpened {
        syn_flags: syn,
        syn_ecn,
        server: decided,
        client: client_mode(req, synack_flags(decided, syn_ecn), client.1),
    }
}

/// ACE value a receiver puts on every packet: (received CE packets + 5) mod 8.
pub fn ace_encode(received_ce: u64) -> u8 {
    ((received_ce + ACE_INIT as u64) & 7) as u8
}

/// Sender's CE delta from an ACE value (`__tcp_accecn_process` without the option): `d` is the
/// change of the counter mod 8; when more than 7 segments were newly delivered, assume the
/// counter may have wrapped as often as possible: `delta = n - ((n - d) mod 8)`.
pub fn ace_delta(ace: u8, delivered_ce: u64, newly_delivered: u32) -> u32 {
    let d = ((ace as u64)
        .wrapping_sub(ACE_INIT as u64)
        .wrapping_sub(delivered_ce)
        & 7) as u32;
    let n = newly_delivered;
    if n <= 7 {
        d
    } else {
        n - ((n - d) & 7)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `tcp_options_fit_accecn` by hand: 28 bytes are left after the timestamps, 16 / 8 / 0
    /// after one / two / three SACK blocks (4 + 8n); with SACK the option may end in the
    /// SACK option's two NOP bytes.
    #[test]
    fn accecn_option_fits_what_the_sack_blocks_leave() {
        // No SACK: 3 fields, 11 bytes padded to 12.
        assert_eq!(accecn_option_len(0, 0), Some(12));
        assert_eq!(accecn_option_len(0, 3), Some(12));
        // One block: 12 of 16.
        assert_eq!(accecn_option_len(1, 2), Some(12));
        // Two blocks: 11 would need 12 > 8, so two fields, 8 bytes exactly.
        assert_eq!(accecn_option_len(2, 2), Some(8));
        assert_eq!(accecn_option_len(2, 3), None);
        // Three blocks: nothing left; an empty option (kind, length) takes the NOP bytes.
        assert_eq!(accecn_option_len(3, 0), Some(0));
        assert_eq!(accecn_option_len(3, 1), None);
    }

    #[test]
    fn option_fields_follow_order_1() {
        assert_eq!(accecn_optfield(Ecn::NotEct), 0);
        assert_eq!(accecn_optfield(Ecn::Ect1), 1);
        assert_eq!(accecn_optfield(Ecn::Ce), 2);
        assert_eq!(accecn_optfield(Ecn::Ect0), 3);
    }
}
