//! A fixed-capacity PDC table: O(1) lookup by local PDC id and by a selection key (UE 1.0
//! §3.5.8.1).
//!
//! * **PDC ids** are 16 bits and never 0 (UE 1.0 §3.5.8.2, as quoted in uet-ref-prov). The table
//!   makes an id from the slot index and a per-slot generation, `id = first + generation × N +
//!   index` within the id range it was given (`1..=65535` by default), so an id is not handed out
//!   again right after its PDC closes: a late packet for the old PDC finds no PDC (and is NACKed
//!   INV_DPDCID) instead of landing in a new one. Generations cycle through `range / N` values
//!   (*project-defined*). A node whose initiator and target PDCs live in two tables gives them
//!   disjoint ranges ([`PdcTable::with_ids`]): a packet's DPDCID alone must name one PDC, as ACKs
//!   and NACKs travel both ways on a PDC.
//! * **Selection keys**: an initiator picks its PDC by [`InitiatorKey`] (mode, JobID, addresses,
//!   traffic class; uet-ref-prov) and a target finds the PDC a SYN belongs to by [`TargetKey`]
//!   (addresses and the initiator's PDC id; uet-ref-prov).
//! * **When full**, [`PdcTable::insert`] fails with [`TableError::Full`] and changes nothing: an
//!   initiator holds the message until a PDC closes, a target answers NACK NO_PDC_AVAIL (a
//!   retransmit-class code, so the initiator tries again).
//!
//! `N` is 2 to 32768, any number. The key index is a chained hash over the slots themselves: a
//! bucket head per slot and a link per slot (4 bytes a slot, the key is kept once, in its slot,
//! with its bucket in bytes that pad it), so a lookup hashes the key once and compares the keys
//! on one chain, 1.5 on average with every slot in use, and a removal does not hash at all. The
//! hash is SipHash-1-3 (what Rust's standard `HashMap` uses against keys an adversary chooses)
//! under a key the owner sets ([`PdcTable::set_hash_key`]): peers choose addresses and PDC ids,
//! and with an unkeyed hash could make every key share one chain.

use crate::pds::DeliveryMode;
use core::hash::{Hash, Hasher};
use siphasher::sip::SipHasher13;

/// A slot index below 2^15, or none, as the key index (and the message-order pool's lists)
/// store it: inverted, so that 0 is no slot (the end of a chain, an empty bucket) and an empty
/// table is all-zero bytes (see [`PdcTable::EMPTY`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct SlotRef(u16);

impl SlotRef {
    /// No slot (all-zero bytes).
    pub(crate) const NONE: SlotRef = SlotRef(0);

    /// Slot `index`.
    pub(crate) const fn to(index: usize) -> SlotRef {
        SlotRef(!(index as u16))
    }

    /// The slot, if any.
    pub(crate) const fn index(self) -> Option<usize> {
        if self.0 == 0 { None } else { Some(!self.0 as usize) }
    }
}

/// The free slots of an array of `N` (`N` ≤ 32 768): those returned, last returned first, then
/// those never used, lowest first. Empty, it is all-zero bytes and every slot is free.
#[derive(Clone, Debug)]
pub(crate) struct FreeSlots<const N: usize> {
    returned: heapless::Vec<u16, N>,
    /// Slots `fresh..N` were never used.
    fresh: u16,
}

impl<const N: usize> FreeSlots<N> {
    /// Every slot free.
    pub(crate) const EMPTY: Self = FreeSlots { returned: heapless::Vec::new(), fresh: 0 };

    /// The slot [`FreeSlots::take`] gives next.
    pub(crate) fn next(&self) -> Option<u16> {
        match self.returned.last() {
            Some(&i) => Some(i),
            None => (usize::from(self.fresh) < N).then_some(self.fresh),
        }
    }

    /// A free slot, now in use.
    pub(crate) fn take(&mut self) -> Option<u16> {
        let i = self.next()?;
        if self.returned.pop().is_none() {
            self.fresh += 1;
        }
        Some(i)
    }

    /// Frees `index`, which must be in use.
    pub(crate) fn give(&mut self, index: u16) {
        // At most N slots are in use, so the list has room.
        let _ = self.returned.push(index);
    }

    /// Slots in use.
    pub(crate) fn used(&self) -> usize {
        usize::from(self.fresh).saturating_sub(self.returned.len())
    }

