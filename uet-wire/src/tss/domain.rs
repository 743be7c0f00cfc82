//! A secure domain: the keys, counters and checks behind sealing and opening UET packets
//! (UE 1.0 §3.7; the reference provider `ultraethernet/uet-ref-prov`, `uet_sec.c` and
//! `uet_sec_sd.c`).
//!
//! The embedder provisions a [`SecureDomain`] per SDI with up to two 32-byte keys, one per
//! association number (AN), and calls [`SecureDomain::seal`] on each packet it sends and
//! [`SecureDomain::open`] on each one it receives. Keys go in and are never readable back; they
//! and every key derived from them are zeroed on drop.
//!
//! **Which key seals a packet** ([`Mode`]):
//! - *direct*: the domain key as it is, no IV mask;
//! - *cluster*: a key per sender, derived with label "U1" from the packet's epoch, its rekey value
//!   (`(counter & rekey_mask) >> rekey_shift`) and the sender's identity;
//! - *server*: a key per client, derived with label "U2" (rekey 0) from the client's identity, in
//!   both directions; a server sends the client's SSI in the header;
//! - *client*: the same key, derived from the client's own identity.
//!
//! An identity is the SSI the header carries, else the IPv4 address, for IPv4; the IPv6 address for
//! IPv6 (even with an SSI). Derived keys are cached per peer and re-derived only when the epoch or
//! rekey value moves: the KDF is not on the per-packet path while the rekey bits stay put.
//!
//! **Counters.** One 48-bit transmit counter per installed key, shared by every peer: it starts at
//! 0 when the key is installed, every sealed packet (a retransmission too) takes the next value,
//! and [`SecureDomain::seal`] refuses with [`TssError::CountersExhausted`] once it reaches
//! 2^48 − 1 rather than reuse an IV. In server/client mode both ends seal under the same key and
//! IV prefix, so a server counts in the upper half of the space and a client in the lower
//! (*project-defined*, [`SecureDomain::counter_range`]). A direct-mode domain without SSIs
//! refuses to seal or open IPv6 packets, whose IVs would start with the same SDI for every
//! sender under the one key. A rotation to a freshly installed key therefore starts at 0,
//! as in the reference provider (which keeps one counter and resets it at each rotation); keeping
//! the counter with its key also means rotating back to a key still installed continues its
//! count instead of reusing IVs (*project-defined*). The key manager must never install the same
//! key twice. The epoch is the domain's, moved only by [`SecureDomain::set_epoch`]
//! (*project-defined*: the reference provider's test stand-in also resets it at a rotation; here
//! a rotation leaves it, so receivers' epoch checks do not see the new key's packets as late).
//!
//! **Receive checks, in order** — each failure a typed error that changes nothing but its counter:
//! SDI, the latch, SSI presence, epoch age, AN installed, replay, ICV.
//! - *Epoch*: a packet whose epoch is older than the domain's by more than `max_epoch_lifetime`
//!   (serial arithmetic on 16 bits, RFC 1982) is late. Newer epochs pass.
//! - *Latch*: after more than `auth_fail_threshold` ICV failures the domain drops every packet
//!   until [`SecureDomain::clear_latch`] (the reference provider re-initialises the domain).
//! - *Replay* (*project-defined*; the reference provider relies on the PDC's PSN checks alone):
//!   per peer and AN, a sliding bitmap of the 64 × `W` counters below the highest seen (IPsec's
//!   anti-replay window, RFC 4303 §3.4.3): a counter seen, or below the window, is refused. O(1)
//!   per packet. A sender's counter is shared by all its peers, so a receiver sees part of it:
//!   the window spans 2 048 of the sender's counters by default, which is 2 048 packets of
//!   reordering from a sender talking to this FEP alone, 256 from one spreading its packets over
//!   8 peers. A packet refused that way is resent by its PDC under a new counter; raise `W` for
//!   deeper reordering or wider fan-out. The peer table holds `S` entries; when it is full the
//!   least recently used one is replaced, and that peer's history goes with it (the PDC's PSN
//!   checks still refuse duplicates).
//!
//! **Rotation** (make-before-break): [`SecureDomain::install`] the new AN's key, then
//! [`SecureDomain::rotate`] to send under it; packets under either installed AN open until
//! [`SecureDomain::retire`] removes the old one. When to do each is the key manager's (SDME's)
//! decision; the reference provider's test stand-in rotates every 10 s with a 2 s guard.

