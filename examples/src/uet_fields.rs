//! UET packets as named fields, for people and for tools: the model behind `uet-decode`.
//!
//! [`decode`] walks the UET bytes header by header (entropy, TSS or PDS, SES, payload, CRC32C
//! trailer) and keeps every header that parsed; when one fails, the walk stops there and the error
//! is kept with the byte offset where that header began. Field names are the specification's
//! (`cack_psn`, `spdcid`, `nack_code`, ...); ids, flags and codepoints are shown in hex with their
//! names. Reserved bits do not stop the walk (a receiver ignores them): each one set is a warning,
//! named by [`UetPacket::check_reserved`].

use std::fmt::Write as _;
use uet_wire::entropy::{Encapsulation, EntropyHeader};
use uet_wire::pds::{AckExtension, CcState, NackTarget, PdcDest, PdsHeader};
use uet_wire::ses::{Extension, SesHeader, StandardTail};
use uet_wire::tss::TssHeader;
use uet_wire::{UetPacket, WalkConfig};

/// One field: its specification name and how it reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    /// The specification's name for it.
    pub name: &'static str,
    /// The value as people read it: hex with a name for codepoints, ids and flags.
    pub text: String,
}

/// One header that parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// What it is (`PDS RUD_REQ`, `SES standard request`, ...).
    pub name: String,
    /// Byte offset of its first byte in the UET bytes.
    pub offset: usize,
    /// Its fields, in wire order.
    pub fields: Vec<Field>,
}

/// A UET packet decoded as far as it goes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Decoded {
    /// The headers that parsed, in wire order.
    pub headers: Vec<Header>,
    /// Reserved bits found set (the packet is still decoded: receivers ignore them).
    pub warnings: Vec<String>,
    /// Where and why the walk stopped, if it did.
    pub error: Option<(usize, String)>,
}

fn field(name: &'static str, text: impl Into<String>) -> Field {
    Field { name, text: text.into() }
}