    /// The free slots, the next one to be taken first.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn iter(&self) -> impl Iterator<Item = u16> + '_ {
        self.returned.iter().rev().copied().chain(self.fresh..N as u16)
    }

    /// Every slot free again, in place.
    pub(crate) fn clear(&mut self) {
        *self = Self::EMPTY;
    }
}

/// An IP address as 16 bytes (IPv4 as IPv4-mapped IPv6, `::ffff:a.b.c.d`).
pub type IpAddr = [u8; 16];

/// The IPv4-mapped form of an IPv4 address.
pub const fn ipv4(a: [u8; 4]) -> IpAddr {
    let [b0, b1, b2, b3] = a;
    [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, b0, b1, b2, b3]
}

/// Whether two addresses are the same: `a == b` as two 128-bit words, where comparing the
/// arrays is a `memcmp` call on a small core (about 125 Cortex-M4 instructions a comparison).
#[inline]
pub(crate) const fn same_addr(a: &IpAddr, b: &IpAddr) -> bool {
    u128::from_ne_bytes(*a) == u128::from_ne_bytes(*b)
}

/// The IPv4 address of an IPv4-mapped one, `None` for IPv6.
pub(crate) fn mapped_ipv4(a: &IpAddr) -> Option<[u8; 4]> {
    match *a {
        [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, b0, b1, b2, b3] => Some([b0, b1, b2, b3]),
        _ => None,
    }
}

/// The 16-byte form of a `core::net` address: IPv4 mapped (`::ffff:a.b.c.d`), IPv6 as is.
pub const fn ip(addr: core::net::IpAddr) -> IpAddr {
    match addr {
        core::net::IpAddr::V4(a) => ipv4(a.octets()),
        core::net::IpAddr::V6(a) => a.octets(),
    }
}

/// How an initiator chooses the PDC for a new message (UE 1.0 §3.5.8.1; the tuple of uet-ref-prov
/// `uet_pds.c`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct InitiatorKey {
    /// RUD or ROD.
    pub mode: DeliveryMode,
    /// The job.
    pub job_id: u32,
    /// Local address.
    pub src: IpAddr,
    /// Peer address.
    pub dst: IpAddr,
    /// Traffic class.
    pub tc: u8,
}

/// How a target finds the PDC of a SYN request (the key of uet-ref-prov `uet_pds.c`; UE 1.0
/// §3.5.8.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TargetKey {
    /// The initiator's address.
    pub src: IpAddr,
    /// The target's address.
    pub dst: IpAddr,
    /// The initiator's PDC id (the packet's SPDCID).
    pub spdcid: u16,
}

/// Why a PDC could not be added.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum TableError {
    /// Every slot is in use.
    Full,
    /// A PDC with this key exists already (its id is given).
    KeyInUse {
        /// The existing PDC's id.
        id: u16,
    },
}

impl core::fmt::Display for TableError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            TableError::Full => write!(f, "every PDC slot is in use"),
            TableError::KeyInUse { id } => write!(f, "PDC {id} has this key already"),
        }
    }
}

impl core::error::Error for TableError {}

/// A table slot: free, or a PDC with its id, its key and its key's bucket in the key index
/// (`home`: removing it unlinks it without hashing the key again). The tag comes first and is 0
/// for a free slot (an empty table is all-zero bytes); the id fits beside it, and the bucket
/// after the key, in bytes that would otherwise pad the PDC (the endpoint's keys are 2-byte and
/// 4-byte aligned, its PDCs 8-byte), so the slot costs what `Option<(u16, K, T)>` would.
#[derive(Clone, Debug)]
#[repr(u8)]
enum Slot<K, T> {
    Free = 0,
    Used { id: u16, key: K, home: u16, pdc: T } = 1,
}

impl<K, T> Slot<K, T> {
    const fn id(&self) -> Option<u16> {
        match self {
            Slot::Used { id, .. } => Some(*id),
            Slot::Free => None,
        }
    }

    const fn key(&self) -> Option<&K> {
        match self {
            Slot::Used { key, .. } => Some(key),
            Slot::Free => None,
        }
    }

    const fn pdc(&self) -> Option<&T> {
        match self {
            Slot::Used { pdc, .. } => Some(pdc),
            Slot::Free => None,
        }
    }

    const fn pdc_mut(&mut self) -> Option<&mut T> {
        match self {
            Slot::Used { pdc, .. } => Some(pdc),
            Slot::Free => None,
        }
    }
}