use super::aead::{Aad, Framing, PacketKey, iv};
use super::kdf::{self, Identity, LABEL_CLUSTER, LABEL_SERVER, SessionKey};
use super::{COUNTER_MAX, ICV_LEN, Tsc, TssHeader};
use crate::error::Error;
use crate::pdc::IpAddr;
use crate::pdc::table::{mapped_ipv4, same_addr};

/// Half the 48-bit counter space: where a server's counters start (see
/// [`SecureDomain::counter_range`]).
const HALF: u64 = 1 << 47;

/// The replay window per peer and AN, in 64-bit words: 32 words, 2 048 counters, by default
/// (*project-defined*; a [`SecureDomain`]'s `W`). A packet whose counter is that far below the
/// highest seen from its sender is refused like a loss (the PDC resends it under a new counter).
pub const REPLAY_WINDOW: usize = 32;

/// How packet keys come from the domain key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Mode {
    /// The domain key seals every packet, with no IV mask.
    Direct,
    /// A key per sender (label "U1", with implicit rekeying).
    Cluster,
    /// This FEP serves clients: a key per client (label "U2").
    Server,
    /// This FEP is a client of a server: its own key (label "U2").
    Client,
}

/// What the embedder sets per domain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DomainConfig {
    /// Secure domain index (24 bits).
    pub sdi: u32,
    /// Key mode.
    pub mode: Mode,
    /// This FEP's SSI: when set, every packet carries an SSI (SP = 1) and a received packet
    /// without one is refused. A server sends its client's SSI instead ([`Path::peer_ssi`]).
    pub ssi: Option<u32>,
    /// Counter bits that select the rekey value (cluster mode). Default `0xFF00`: a new key every
    /// 256 packets (the reference provider's test default; the real value is configuration).
    pub rekey_mask: u64,
    /// Right shift applied after the mask. Default 8.
    pub rekey_shift: u8,
    /// How many epochs old a packet may be. Default 16 (the reference provider's).
    pub max_epoch_lifetime: u16,
    /// ICV failures tolerated before the domain latches to dropping. Default 1 000 (the
    /// reference provider's).
    pub auth_fail_threshold: u64,
}

impl DomainConfig {
    /// The defaults above for domain `sdi` in `mode`, without SSI.
    pub const fn new(sdi: u32, mode: Mode) -> Self {
        DomainConfig {
            sdi,
            mode,
            ssi: None,
            rekey_mask: 0xFF00,
            rekey_shift: 8,
            max_epoch_lifetime: 16,
            auth_fail_threshold: 1000,
        }
    }
}

/// The addresses and framing of one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Path {
    /// IP source (16-byte form; IPv4 mapped).
    pub src: IpAddr,
    /// IP destination.
    pub dst: IpAddr,
    /// UDP or native IP with its entropy header.
    pub framing: Framing,
    /// Sending as a server: the client's SSI, which the header carries (ignored otherwise).
    pub peer_ssi: Option<u32>,
}

impl Path {
    /// A packet from `src` to `dst` framed as `framing`.
    pub const fn new(src: IpAddr, dst: IpAddr, framing: Framing) -> Self {
        Path { src, dst, framing, peer_ssi: None }
    }
}

/// Why a packet was not sealed or opened. Each leaves the domain as it was, apart from the
/// counter in [`TssStats`] named on the variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum TssError {
    /// The packet or buffer is too short or the header unreadable (`in_invalid`).
    Malformed(Error),
    /// The header names another secure domain (`in_invalid_sa`).
    WrongSdi(u32),
    /// The domain latched after too many ICV failures (`in_invalid`).
    Latched,
    /// The domain uses SSIs and the header carries none, or a server sends without the client's
    /// (`in_invalid` / `out_invoke_fail`).
    SsiRequired,
    /// The packet's epoch is older than the domain's lifetime allows (`in_late_pkts`).
    LateEpoch(u16),
    /// No key is installed for this AN (`in_invalid_sa` / `out_invoke_fail`).
    UnknownAn(bool),
    /// This counter was seen already, or is below the replay window (`in_replayed_pkts`).
    Replayed(u64),
    /// The ICV does not match (`in_auth_fail_pkts`).
    AuthFailed,
    /// The transmit counter reached 2^48 − 1: sealing more would reuse an IV (`out_invoke_fail`).
    CountersExhausted,
}