/// `UPPER_SNAKE` from a Rust variant name (`NewStartPsn` → `NEW_START_PSN`), the spec's style.
pub fn spec_name(debug: &str) -> String {
    let mut out = String::new();
    for (i, c) in debug.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

fn code<T: core::fmt::Debug>(raw: u8, v: T) -> String {
    let name = format!("{v:?}");
    if name.starts_with("Vendor") { format!("{raw:#04x} (vendor)") } else { format!("{raw:#04x} {}", spec_name(&name)) }
}

/// A flags byte in hex with the names of the bits set, from `names` (the spec's, wire order).
fn named_bits(bits: u8, names: &[(u8, &str)]) -> String {
    let set: Vec<&str> = names.iter().filter(|(m, _)| bits & m != 0).map(|(_, n)| *n).collect();
    if set.is_empty() { format!("{bits:#04x}") } else { format!("{bits:#04x} ({})", set.join(" | ")) }
}

fn flags<T: core::fmt::Debug>(bits: u8, v: T) -> String {
    let s = format!("{v:?}");
    let names = s.split_once('(').map_or("", |(_, rest)| rest.trim_end_matches(')'));
    if names.is_empty() || names == "0x0" { format!("{bits:#04x}") } else { format!("{bits:#04x} ({names})") }
}

fn id(v: u16) -> String {
    format!("{v:#06x} ({v})")
}

fn psn(v: u32) -> String {
    format!("{v} ({v:#010x})")
}

fn dest_fields(out: &mut Vec<Field>, dest: PdcDest) {
    match dest {
        PdcDest::Established { dpdcid } => out.push(field("dpdcid", id(dpdcid))),
        PdcDest::Syn { use_rsv_pdc, psn_offset } => {
            out.push(field("use_rsv_pdc", u8::from(use_rsv_pdc).to_string()));
            out.push(field("psn_offset", psn_offset.to_string()));
        }
    }
}

/// The fields of a PDS header.
pub fn pds_fields(h: &PdsHeader) -> Vec<Field> {
    let ty = h.packet_type();
    let mut f = vec![field("type", code(ty.into(), ty))];
    let nh = h.next_header();
    match h {
        PdsHeader::Request(r) => {
            f.push(field("next_hdr", code(nh.into(), nh)));
            let syn = if r.dest.syn() { 0x04 } else { 0 };
            f.push(field("flags", named_bits(r.flags.bits() | syn, &[(0x10, "RETX"), (0x08, "AR"), (0x04, "SYN")])));
            f.push(field("syn", u8::from(r.dest.syn()).to_string()));
            f.push(field("clear_psn_offset", format!("{} (CLEAR_PSN {})", r.clear_psn_offset, r.clear_psn())));
            f.push(field("psn", psn(r.psn)));
            f.push(field("spdcid", id(r.spdcid)));
            dest_fields(&mut f, r.dest);
            if let Some(cc) = r.cc {
                f.push(field("ccc_id", format!("{:#04x}", cc.ccc_id)));
                f.push(field("credit_target", cc.credit_target.to_string()));
            }
        }
        PdsHeader::Rudi(r) => {
            f.push(field("next_hdr", code(nh.into(), nh)));
            f.push(field("flags", named_bits(r.flags.bits(), &[(0x20, "M"), (0x10, "RETX")])));
            f.push(field("pkt_id", format!("{:#010x}", r.pkt_id)));
        }
        PdsHeader::Uud(_) => f.push(field("next_hdr", code(nh.into(), nh))),
        PdsHeader::Ack(a) => {
            f.push(field("next_hdr", code(nh.into(), nh)));
            f.push(field("flags", named_bits(a.flags.bits(), &[(0x20, "M"), (0x10, "RETX"), (0x08, "P")])));
            f.push(field("req", spec_name(&format!("{:?}", a.request))));
            if a.flags.contains(uet_wire::pds::AckFlags::P) {
                f.push(field("probe_opaque", format!("{:#06x}", a.ack_psn_offset as u16)));
            } else {
                f.push(field("ack_psn_offset", format!("{} (ACK_PSN {})", a.ack_psn_offset, a.ack_psn())));
            }
            f.push(field("cack_psn", psn(a.cack_psn)));
            f.push(field("spdcid", id(a.spdcid)));
            f.push(field("dpdcid", id(a.dpdcid)));
            let (mpr, off, bitmap) = match a.ext {
                AckExtension::None => return f,
                AckExtension::Cc(cc) => {
                    match cc.state {
                        CcState::Nscc { service_time, restore_cwnd, rcv_cwnd_pend, rcvd_bytes, ooo_count } => {
                            f.push(field("cc_type", "0x0 NSCC"));
                            f.push(field("service_time", service_time.to_string()));
                            f.push(field("rc", u8::from(restore_cwnd).to_string()));
                            f.push(field("rcv_cwnd_pend", rcv_cwnd_pend.to_string()));
                            f.push(field("rcvd_bytes", rcvd_bytes.to_string()));
                            f.push(field("ooo_count", ooo_count.to_string()));
                        }
                        CcState::Credit { credit, ooo_count } => {
                            f.push(field("cc_type", "0x1 credit"));
                            f.push(field("credit", credit.to_string()));
                            f.push(field("ooo_count", ooo_count.to_string()));
                        }
                    }
                    (cc.mpr, cc.sack_psn_offset, cc.sack_bitmap)
                }
                AckExtension::Ccx(cc) => {
                    f.push(field("ccx_type", format!("{:#x}", cc.ccx_type)));
                    f.push(field("ccx_state", crate::uet_capture::hex(&cc.state)));
                    (cc.mpr, cc.sack_psn_offset, cc.sack_bitmap)
                }
            };
            f.push(field("mpr", format!("{mpr} ({} PSNs)", u32::from(mpr) * 128)));
            let base = a.cack_psn.wrapping_add(off as i32 as u32);
            f.push(field("sack_psn_offset", format!("{off} (SACK_BASE {base})")));
            f.push(field("sack_bitmap", format!("{bitmap:#018x}")));
        }
        PdsHeader::Nack(n) => {
            f.push(field("next_hdr", code(nh.into(), nh)));
            let nt = matches!(n.target, NackTarget::Rudi { .. });
            let bits = n.flags.bits() | if nt { 0x08 } else { 0 };
            f.push(field("flags", named_bits(bits, &[(0x20, "M"), (0x10, "RETX"), (0x08, "NT")])));
            f.push(field("nt", u8::from(nt).to_string()));
            f.push(field("nack_code", code(n.code.into(), n.code)));
            f.push(field("vendor_code", format!("{:#04x}", n.vendor_code)));
            match n.target {
                NackTarget::Pdc { psn: p, spdcid, dpdcid } => {
                    f.push(field("nack_psn", psn(p)));
                    f.push(field("spdcid", id(spdcid)));
                    f.push(field("dpdcid", id(dpdcid)));
                }
                NackTarget::Rudi { pkt_id, pdc_ids } => {
                    f.push(field("pkt_id", format!("{pkt_id:#010x}")));
                    f.push(field("pdc_ids", format!("{pdc_ids:#010x}")));
                }
            }
            f.push(field("payload", format!("{:#010x} ({})", n.payload, n.payload)));
            if let Some(c) = n.ccx {
                f.push(field("nccx_type", format!("{:#x}", c.nccx_type)));
                f.push(field("nccx_state", crate::uet_capture::hex(&c.state)));
            }
        }
        PdsHeader::Control(c) => {
            f.push(field("ctl_type", code(c.ctl_type as u8, c.ctl_type)));
            let syn = if c.dest.syn() { 0x04 } else { 0 };
            let names = [(0x20, "ISROD"), (0x10, "RETX"), (0x08, "AR"), (0x04, "SYN")];
            f.push(field("flags", named_bits(c.flags.bits() | syn, &names)));
            f.push(field("probe_opaque", format!("{:#06x}", c.probe_opaque)));
            f.push(field("psn", psn(c.psn)));
            f.push(field("spdcid", id(c.spdcid)));
            dest_fields(&mut f, c.dest);
            f.push(field("payload", format!("{:#010x} ({})", c.payload, c.payload)));
        }
    }
    f
}

/// The fields of an SES header (its extension included).
pub fn ses_fields(h: &SesHeader) -> Vec<Field> {
    let mut f = Vec::new();
    let common = |f: &mut Vec<Field>, c: &uet_wire::ses::RequestCommon| {
        f.push(field("opcode", code(c.opcode.to_u8().unwrap_or(0), c.opcode)));
        f.push(field("flags", flags(c.flags.bits(), c.flags)));
    };
    let ids = |f: &mut Vec<Field>, c: &uet_wire::ses::RequestCommon| {
        f.push(field("ri_generation", c.ri_generation.to_string()));
        f.push(field("job_id", format!("{:#08x}", c.job_id)));
        f.push(field("pid_on_fep", format!("{:#05x}", c.pid_on_fep)));
        f.push(field("resource_index", format!("{:#05x}", c.resource_index)));
    };
    let ext = match h {
        SesHeader::Standard(r) => {
            common(&mut f, &r.common);
            f.push(field("message_id", id(r.message_id)));
            ids(&mut f, &r.common);
            f.push(field("buffer_offset", format!("{:#x}", r.buffer_offset)));
            f.push(field("initiator", format!("{:#010x}", r.initiator)));
            f.push(field("match_bits", format!("{:#018x}", r.match_bits)));
            match r.tail {
                StandardTail::Som { header_data } => f.push(field("header_data", format!("{header_data:#018x}"))),
                StandardTail::Continuation { payload_length, message_offset } => {
                    f.push(field("payload_length", payload_length.to_string()));
                    f.push(field("message_offset", message_offset.to_string()));
                }
            }
            f.push(field("request_length", r.request_length.to_string()));
            r.ext
        }
        SesHeader::Medium(r) => {
            common(&mut f, &r.common);
            f.push(field("request_length", r.request_length.to_string()));
            ids(&mut f, &r.common);
            match r.header_data() {
                Some(hd) => f.push(field("header_data", format!("{hd:#018x}"))),
                None => f.push(field("buffer_offset", format!("{:#x}", r.data))),
            }
            f.push(field("initiator", format!("{:#010x}", r.initiator)));
            f.push(field("match_bits", format!("{:#018x}", r.match_bits)));
            r.ext
        }
        SesHeader::Small(r) => {
            common(&mut f, &r.common);
            f.push(field("request_length", r.request_length.to_string()));
            ids(&mut f, &r.common);
            f.push(field("buffer_offset", format!("{:#x}", r.buffer_offset)));
            r.ext
        }
        SesHeader::Response(r) => {
            response_head(&mut f, r.list, r.opcode, r.return_code);
            f.push(field("message_id", id(r.message_id)));
            f.push(field("ri_generation", r.ri_generation.to_string()));
            f.push(field("job_id", format!("{:#08x}", r.job_id)));
            f.push(field("modified_length", r.modified_length.to_string()));
            None
        }
        SesHeader::ResponseWithData(r) => {
            response_head(&mut f, r.list, r.opcode, r.return_code);
            f.push(field("message_id", id(r.message_id)));
            f.push(field("job_id", format!("{:#08x}", r.job_id)));
            f.push(field("read_request_message_id", id(r.read_request_message_id)));
            f.push(field("payload_length", r.payload_length.to_string()));
            f.push(field("modified_length", r.modified_length.to_string()));
            f.push(field("message_offset", r.message_offset.to_string()));
            None
        }
        SesHeader::ResponseDataSmall(r) => {
            response_head(&mut f, r.list, r.opcode, r.return_code);
            f.push(field("payload_length", r.payload_length.to_string()));
            f.push(field("job_id", format!("{:#08x}", r.job_id)));
            f.push(field("original_request_psn", psn(r.original_request_psn)));
            None
        }
    };
    match ext {
        Some(Extension::Atomic(a)) => atomic_fields(&mut f, &a),
        Some(Extension::CompareAndSwap { atomic, compare, swap }) => {
            atomic_fields(&mut f, &atomic);
            f.push(field("compare_value", crate::uet_capture::hex(&compare)));
            f.push(field("swap_value", crate::uet_capture::hex(&swap)));
        }
        Some(Extension::Rendezvous(r)) => {
            f.push(field("eager_length", r.eager_length.to_string()));
            f.push(field("read_ri_generation", r.read_ri_generation.to_string()));
            f.push(field("read_pid_on_fep", format!("{:#05x}", r.read_pid_on_fep)));
            f.push(field("read_resource_index", format!("{:#05x}", r.read_resource_index)));
            f.push(field("read_offset", format!("{:#x}", r.read_offset)));
            f.push(field("read_match_bits", format!("{:#018x}", r.read_match_bits)));
        }
        None => {}
    }
    f
}

fn response_head(
    f: &mut Vec<Field>,
    list: uet_wire::ses::ResponseList,
    opcode: uet_wire::ses::ResponseOpcode,
    rc: uet_wire::ses::ReturnCode,
) {
    f.push(field("list", code(list.to_u8().unwrap_or(0), list)));
    f.push(field("opcode", code(opcode.to_u8().unwrap_or(0), opcode)));
    f.push(field("return_code", code(rc.to_u8().unwrap_or(0), rc)));
}

fn atomic_fields(f: &mut Vec<Field>, a: &uet_wire::ses::AtomicExt) {
    f.push(field("atomic_opcode", code(a.opcode.to_u8().unwrap_or(0), a.opcode)));
    f.push(field("atomic_datatype", code(a.datatype.to_u8().unwrap_or(0), a.datatype)));
    f.push(field("semantic_control", flags(a.semantic_control.bits(), a.semantic_control)));
}

fn tss_fields(t: &TssHeader) -> Vec<Field> {
    let mut f = vec![field("an", u8::from(t.an).to_string()), field("sdi", format!("{:#08x}", t.sdi))];
    if let Some(ssi) = t.ssi {
        f.push(field("ssi", format!("{ssi:#010x}")));
    }
    f.push(field("tsc", format!("{:#018x} (epoch {}, counter {})", t.tsc.to_u64(), t.tsc.epoch, t.tsc.counter)));
    f
}

/// Walks `bytes` (the UDP payload, or the IP payload in native-IP mode) as far as it parses.
/// `entropy` is the UDP source port in UDP mode (shown as the entropy value); `crc_prefix`, when
/// known, lets the CRC32C trailer be checked.
pub fn decode(bytes: &[u8], config: WalkConfig, entropy: Option<u16>, crc_prefix: Option<&[u8]>) -> Decoded {
    let mut d = Decoded::default();
    let mut at = 0;
    let fail = |d: &mut Decoded, at: usize, e: &dyn core::fmt::Display| d.error = Some((at, e.to_string()));
    if let Some(e) = entropy {
        d.headers.push(Header {
            name: "UDP source port (outer header)".into(),
            offset: 0,
            fields: vec![field("entropy", format!("{e:#06x} ({e})"))],
        });
    }
    let mut rest = bytes;
    if config.encapsulation == Encapsulation::NativeIp {
        match EntropyHeader::parse(rest) {
            Ok((e, r)) => {
                let fields = vec![field("entropy", format!("{:#06x} ({})", e.entropy, e.entropy))];
                d.headers.push(Header { name: "entropy header".into(), offset: at, fields });
                at += bytes.len() - at - r.len();
                rest = r;
            }
            Err(e) => {
                fail(&mut d, at, &e);
                return d;
            }
        }
    }
    if TssHeader::starts(rest) {
        match TssHeader::parse(rest) {
            Ok((t, r)) => {
                d.headers.push(Header { name: "TSS".into(), offset: at, fields: tss_fields(&t) });
                at = bytes.len() - r.len();
                let fields = vec![field("length", format!("{} bytes, with the 16-byte ICV", r.len()))];
                d.headers.push(Header { name: "ciphertext (not decrypted)".into(), offset: at, fields });
            }
            Err(e) => fail(&mut d, at, &e),
        }
        return d;
    }
    if let Err(e) = UetPacket::check_reserved(bytes, config) {
        d.warnings.push(format!("reserved bits set: {e}"));
    }
    let body =
        if config.crc { rest.len().checked_sub(uet_wire::packet::CRC_LEN).map(|n| &rest[..n]) } else { Some(rest) };
    let Some(body) = body else {
        fail(&mut d, at, &"truncated: no room for the CRC32C trailer");
        return d;
    };
    let (pds, after_pds) = match PdsHeader::parse(body) {
        Ok(v) => v,
        Err(e) => {
            fail(&mut d, at, &e);
            return d;
        }
    };
    let name = format!("PDS {}", spec_name(&format!("{:?}", pds.packet_type())));
    d.headers.push(Header { name, offset: at, fields: pds_fields(&pds) });
    at += body.len() - after_pds.len();
    let (ses, payload) = match SesHeader::parse(pds.next_header(), after_pds) {
        Ok(v) => v,
        Err(e) => {
            fail(&mut d, at, &e);
            return d;
        }
    };
    if let Some(s) = ses {
        let name = format!("SES {}", spec_name(&format!("{:?}", s.next_header())));
        d.headers.push(Header { name, offset: at, fields: ses_fields(&s) });
        at += after_pds.len() - payload.len();
        if let Some(expected) = s.payload_length() {
            if usize::from(expected) != payload.len() {
                let why = format!("SES payload_length {expected} but {} payload bytes", payload.len());
                fail(&mut d, at, &why);
                return d;
            }
        }
    }
    let shown = &payload[..payload.len().min(16)];
    let more = if payload.len() > 16 { " …" } else { "" };
    let text = format!("{} bytes: {}{more}", payload.len(), crate::uet_capture::hex(shown));
    d.headers.push(Header { name: "payload".into(), offset: at, fields: vec![field("data", text)] });
    if config.crc {
        at += payload.len();
        let trailer = &rest[rest.len() - uet_wire::packet::CRC_LEN..];
        let value = u32::from_be_bytes(trailer.try_into().unwrap_or_default());
        let verdict = match (crc_prefix, UetPacket::parse(bytes, config)) {
            (Some(prefix), Ok(p)) => match p.verify_crc(prefix) {
                Ok(()) => "correct".to_string(),
                Err(e) => {
                    fail(&mut d, at, &e);
                    "wrong".to_string()
                }
            },
            _ => "not checked: the IP addresses are not known".to_string(),
        };
        let fields = vec![field("crc32c", format!("{value:#010x}, {verdict}"))];
        d.headers.push(Header { name: "CRC32C trailer".into(), offset: at, fields });
    }
    d
}

/// The decoded packet as text: one header per block, one field per line.
pub fn to_text(d: &Decoded) -> String {
    let mut s = String::new();
    for h in &d.headers {
        writeln!(s, "  {} (byte {}):", h.name, h.offset).ok();
        for f in &h.fields {
            writeln!(s, "    {:<24} {}", f.name, f.text).ok();
        }
    }
    for w in &d.warnings {
        writeln!(s, "  warning: {w}").ok();
    }
    if let Some((at, e)) = &d.error {
        writeln!(s, "  error at byte {at}: {e}").ok();
    }
    s
}

/// The decoded packet as a JSON value.
pub fn to_json(d: &Decoded) -> serde_json::Value {
    let headers: Vec<serde_json::Value> = d
        .headers
        .iter()
        .map(|h| {
            // An array keeps the fields in wire order.
            let fields: Vec<serde_json::Value> =
                h.fields.iter().map(|f| serde_json::json!({ "name": f.name, "value": f.text })).collect();
            serde_json::json!({ "header": h.name, "offset": h.offset, "fields": fields })
        })
        .collect();
    let error = d.error.as_ref().map(|(at, e)| serde_json::json!({ "offset": at, "message": e }));
    serde_json::json!({ "headers": headers, "warnings": d.warnings, "error": error })
}