/// Up to `N` PDCs of type `T`, found by id or by key `K`.
#[derive(Clone, Debug)]
pub struct PdcTable<K, T, const N: usize> {
    slots: [Slot<K, T>; N],
    /// The id range: its first id less one, and 65 535 less its last id (both 0 by default).
    below_first: u16,
    above_last: u16,
    generations: [u16; N],
    free: FreeSlots<N>,
    /// The key index: the first slot of each bucket's chain, and each slot's next on its chain.
    buckets: [SlotRef; N],
    chain: [SlotRef; N],
    /// The key index's SipHash key ([`PdcTable::set_hash_key`]; 0 until set).
    hash_key: [u64; 2],
}

impl<K: Hash + Eq + Clone, T, const N: usize> Default for PdcTable<K, T, N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Hash + Eq + Clone, T, const N: usize> PdcTable<K, T, N> {
    /// Rejects, at compile time, capacities whose ids would not fit 16 bits.
    const CAPACITY_FITS: () = assert!(N >= 2 && N <= 32768, "a PDC table holds 2 to 32768 PDCs");

    /// The bucket of `key` under `hash_key`: its SipHash-1-3's top 32 bits scaled to `0..N`.
    fn bucket(hash_key: &[u64; 2], key: &K) -> usize {
        let mut h = SipHasher13::new_with_keys(hash_key[0], hash_key[1]);
        key.hash(&mut h);
        (((h.finish() >> 32) * N as u64) >> 32) as usize
    }

    /// Keys the index's hash with `key`, so that a peer who cannot learn it cannot choose keys
    /// (addresses, PDC ids) that share a bucket and turn lookups into scans; draw it from a
    /// source of randomness ([`Endpoint::init`](crate::msg::Endpoint::init) derives it from its
    /// seed). The PDCs in the table are indexed again: O(`N`).
    pub fn set_hash_key(&mut self, key: [u64; 2]) {
        self.hash_key = key;
        self.buckets.fill(SlotRef::NONE);
        self.chain.fill(SlotRef::NONE);
        for (i, slot) in self.slots.iter_mut().enumerate() {
            let Slot::Used { home, key: k, .. } = slot else { continue };
            let bucket = Self::bucket(&key, k);
            *home = bucket as u16;
            let (Some(head), Some(next)) = (self.buckets.get_mut(bucket), self.chain.get_mut(i)) else {
                continue;
            };
            *next = *head;
            *head = SlotRef::to(i);
        }
    }

    /// The slot holding `key`, whose bucket is `bucket` (hashing is the costly part of a lookup:
    /// `insert` hashes once for both its check and its link).
    fn slot_of(&self, key: &K, bucket: usize) -> Option<usize> {
        let mut at = *self.buckets.get(bucket)?;
        while let Some(i) = at.index() {
            if self.slots.get(i)?.key() == Some(key) {
                return Some(i);
            }
            at = *self.chain.get(i)?;
        }
        None
    }

    /// An empty table with ids from 1 to 65535, all-zero bytes: a `static` holding it (or an
    /// engine holding it) lands in `.bss`.
    pub const EMPTY: Self = {
        let () = Self::CAPACITY_FITS;
        PdcTable {
            slots: [const { Slot::Free }; N],
            below_first: 0,
            above_last: 0,
            generations: [0; N],
            free: FreeSlots::EMPTY,
            buckets: [SlotRef::NONE; N],
            chain: [SlotRef::NONE; N],
            hash_key: [0; 2],
        }
    };

    /// An empty table with ids from 1 to 65535.
    pub fn new() -> Self {
        Self::EMPTY
    }

    /// An empty table whose ids lie in `first..=last` (`first` at least 1; a range shorter than
    /// `N` ids is widened to `N`, as every slot needs one).
    pub fn with_ids(first: u16, last: u16) -> Self {
        let mut t = Self::EMPTY;
        t.reset(first, last);
        t
    }

    /// Empties the table in place and gives it the ids `first..=last`, as
    /// [`PdcTable::with_ids`] (without a second table on the stack); the hash key
    /// ([`PdcTable::set_hash_key`]) stays.
    pub fn reset(&mut self, first: u16, last: u16) {
        let first = first.clamp(1, (u16::MAX as usize + 1 - N) as u16);
        self.below_first = first - 1;
        self.above_last = !last.max(first);
        self.slots.iter_mut().for_each(|s| *s = Slot::Free);
        self.generations.fill(0);
        self.free.clear();
        self.buckets.fill(SlotRef::NONE);
        self.chain.fill(SlotRef::NONE);
    }