impl From<Error> for TssError {
    fn from(e: Error) -> Self {
        TssError::Malformed(e)
    }
}

impl core::fmt::Display for TssError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            TssError::Malformed(e) => write!(f, "TSS: {e}"),
            TssError::WrongSdi(sdi) => write!(f, "TSS: packet for secure domain {sdi:#x}"),
            TssError::Latched => f.write_str("TSS: domain latched after too many authentication failures"),
            TssError::SsiRequired => f.write_str("TSS: SSI required"),
            TssError::LateEpoch(e) => write!(f, "TSS: epoch {e} too old"),
            TssError::UnknownAn(an) => write!(f, "TSS: no key for AN {}", u8::from(an)),
            TssError::Replayed(c) => write!(f, "TSS: counter {c:#x} replayed"),
            TssError::AuthFailed => f.write_str("TSS: authentication failed"),
            TssError::CountersExhausted => f.write_str("TSS: transmit counter exhausted"),
        }
    }
}

impl core::error::Error for TssError {}

/// The domain's statistics, named as the reference provider names the specification's counters
/// (`in_replayed_pkts` is this crate's, for its replay check). *Project-defined*: a packet for
/// another SDI counts in `in_invalid_sa`; the reference provider, which looks the domain up
/// itself, counts a port-level `in_errored_pkts` there.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TssStats {
    /// Packets opened.
    pub in_auth_pkts: u64,
    /// ICV failures.
    pub in_auth_fail_pkts: u64,
    /// Malformed, latched, or missing SSI.
    pub in_invalid: u64,
    /// Wrong SDI or an AN with no key.
    pub in_invalid_sa: u64,
    /// Epoch too old.
    pub in_late_pkts: u64,
    /// Counter replayed or below the window.
    pub in_replayed_pkts: u64,
    /// Packets sealed.
    pub out_auth_pkts: u64,
    /// Seals refused (no key, no SSI, counters exhausted, buffer too short).
    pub out_invoke_fail: u64,
}

/// A packet [`SecureDomain::open`] authenticated and decrypted in place.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Opened {
    /// Its TSS header.
    pub header: TssHeader,
    /// Where the plaintext (PDS header onwards) lies in the buffer: after the header, before the
    /// ICV.
    pub body: core::ops::Range<usize>,
}

/// The counters seen from one peer under one AN: the highest, and a bitmap of the `64 × W`
/// counters up to it (IPsec's anti-replay window, RFC 4303 §3.4.3, over the TSC counter).
#[derive(Clone, Debug)]
struct Replay<const W: usize> {
    /// The highest counter seen.
    top: Option<u64>,
    /// Bit `c % (64 × W)` is set when counter `c` (within the window below `top`) was seen.
    seen: [u64; W],
}

impl<const W: usize> Replay<W> {
    const SPAN: u64 = 64 * W as u64;

    const fn new() -> Self {
        Replay { top: None, seen: [0; W] }
    }

    fn bit(c: u64) -> (usize, u64) {
        let at = c % Self::SPAN;
        ((at / 64) as usize, 1 << (at % 64))
    }

    fn fresh(&self, counter: u64) -> bool {
        match self.top {
            None => true,
            Some(top) if counter > top => true,
            Some(top) if top - counter >= Self::SPAN => false,
            Some(_) => {
                let (word, mask) = Self::bit(counter);
                self.seen.get(word).is_some_and(|w| w & mask == 0)
            }
        }
    }