    /// The first id of the table's range.
    const fn first(&self) -> u16 {
        self.below_first + 1
    }

    /// How many generations of ids fit the range (at least 1).
    const fn cycle(&self) -> u16 {
        let span = (!self.above_last - self.below_first) as usize;
        let cycle = span / N;
        if cycle == 0 { 1 } else { cycle as u16 }
    }

    /// Whether the key index agrees with the slots: each PDC's key is on the chain of the bucket
    /// it hashes to, which its slot remembers, and the chains hold every PDC once and nothing
    /// else.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn check_index(&self) -> Result<(), &'static str> {
        let mut chained = 0;
        for (bucket, head) in self.buckets.iter().enumerate() {
            let mut at = *head;
            while let Some(i) = at.index() {
                chained += 1;
                if chained > N {
                    return Err("a key index chain loops");
                }
                match self.slots.get(i) {
                    Some(Slot::Used { key, home, .. })
                        if usize::from(*home) == bucket && self.bucket_of(key) == bucket => {}
                    _ => return Err("a key index chain holds a slot of another bucket, or a free one"),
                }
                at = self.chain.get(i).copied().unwrap_or(SlotRef::NONE);
            }
        }
        if chained != self.len() {
            return Err("the key index misses a PDC");
        }
        Ok(())
    }

    /// PDCs in the table.
    pub fn len(&self) -> usize {
        self.free.used()
    }

    /// Whether the table holds no PDC.
    pub fn is_empty(&self) -> bool {
        self.free.used() == 0
    }

    /// Whether every slot is in use.
    pub fn is_full(&self) -> bool {
        self.free.next().is_none()
    }

    /// The id the next [`PdcTable::insert`] will give (a PDC needs its own id when it is built),
    /// or `None` when the table is full.
    pub fn next_id(&self) -> Option<u16> {
        let index = self.free.next()?;
        let generation = self.generations.get(usize::from(index)).copied().unwrap_or(0);
        Some(self.first().wrapping_add(generation.wrapping_mul(N as u16)).wrapping_add(index))
    }

    /// Adds a PDC under `key`; returns its id (never 0; the one [`PdcTable::next_id`] gave).
    pub fn insert(&mut self, key: K, pdc: T) -> Result<u16, TableError> {
        self.insert_in(self.bucket_of(&key), key, pdc)
    }

    /// The bucket of `key` in the key index: [`PdcTable::find_in`] and [`PdcTable::insert_in`]
    /// take it, so a lookup and the insert after it hash the key once. It holds until the next
    /// [`PdcTable::set_hash_key`].
    pub(crate) fn bucket_of(&self, key: &K) -> usize {
        Self::bucket(&self.hash_key, key)
    }

    /// [`PdcTable::insert`] with the key's bucket ([`PdcTable::bucket_of`]).
    pub(crate) fn insert_in(&mut self, bucket: usize, key: K, pdc: T) -> Result<u16, TableError> {
        if let Some(id) = self.slot_of(&key, bucket).and_then(|i| self.slots.get(i)?.id()) {
            return Err(TableError::KeyInUse { id });
        }
        let index = self.free.next().ok_or(TableError::Full)?;
        let id = self.next_id().ok_or(TableError::Full)?;
        // First on its bucket's chain.
        let (Some(head), Some(next)) = (self.buckets.get_mut(bucket), self.chain.get_mut(usize::from(index))) else {
            return Err(TableError::Full);
        };
        *next = *head;
        *head = SlotRef::to(usize::from(index));
        self.free.take();
        if let Some(slot) = self.slots.get_mut(usize::from(index)) {
            *slot = Slot::Used { id, home: bucket as u16, key, pdc };
        }
        Ok(id)
    }

    /// The slot of the PDC with id `id` (below `N`), for arrays kept beside the table.
    #[inline(always)]
    pub fn index_of(&self, id: u16) -> Option<usize> {
        let index = usize::from(id.checked_sub(self.first())?) % N.max(1);
        match self.slots.get(index) {
            Some(Slot::Used { id: used, .. }) if *used == id => Some(index),
            _ => None,
        }
    }

    /// The id of the PDC in slot `index` (see [`PdcTable::index_of`]).
    pub fn id_at(&self, index: usize) -> Option<u16> {
        self.slots.get(index)?.id()
    }

    /// The PDC with local id `id`.
    #[inline(always)]
    pub fn get(&self, id: u16) -> Option<&T> {
        let index = self.index_of(id)?;
        self.slots.get(index)?.pdc()
    }

    /// The PDC with local id `id`, mutably.
    #[inline(always)]
    pub fn get_mut(&mut self, id: u16) -> Option<&mut T> {
        let index = self.index_of(id)?;
        self.slots.get_mut(index)?.pdc_mut()
    }

    /// The id of the PDC under `key`.
    pub fn find(&self, key: &K) -> Option<u16> {
        self.find_in(key, self.bucket_of(key))
    }

    /// [`PdcTable::find`] with the key's bucket ([`PdcTable::bucket_of`]).
    pub(crate) fn find_in(&self, key: &K, bucket: usize) -> Option<u16> {
        let i = self.slot_of(key, bucket)?;
        self.slots.get(i)?.id()
    }

    /// The key a PDC was added under.
    #[inline(always)]
    pub fn key(&self, id: u16) -> Option<&K> {
        let index = self.index_of(id)?;
        self.slots.get(index)?.key()
    }

    /// Removes the PDC with id `id`, returning it; its id is not reused until its slot's
    /// generations come round again.
    pub fn remove(&mut self, id: u16) -> Option<T> {
        let index = self.index_of(id)?;
        // Off its chain first: the link that names it takes its next.
        let Some(Slot::Used { home, .. }) = self.slots.get(index) else { return None };
        let bucket = usize::from(*home);
        let next = *self.chain.get(index)?;
        let mut link = self.buckets.get_mut(bucket)?;
        while link.index() != Some(index) {
            let at = link.index()?;
            link = self.chain.get_mut(at)?;
        }
        *link = next;
        let Slot::Used { pdc, .. } = core::mem::replace(self.slots.get_mut(index)?, Slot::Free) else { return None };
        let cycle = self.cycle();
        if let Some(g) = self.generations.get_mut(index) {
            // `cycle` is at least 1; `checked_rem` keeps a division-by-zero panic out of the image.
            *g = g.wrapping_add(1).checked_rem(cycle).unwrap_or(0);
        }
        self.free.give(index as u16);
        Some(pdc)
    }

    /// Every PDC with its id.
    pub fn iter(&self) -> impl Iterator<Item = (u16, &T)> {
        self.slots.iter().filter_map(|s| match s {
            Slot::Used { id, pdc, .. } => Some((*id, pdc)),
            Slot::Free => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    #[test]
    fn addresses_are_the_same_exactly_when_every_byte_is() {
        let a = ip(core::net::IpAddr::V6(core::net::Ipv6Addr::new(0xfd00, 1, 2, 3, 4, 5, 6, 7)));
        assert!(same_addr(&a, &a));
        for i in 0..16 {
            for bit in [0x01, 0x80] {
                let mut b = a;
                b[i] ^= bit;
                assert!(!same_addr(&a, &b) && !same_addr(&b, &a), "byte {i}");
            }
        }
        assert!(same_addr(&ipv4([10, 0, 0, 1]), &ipv4([10, 0, 0, 1])));
        assert!(!same_addr(&ipv4([10, 0, 0, 1]), &ipv4([10, 0, 0, 2])));
    }

    fn key(spdcid: u16) -> TargetKey {
        TargetKey { src: ipv4([10, 0, 0, 1]), dst: ipv4([10, 0, 0, 2]), spdcid }
    }

    #[test]
    fn core_net_addresses() {
        use core::net::{Ipv4Addr, Ipv6Addr};
        assert_eq!(ip(Ipv4Addr::new(10, 0, 0, 1).into()), ipv4([10, 0, 0, 1]));
        assert_eq!(ip(Ipv6Addr::LOCALHOST.into()), Ipv6Addr::LOCALHOST.octets());
    }

    #[test]
    fn ids_are_never_zero_and_not_reused_at_once() {
        let mut t = PdcTable::<TargetKey, u32, 4>::new();
        let a = t.insert(key(7), 70).unwrap();
        assert_eq!(a, 1);
        assert_eq!(t.insert(key(7), 71), Err(TableError::KeyInUse { id: a }));
        assert_eq!(t.find(&key(7)), Some(a));
        assert_eq!(t.remove(a), Some(70));
        assert_eq!(t.get(a), None, "a closed PDC's id finds nothing");
        let b = t.insert(key(7), 72).unwrap();
        assert_ne!(b, a);
        assert_eq!(b, 4 + 1, "same slot, next generation");
        assert_eq!(t.get(b), Some(&72));
        assert_eq!(t.get(0), None);
    }

    #[test]
    fn full_table_rejects_and_changes_nothing() {
        let mut t = PdcTable::<TargetKey, u32, 2>::new();
        t.insert(key(1), 1).unwrap();
        t.insert(key(2), 2).unwrap();
        assert!(t.is_full());
        assert_eq!(t.insert(key(3), 3), Err(TableError::Full));
        assert_eq!(t.len(), 2);
        assert_eq!(t.find(&key(3)), None);
    }

    /// A hash key as an endpoint would draw one.
    const HASH_KEY: [u64; 2] = [0x0123_4567_89AB_CDEF, 0x7EDC_BA98_7654_3211];

    /// A key finds its PDC before and after the index is keyed again; keys sharing a bucket
    /// under one key mostly do not under another.
    #[test]
    fn a_new_hash_key_indexes_the_pdcs_again() {
        let mut t = PdcTable::<TargetKey, u16, 64>::new();
        let ids: Vec<u16> = (0..40).map(|i| t.insert(key(i), i).unwrap()).collect();
        t.remove(ids[7]).unwrap();
        for hash_key in [HASH_KEY, [1, 2], [0, 0]] {
            t.set_hash_key(hash_key);
            for (i, &id) in ids.iter().enumerate().filter(|&(i, _)| i != 7) {
                assert_eq!(t.find(&key(i as u16)), Some(id));
                assert_eq!(t.get(id), Some(&(i as u16)));
            }
            assert_eq!(t.find(&key(7)), None);
            let id = t.insert(key(7), 7).unwrap();
            assert_eq!(t.remove(id), Some(7));
        }
        let same = |a: &[u64; 2], b: &[u64; 2]| {
            let pairs = (0..64u16).flat_map(|i| (0..i).map(move |j| (i, j)));
            let collide = |hk: &[u64; 2], (i, j): (u16, u16)| {
                PdcTable::<TargetKey, (), 64>::bucket(hk, &key(i)) == PdcTable::<TargetKey, (), 64>::bucket(hk, &key(j))
            };
            let both = pairs.clone().filter(|&p| collide(a, p) && collide(b, p)).count();
            (both, pairs.filter(|&p| collide(a, p)).count())
        };
        let (both, under_one) = same(&HASH_KEY, &[1, 2]);
        assert!(under_one > 10 && both * 4 < under_one, "{both} of {under_one} collisions survive a new key");
    }

    /// Keys that differ in one small field fill a table's buckets about as random hashes do
    /// (n keys in n buckets: 1 - 1/e, 63 %, used), at any capacity.
    fn keys_spread<const N: usize>() {
        let n = N as u64;
        let share = |buckets: std::collections::HashSet<usize>| buckets.len() as f64 / n as f64;
        let by_peer = (0..n).map(|i| {
            let dst = ipv4([10, 0, (i >> 8) as u8, i as u8]);
            let k = InitiatorKey { mode: DeliveryMode::Rud, job_id: 1, src: ipv4([10, 0, 0, 1]), dst, tc: 0 };
            PdcTable::<InitiatorKey, (), N>::bucket(&HASH_KEY, &k)
        });
        let by_spdcid = (0..n).map(|i| PdcTable::<TargetKey, (), N>::bucket(&HASH_KEY, &key(i as u16 + 1)));
        let by_job = (0..n).map(|i| {
            let k = InitiatorKey { mode: DeliveryMode::Rod, job_id: i as u32, src: [0; 16], dst: [0; 16], tc: 3 };
            PdcTable::<InitiatorKey, (), N>::bucket(&HASH_KEY, &k)
        });
        for (what, used) in [
            ("peer", share(by_peer.collect())),
            ("spdcid", share(by_spdcid.collect())),
            ("job", share(by_job.collect())),
        ] {
            assert!(used > 0.55, "{n} keys by {what} use {:.0} % of the buckets", used * 100.0);
        }
    }

    #[test]
    fn key_hashes_spread_over_the_buckets() {
        keys_spread::<64>();
        keys_spread::<1000>();
        keys_spread::<16384>();
        keys_spread::<32767>();
    }

    #[test]
    fn generations_wrap_within_16_bits() {
        let mut t = PdcTable::<TargetKey, (), 2>::new();
        let mut seen = std::collections::HashSet::new();
        for _ in 0..100_000 {
            let id = t.insert(key(9), ()).unwrap();
            assert_ne!(id, 0);
            seen.insert(id);
            t.remove(id).unwrap();
        }
        // Slot 0 cycles through every odd id below 65535.
        assert_eq!(seen.len(), usize::from(u16::MAX / 2));
    }

    /// Two tables with disjoint ranges never give the same id, and every id stays in its range
    /// through the generations.
    #[test]
    fn id_ranges_stay_apart() {
        let mut low = PdcTable::<TargetKey, (), 4>::with_ids(1, 0x7FFF);
        let mut high = PdcTable::<TargetKey, (), 4>::with_ids(0x8000, 0xFFFF);
        let (mut l, mut h) = (std::collections::HashSet::new(), std::collections::HashSet::new());
        for i in 0..40_000u16 {
            let (a, b) = (low.insert(key(i), ()).unwrap(), high.insert(key(i), ()).unwrap());
            assert!((1..=0x7FFF).contains(&a) && (0x8000..=0xFFFF).contains(&b), "{a} {b}");
            assert_eq!((low.get(a), high.get(b), low.get(b), high.get(a)), (Some(&()), Some(&()), None, None));
            l.insert(a);
            h.insert(b);
            low.remove(a).unwrap();
            high.remove(b).unwrap();
        }
        assert!(l.is_disjoint(&h));
        // Insert-then-remove cycles slot 0 through every generation its range holds.
        assert_eq!((l.len(), h.len()), (0x7FFF / 4, 0x8000 / 4));
    }

    proptest! {
        /// The table against a map: inserts, removes and lookups by id and by key agree (7
        /// slots, 7 buckets, 12 keys: chains of every length), the index keyed afresh between
        /// them (a PDC then leaves the bucket its key has under the new hash key).
        #[test]
        fn matches_model(ops in prop::collection::vec((0u8..4, 0u16..12), 0..400)) {
            let mut t = PdcTable::<TargetKey, u16, 7>::new();
            let mut model: HashMap<u16, (u16, u16)> = HashMap::new(); // id -> (spdcid, value)
            let mut ids = Vec::new();
            for (op, x) in ops {
                match op {
                    0 => {
                        let predicted = t.next_id();
                        let r = t.insert(key(x), x);
                        if let Ok(id) = r {
                            prop_assert_eq!(Some(id), predicted);
                        }
                        let existing = model.iter().find(|(_, v)| v.0 == x).map(|(id, _)| *id);
                        match (r, existing) {
                            (Err(TableError::KeyInUse { id }), Some(e)) => prop_assert_eq!(id, e),
                            (Err(TableError::Full), None) => prop_assert_eq!(model.len(), 7),
                            (Ok(id), None) => {
                                prop_assert!(id != 0 && !model.contains_key(&id));
                                model.insert(id, (x, x));
                                ids.push(id);
                            }
                            (r, e) => prop_assert!(false, "{:?} with {:?}", r, e),
                        }
                    }
                    1 => {
                        // An id given out (which may be gone), or, for odd `x`, one in use:
                        // removals go on after the first twelve inserts.
                        let mut live: Vec<u16> = model.keys().copied().collect();
                        live.sort_unstable();
                        let id = match (x % 2, live.get(usize::from(x / 2) % live.len().max(1))) {
                            (1, Some(&id)) => id,
                            _ => ids.get(usize::from(x)).copied().unwrap_or(x),
                        };
                        prop_assert_eq!(t.remove(id), model.remove(&id).map(|v| v.1));
                    }
                    2 => t.set_hash_key([u64::from(x), !u64::from(x)]),
                    _ => {
                        let id = ids.get(usize::from(x)).copied().unwrap_or(x);
                        prop_assert_eq!(t.get(id), model.get(&id).map(|v| &v.1));
                        prop_assert_eq!(t.find(&key(x)), model.iter().find(|(_, v)| v.0 == x).map(|(id, _)| *id));
                    }
                }
                prop_assert_eq!(t.len(), model.len());
                prop_assert_eq!(t.check_index(), Ok(()));
                for (&id, &(spdcid, _)) in &model {
                    prop_assert_eq!(t.find(&key(spdcid)), Some(id));
                }
            }
        }
    }
}