    /// Records `counter` (fresh): a new top slides the window, forgetting what falls out of it.
    fn record(&mut self, counter: u64) {
        match self.top {
            Some(top) if counter <= top => {}
            Some(top) if counter - top < Self::SPAN => {
                for c in top + 1..counter {
                    let (word, mask) = Self::bit(c);
                    if let Some(w) = self.seen.get_mut(word) {
                        *w &= !mask;
                    }
                }
                self.top = Some(counter);
            }
            _ => {
                self.seen = [0; W];
                self.top = Some(counter);
            }
        }
        let (word, mask) = Self::bit(counter);
        if let Some(w) = self.seen.get_mut(word) {
            *w |= mask;
        }
    }
}

/// One peer under one AN: its derived key (when the mode derives) and its replay window.
#[derive(Clone, Debug)]
struct Peer<const W: usize> {
    an: bool,
    ssi: Option<u32>,
    addr: IpAddr,
    /// The derived key and the (epoch, rekey, identity) it was derived for.
    key: Option<(u16, u32, Identity, PacketKey)>,
    replay: Replay<W>,
    used: u64,
}

/// One AN's key.
struct Slot {
    master: SessionKey,
    /// The expanded key in direct mode.
    direct: Option<PacketKey>,
    /// The counter the next packet sealed under this key takes.
    counter: u64,
}

/// A secure domain: keys by AN, the transmit counter and epoch, receive checks and statistics
/// (module doc). `S` is how many peers it keeps derived keys and replay windows for, `W` the
/// size of each replay window in 64-bit words.
pub struct SecureDomain<const S: usize = 16, const W: usize = REPLAY_WINDOW> {
    cfg: DomainConfig,
    slots: [Option<Slot>; 2],
    tx_an: bool,
    epoch: u16,
    auth_fails: u64,
    latched: bool,
    /// The key this FEP sends under in cluster and client mode, by (AN, epoch, rekey, identity:
    /// a FEP may send from more than one address).
    tx_key: Option<(bool, u16, u32, Identity, PacketKey)>,
    peers: heapless::Vec<Peer<W>, S>,
    tick: u64,
    stats: TssStats,
}

impl<const S: usize, const W: usize> core::fmt::Debug for SecureDomain<S, W> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SecureDomain")
            .field("cfg", &self.cfg)
            .field("keys", &[self.slots[0].is_some(), self.slots[1].is_some()])
            .field("tx_an", &self.tx_an)
            .field("tsc", &self.tx_tsc())
            .field("latched", &self.latched)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl<const S: usize, const W: usize> SecureDomain<S, W> {
    const SIZE_OK: () = assert!(S >= 1 && W >= 1, "a domain keeps at least one peer and one window word");

    /// A domain with no keys yet; it sends under AN 0 once [`SecureDomain::install`] gives it one.
    pub const fn new(cfg: DomainConfig) -> Self {
        let () = Self::SIZE_OK;
        SecureDomain {
            cfg,
            slots: [None, None],
            tx_an: false,
            epoch: 0,
            auth_fails: 0,
            latched: false,
            tx_key: None,
            peers: heapless::Vec::new(),
            tick: 0,
            stats: ZERO_STATS,
        }
    }

    /// The configuration.
    pub const fn config(&self) -> &DomainConfig {
        &self.cfg
    }

    /// The statistics.
    pub const fn stats(&self) -> &TssStats {
        &self.stats
    }

    /// The AN packets are sealed under.
    pub const fn tx_an(&self) -> bool {
        self.tx_an
    }

    /// The TSC the next sealed packet takes (counter 0 while the sending AN has no key).
    pub fn tx_tsc(&self) -> Tsc {
        Tsc { epoch: self.epoch, counter: self.slot(self.tx_an).map_or(0, |s| s.counter) }
    }

    /// Whether the domain drops every packet after too many ICV failures.
    pub const fn is_latched(&self) -> bool {
        self.latched
    }

    /// Bytes a sealed packet adds: the TSS header before the PDS header (16 with an SSI: when
    /// the domain has one, and always for a server, which sends its client's; else 12) and the
    /// ICV after the payload.
    pub const fn overhead(&self) -> (usize, usize) {
        let ssi = matches!(self.cfg.mode, Mode::Server) || self.cfg.ssi.is_some();
        (if ssi { TssHeader::LEN_SSI } else { TssHeader::LEN }, ICV_LEN)
    }

    /// The counters this domain's keys seal with: `start..end`. *Project-defined*: in
    /// server/client mode both ends seal under the same client key with the same IV prefix (the
    /// client's SSI, or the SDI for IPv6), so a server takes the upper half of the 48-bit counter
    /// space and a client the lower half, and no (key, IV) pair is used by both. Receivers,
    /// the reference provider's too, accept any counter. The reference provider's server and
    /// client both count from 0, so a client of ours facing such a server still shares counters
    /// with it: the spec text should settle this.
    pub const fn counter_range(&self) -> (u64, u64) {
        match self.cfg.mode {
            Mode::Server => (HALF, COUNTER_MAX),
            Mode::Client => (0, HALF),
            Mode::Direct | Mode::Cluster => (0, COUNTER_MAX),
        }
    }

    /// Installs `key` for `an`, replacing the one there (whose derived keys and replay windows
    /// go too). In direct mode it seals as is; otherwise it is the key the mode derives from.
    pub fn install(&mut self, an: bool, key: [u8; 32]) {
        self.retire(an);
        let master = SessionKey::direct(key);
        let direct = (self.cfg.mode == Mode::Direct).then(|| PacketKey::new(&master));
        let counter = self.counter_range().0;
        if let Some(slot) = self.slots.get_mut(usize::from(an)) {
            *slot = Some(Slot { master, direct, counter });
        }
    }

    /// Sends under `an` from now on, continuing its key's counter (the start of
    /// [`SecureDomain::counter_range`] for a key just installed).
    /// Fails with [`TssError::UnknownAn`] when `an` has no key.
    pub fn rotate(&mut self, an: bool) -> Result<(), TssError> {
        if self.slot(an).is_none() {
            return Err(TssError::UnknownAn(an));
        }
        self.tx_an = an;
        Ok(())
    }

    /// Removes `an`'s key and what was derived from it: packets under it are refused from now
    /// on (the end of a make-before-break rotation). Sealing under it fails until a new key is
    /// installed.
    pub fn retire(&mut self, an: bool) {
        if let Some(slot) = self.slots.get_mut(usize::from(an)) {
            *slot = None;
        }
        self.peers.retain(|p| p.an != an);
        if self.tx_key.as_ref().is_some_and(|k| k.0 == an) {
            self.tx_key = None;
        }
    }

    /// Moves the epoch forward to `epoch` (the key manager's decision, e.g. when a FEP leaves and
    /// rejoins). Packets then carry it, and received ones more than `max_epoch_lifetime` older
    /// are late. An epoch that is not ahead of the current one (serial arithmetic) is ignored.
    pub fn set_epoch(&mut self, epoch: u16) {
        let ahead = epoch.wrapping_sub(self.epoch);
        if ahead != 0 && ahead < 0x8000 {
            self.epoch = epoch;
        }
    }

    /// Resumes the sending key's counter at `counter` (e.g. restored after a restart, so no
    /// value is used twice). Only moves it forward, and at most to the end of
    /// [`SecureDomain::counter_range`], where sealing stops.
    pub fn resume_counter(&mut self, counter: u64) {
        let end = self.counter_range().1;
        if let Some(slot) = self.slots.get_mut(usize::from(self.tx_an)).and_then(Option::as_mut) {
            slot.counter = slot.counter.max(counter.min(end));
        }
    }

    /// Lets packets in again after the ICV-failure latch, and restarts its count.
    pub fn clear_latch(&mut self) {
        self.latched = false;
        self.auth_fails = 0;
    }

    fn slot(&self, an: bool) -> Option<&Slot> {
        self.slots.get(usize::from(an)).and_then(Option::as_ref)
    }

    /// Seals a packet in place. `packet[..h]` is left for the TSS header (h from
    /// [`SecureDomain::overhead`]), `packet[h..len]` holds the PDS header onwards in clear, and
    /// `packet[len..len + 16]` takes the ICV. Returns the sealed length, `len + 16`.
    ///
    /// Refused with [`TssError::SsiRequired`]: a server sending without [`Path::peer_ssi`], and
    /// a direct-mode domain without an SSI sending from IPv6, where every sender's IV would start
    /// with the same SDI under the one key (the reference provider disables that setup too).
    pub fn seal(&mut self, packet: &mut [u8], len: usize, path: &Path) -> Result<usize, TssError> {
        let r = self.seal_inner(packet, len, path);
        match r {
            Ok(_) => self.stats.out_auth_pkts += 1,
            Err(_) => self.stats.out_invoke_fail += 1,
        }
        r
    }

    fn seal_inner(&mut self, packet: &mut [u8], len: usize, path: &Path) -> Result<usize, TssError> {
        let an = self.tx_an;
        if self.slot(an).ok_or(TssError::UnknownAn(an))?.counter >= self.counter_range().1 {
            return Err(TssError::CountersExhausted);
        }
        let ssi = match self.cfg.mode {
            Mode::Server => Some(path.peer_ssi.ok_or(TssError::SsiRequired)?),
            _ => self.cfg.ssi,
        };
        if self.shared_iv_prefix(ssi, &path.src) {
            return Err(TssError::SsiRequired);
        }
        let header = TssHeader { an, sdi: self.cfg.sdi, ssi, tsc: self.tx_tsc() };
        let h = header.buffer_len();
        let total = len.checked_add(ICV_LEN).filter(|&t| len >= h && packet.len() >= t);
        let Some(total) = total else {
            return Err(Error::BufferTooShort { needed: len.max(h).saturating_add(ICV_LEN), got: packet.len() }.into());
        };
        self.key_for(an, header, path, true)?;
        let key = self.cached_key(an, header, path, true).ok_or(TssError::UnknownAn(an))?;
        let (clear, rest) = packet.split_at_mut(h);
        header.emit(clear)?;
        let (body, tail) = rest.split_at_mut(len - h);
        let iv = iv(ssi, self.cfg.sdi, &path.src, header.tsc, key.iv_mask());
        let aad = Aad::new(&path.src, &path.dst, path.framing, clear);
        let icv = key.seal(&iv, aad.as_bytes(), body);
        if let Some(dst) = tail.get_mut(..ICV_LEN) {
            dst.copy_from_slice(&icv);
        }
        if let Some(slot) = self.slots.get_mut(usize::from(an)).and_then(Option::as_mut) {
            slot.counter += 1;
        }
        Ok(total)
    }

    /// Authenticates and decrypts a received packet in place: `packet` holds the TSS header, the
    /// ciphertext and the ICV (after the entropy header in native-IP framing). On success the
    /// plaintext lies at [`Opened::body`]; on failure the bytes are as they came and the domain
    /// changed only its statistics.
    pub fn open(&mut self, packet: &mut [u8], path: &Path) -> Result<Opened, TssError> {
        let r = self.open_inner(packet, path);
        let s = &mut self.stats;
        match r {
            Ok(_) => s.in_auth_pkts += 1,
            Err(TssError::Malformed(_) | TssError::Latched | TssError::SsiRequired) => s.in_invalid += 1,
            Err(TssError::WrongSdi(_) | TssError::UnknownAn(_)) => s.in_invalid_sa += 1,
            Err(TssError::LateEpoch(_)) => s.in_late_pkts += 1,
            Err(TssError::Replayed(_)) => s.in_replayed_pkts += 1,
            Err(TssError::AuthFailed) => {
                s.in_auth_fail_pkts += 1;
                self.auth_fails += 1;
                if self.auth_fails > self.cfg.auth_fail_threshold {
                    self.latched = true;
                }
            }
            Err(TssError::CountersExhausted) => {}
        }
        r
    }

    fn open_inner(&mut self, packet: &mut [u8], path: &Path) -> Result<Opened, TssError> {
        let (header, _) = TssHeader::parse(packet)?;
        let h = header.buffer_len();
        let end = packet.len().checked_sub(ICV_LEN).filter(|&e| e >= h).ok_or(Error::Truncated {
            field: "TSS packet",
            needed: h + ICV_LEN,
            got: packet.len(),
        })?;
        if header.sdi != self.cfg.sdi {
            return Err(TssError::WrongSdi(header.sdi));
        }
        if self.latched {
            return Err(TssError::Latched);
        }
        if (self.cfg.ssi.is_some() && header.ssi.is_none()) || self.shared_iv_prefix(header.ssi, &path.src) {
            return Err(TssError::SsiRequired);
        }
        let age = self.epoch.wrapping_sub(header.tsc.epoch);
        if age < 0x8000 && age > self.cfg.max_epoch_lifetime {
            return Err(TssError::LateEpoch(header.tsc.epoch));
        }
        let an = header.an;
        if self.slot(an).is_none() {
            return Err(TssError::UnknownAn(an));
        }
        let counter = header.tsc.counter;
        if self
            .find_peer(an, header.ssi, &path.src)
            .and_then(|i| self.peers.get(i))
            .is_some_and(|p| !p.replay.fresh(counter))
        {
            return Err(TssError::Replayed(counter));
        }
        // A key derived for this packet is kept only once the packet authenticates.
        let fresh = self.derive_if_needed(an, header, path, false);
        let key = match &fresh {
            Some(k) => Some(k),
            None => self.cached_key(an, header, path, false),
        }
        .ok_or(TssError::UnknownAn(an))?;
        let (clear, rest) = packet.split_at_mut(h);
        let (body, icv) = rest.split_at_mut(end - h);
        let icv: [u8; ICV_LEN] = icv.try_into().map_err(|_| Error::Mismatch { field: "TSS ICV" })?;
        let iv = iv(header.ssi, self.cfg.sdi, &path.src, header.tsc, key.iv_mask());
        let aad = Aad::new(&path.src, &path.dst, path.framing, clear);
        key.open(&iv, aad.as_bytes(), body, &icv).map_err(|_| TssError::AuthFailed)?;
        let rekey = self.rekey_of(counter);
        let who = self.kdf_input(&header, path, false).map(|(_, who)| who);
        if let Some(p) = self.peer_entry(an, header.ssi, path.src) {
            if let (Some(k), Some(who)) = (fresh, who) {
                p.key = Some((header.tsc.epoch, rekey, who, k));
            }
            p.replay.record(counter);
        }
        Ok(Opened { header, body: h..end })
    }

    /// Whether a packet with `ssi` from `src` would take an IV prefix every sender shares under
    /// one key: direct mode, IPv6, no SSI (the IV starts with the SDI).
    fn shared_iv_prefix(&self, ssi: Option<u32>, src: &IpAddr) -> bool {
        self.cfg.mode == Mode::Direct && ssi.is_none() && mapped_ipv4(src).is_none()
    }

    /// The rekey value of a counter (cluster mode only; 0 otherwise).
    fn rekey_of(&self, counter: u64) -> u32 {
        match self.cfg.mode {
            Mode::Cluster => ((counter & self.cfg.rekey_mask & COUNTER_MAX) >> (self.cfg.rekey_shift & 63)) as u32,
            _ => 0,
        }
    }

    /// The label and identity the packet's key derives from, or `None` in direct mode.
    /// `sending` tells which end of `path` this FEP is.
    fn kdf_input(&self, header: &TssHeader, path: &Path, sending: bool) -> Option<(&'static [u8], Identity)> {
        let (label, subject) = match self.cfg.mode {
            Mode::Direct => return None,
            Mode::Cluster => (LABEL_CLUSTER, &path.src),
            Mode::Server => (LABEL_SERVER, if sending { &path.dst } else { &path.src }),
            Mode::Client => (LABEL_SERVER, if sending { &path.src } else { &path.dst }),
        };
        let id = match (mapped_ipv4(subject), header.ssi) {
            (None, _) => Identity::V6(*subject),
            (Some(_), Some(ssi)) => Identity::V4(ssi.to_be_bytes()),
            (Some(v4), None) => Identity::V4(v4),
        };
        Some((label, id))
    }

    /// A key freshly derived for this packet when the cache does not hold it (`None` in direct
    /// mode, with no key for the AN, or when the cached one fits).
    fn derive_if_needed(&self, an: bool, header: TssHeader, path: &Path, sending: bool) -> Option<PacketKey> {
        if self.cached_key(an, header, path, sending).is_some() {
            return None;
        }
        let (label, who) = self.kdf_input(&header, path, sending)?;
        let master = &self.slot(an)?.master;
        let rekey = self.rekey_of(header.tsc.counter);
        Some(PacketKey::new(&kdf::derive(&master.key, label, header.tsc.epoch, rekey, &who)))
    }

    /// Derives and caches the sending key when needed.
    fn key_for(&mut self, an: bool, header: TssHeader, path: &Path, sending: bool) -> Result<(), TssError> {
        if self.slot(an).is_none() {
            return Err(TssError::UnknownAn(an));
        }
        if let Some(k) = self.derive_if_needed(an, header, path, sending) {
            let (epoch, rekey) = (header.tsc.epoch, self.rekey_of(header.tsc.counter));
            let Some((_, who)) = self.kdf_input(&header, path, sending) else { return Ok(()) };
            match self.cfg.mode {
                Mode::Server => {
                    if let Some(p) = self.peer_entry(an, header.ssi, path.dst) {
                        p.key = Some((epoch, rekey, who, k));
                    }
                }
                _ => self.tx_key = Some((an, epoch, rekey, who, k)),
            }
        }
        Ok(())
    }

    /// The cached key that seals or opens this packet: derived for its epoch, rekey value and
    /// identity (a FEP may send or receive at more than one address).
    fn cached_key(&self, an: bool, header: TssHeader, path: &Path, sending: bool) -> Option<&PacketKey> {
        let slot = self.slot(an)?;
        if self.cfg.mode == Mode::Direct {
            return slot.direct.as_ref();
        }
        let who = self.kdf_input(&header, path, sending).map(|(_, who)| who)?;
        let rekey = self.rekey_of(header.tsc.counter);
        let fits = |epoch: u16, r: u32, w: &Identity| epoch == header.tsc.epoch && r == rekey && *w == who;
        match self.cfg.mode {
            Mode::Cluster | Mode::Client if sending => {
                self.tx_key.as_ref().filter(|k| k.0 == an && fits(k.1, k.2, &k.3)).map(|k| &k.4)
            }
            _ => {
                let remote = if sending { &path.dst } else { &path.src };
                let peer = self.peers.get(self.find_peer(an, header.ssi, remote)?)?;
                peer.key.as_ref().filter(|k| fits(k.0, k.1, &k.2)).map(|k| &k.3)
            }
        }
    }

    fn find_peer(&self, an: bool, ssi: Option<u32>, addr: &IpAddr) -> Option<usize> {
        self.peers.iter().position(|p| p.an == an && p.ssi == ssi && same_addr(&p.addr, addr))
    }

    /// The entry of a peer, made (replacing the least recently used when full) if new.
    fn peer_entry(&mut self, an: bool, ssi: Option<u32>, addr: IpAddr) -> Option<&mut Peer<W>> {
        self.tick += 1;
        let at = match self.find_peer(an, ssi, &addr) {
            Some(i) => i,
            None => {
                let fresh = Peer { an, ssi, addr, key: None, replay: Replay::new(), used: 0 };
                if self.peers.is_full()
                    && let Some(lru) = self.peers.iter().enumerate().min_by_key(|(_, p)| p.used).map(|(i, _)| i)
                {
                    self.peers.swap_remove(lru);
                }
                self.peers.push(fresh).ok()?;
                self.peers.len() - 1
            }
        };
        let tick = self.tick;
        let p = self.peers.get_mut(at)?;
        p.used = tick;
        Some(p)
    }
}

const ZERO_STATS: TssStats = TssStats {
    in_auth_pkts: 0,
    in_auth_fail_pkts: 0,
    in_invalid: 0,
    in_invalid_sa: 0,
    in_late_pkts: 0,
    in_replayed_pkts: 0,
    out_auth_pkts: 0,
    out_invoke_fail: 0,
};

#[cfg(test)]
mod tests;
