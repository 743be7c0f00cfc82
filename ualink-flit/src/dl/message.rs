//! DL messages (UALink 1.0 §6.4): one 32-bit word in a
//! segment's alt sector. Bit 0 "Compressed" is 0, bit 1 is reserved, mclass is bits 5..2, mtype
//! bits 8..6; each message adds the fields below, and every other bit is reserved (sent as 0,
//! ignored on receive, §6.4).
//!
//! | mclass | mtype | message | fields |
//! |---|---|---|---|
//! | Basic 0000 | 000 | No-Op | |
//! | Basic 0000 | 100 | TL Rate Notification | Ack 12, Rate 31..16 (50 kHz units) |
//! | Basic 0000 | 101 | Device ID | Ack 12, ID 25..16, Type 30..29, Valid 31 |
//! | Basic 0000 | 110 | Port Number | Ack 12, Port 27..16, Valid 31 |
//! | Control 1000 | 100 | Channel negotiation | TargetState 19..16, Command 23..20, Response 27..24 |
//! | UART 0001 | 000 | Stream Transport | StreamID 11..9, Length 31..27 |
//! | UART 0001 | 001 | Credit Update | StreamID 11..9, DataFCSeq 31..20 |
//! | UART 0001 | 110 | Reset Request | StreamID 11..9, allStreams 12 |
//! | UART 0001 | 111 | Reset Response | StreamID 11..9, allStreams 12, Status 15..13 |
//!
//! *Project-defined*: the word sits in its sector least significant byte first;
//! the Port Number field is read as 12 bits and written only below 1024.

use crate::Error;

const MCLASS_BASIC: u32 = 0b0000;
const MCLASS_CONTROL: u32 = 0b1000;
const MCLASS_UART: u32 = 0b0001;

/// A DL message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum DlMessage {
    /// No-Op (used in UART reset; not acknowledged).
    NoOp,
    /// TL Rate Notification request (`ack` false) or response.
    TlRate {
        /// Response rather than request.
        ack: bool,
        /// UPLI clock rate in 50 kHz units (1562.5 MHz = 31250).
        rate: u16,
    },
    /// Device ID request or response.
    DeviceId {
        /// Response rather than request.
        ack: bool,
        /// The 10-bit device id.
        id: u16,
        /// Device type (2 bits): 0 switch, 1 accelerator.
        kind: u8,
        /// The id is valid.
        valid: bool,
    },
    /// Port Number request or response.
    PortNumber {
        /// Response rather than request.
        ack: bool,
        /// Port number (written below 1024; read as 12 bits).
        port: u16,
        /// The number is valid.
        valid: bool,
    },
    /// DL channel online/offline negotiation.
    ChannelNegotiation {
        /// Target state: online bit 3, channel id bits 2..0 (0 = TL flits, 4 = DL UART).
        target_state: u8,
        /// Command (4 bits): 0100 request, 0110 ack, 0111 nack, 1000 decision pending.
        command: u8,
        /// Response (4 bits).
        response: u8,
    },
    /// UART stream transport header; `length + 1` payload words follow in later alt sectors.
    UartStream {
        /// Stream id (3 bits; only 0 is defined).
        stream: u8,
        /// Payload words − 1 (5 bits).
        length: u8,
    },
    /// UART credit update.
    UartCredit {
        /// Stream id (3 bits).
        stream: u8,
        /// Credit counter mod 2^12 (1 credit = 1 word).
        data_fc_seq: u16,
    },
    /// UART reset request.
    UartResetReq {
        /// Stream id (3 bits).
        stream: u8,
        /// Reset every stream.
        all_streams: bool,
    },
    /// UART reset response.
    UartResetRsp {
        /// Stream id (3 bits).
        stream: u8,
        /// Every stream was reset.
        all_streams: bool,
        /// Status (3 bits; 000 success).
        status: u8,
    },
}

/// `v` checked to fit `bits` bits, as a u32.
fn field(v: u32, bits: u32, name: &'static str) -> Result<u32, Error> {
    if v >> bits != 0 { Err(Error::BadValue { field: name, value: v }) } else { Ok(v) }
}

impl DlMessage {
    /// The 32-bit message word.
    pub fn to_word(&self) -> Result<u32, Error> {
        let head = |class: u32, mtype: u32| class << 2 | mtype << 6;
        let stream = |s: u8| field(u32::from(s), 3, "UART StreamID").map(|s| s << 9);
        Ok(match *self {
            DlMessage::NoOp => head(MCLASS_BASIC, 0b000),
            DlMessage::TlRate { ack, rate } => head(MCLASS_BASIC, 0b100) | u32::from(ack) << 12 | u32::from(rate) << 16,
            DlMessage::DeviceId { ack, id, kind, valid } => {
                head(MCLASS_BASIC, 0b101)
                    | u32::from(ack) << 12
                    | field(u32::from(id), 10, "Device ID")? << 16
                    | field(u32::from(kind), 2, "Device ID Type")? << 29
                    | u32::from(valid) << 31
            }
            DlMessage::PortNumber { ack, port, valid } => {
                head(MCLASS_BASIC, 0b110)
                    | u32::from(ack) << 12
                    | field(u32::from(port), 10, "Port Number")? << 16
                    | u32::from(valid) << 31
            }
            DlMessage::ChannelNegotiation { target_state, command, response } => {
                head(MCLASS_CONTROL, 0b100)
                    | field(u32::from(target_state), 4, "TargetState")? << 16
                    | field(u32::from(command), 4, "Command")? << 20
                    | field(u32::from(response), 4, "Response")? << 24
            }
            DlMessage::UartStream { stream: s, length } => {
                head(MCLASS_UART, 0b000) | stream(s)? | field(u32::from(length), 5, "UART Length")? << 27
            }
            DlMessage::UartCredit { stream: s, data_fc_seq } => {
                head(MCLASS_UART, 0b001) | stream(s)? | field(u32::from(data_fc_seq), 12, "DataFCSeq")? << 20
            }
            DlMessage::UartResetReq { stream: s, all_streams } => {
                head(MCLASS_UART, 0b110) | stream(s)? | u32::from(all_streams) << 12
            }
            DlMessage::UartResetRsp { stream: s, all_streams, status } => {
                head(MCLASS_UART, 0b111)
                    | stream(s)?
                    | u32::from(all_streams) << 12
                    | field(u32::from(status), 3, "UART Reset Status")? << 13
            }
        })
    }

    /// Decodes a message word strictly: bit 0 ("Compressed"), bit 1 and every reserved bit must
    /// be zero. This is the codec's check of what we send; a receiving DL uses
    /// [`DlMessage::receive`].
    pub fn from_word(w: u32) -> Result<Self, Error> {
        if w & 1 != 0 {
            return Err(Error::BadValue { field: "DL message Compressed bit", value: 1 });
        }
        if w & 0b10 != 0 {
            return Err(Error::Reserved { field: "DL message bit 1" });
        }
        let (msg, used) = Self::decode(w)?;
        if w & !(used | 0x1FF) != 0 {
            return Err(Error::Reserved { field: "DL message reserved bits" });
        }
        Ok(msg)
    }

    /// Decodes a received message word as §6.4 requires of a receiver: reserved bits (bits 0
    /// and 1 included) are ignored. An undefined mclass or mtype is still refused.
    pub fn receive(w: u32) -> Result<Self, Error> {
        Self::decode(w).map(|(m, _)| m)
    }

    /// The message in `w` and the mask of the field bits it uses besides the 9-bit head.
    fn decode(w: u32) -> Result<(Self, u32), Error> {
        let class = w >> 2 & 0xF;
        let mtype = w >> 6 & 0b111;
        let bits = |lo: u32, n: u32| w >> lo & ((1 << n) - 1);
        let flag = |b: u32| w >> b & 1 != 0;
        // The bits each message uses besides the 9-bit head.
        let (msg, used): (DlMessage, u32) = match (class, mtype) {
            (MCLASS_BASIC, 0b000) => (DlMessage::NoOp, 0),
            (MCLASS_BASIC, 0b100) => {
                (DlMessage::TlRate { ack: flag(12), rate: bits(16, 16) as u16 }, 1 << 12 | 0xFFFF << 16)
            }
            (MCLASS_BASIC, 0b101) => (
                DlMessage::DeviceId {
                    ack: flag(12),
                    id: bits(16, 10) as u16,
                    kind: bits(29, 2) as u8,
                    valid: flag(31),
                },
                1 << 12 | 0x3FF << 16 | 0b11 << 29 | 1 << 31,
            ),
            (MCLASS_BASIC, 0b110) => (
                DlMessage::PortNumber { ack: flag(12), port: bits(16, 12) as u16, valid: flag(31) },
                1 << 12 | 0xFFF << 16 | 1 << 31,
            ),
            (MCLASS_CONTROL, 0b100) => (
                DlMessage::ChannelNegotiation {
                    target_state: bits(16, 4) as u8,
                    command: bits(20, 4) as u8,
                    response: bits(24, 4) as u8,
                },
                0xFFF << 16,
            ),
            (MCLASS_UART, 0b000) => {
                (DlMessage::UartStream { stream: bits(9, 3) as u8, length: bits(27, 5) as u8 }, 0b111 << 9 | 0x1F << 27)
            }
            (MCLASS_UART, 0b001) => (
                DlMessage::UartCredit { stream: bits(9, 3) as u8, data_fc_seq: bits(20, 12) as u16 },
                0b111 << 9 | 0xFFF << 20,
            ),
            (MCLASS_UART, 0b110) => {
                (DlMessage::UartResetReq { stream: bits(9, 3) as u8, all_streams: flag(12) }, 0b111 << 9 | 1 << 12)
            }
            (MCLASS_UART, 0b111) => (
                DlMessage::UartResetRsp { stream: bits(9, 3) as u8, all_streams: flag(12), status: bits(13, 3) as u8 },
                0b111 << 9 | 1 << 12 | 0b111 << 13,
            ),
            (MCLASS_BASIC | MCLASS_CONTROL | MCLASS_UART, _) => {
                return Err(Error::BadValue { field: "DL message mtype", value: mtype });
            }
            _ => return Err(Error::BadValue { field: "DL message mclass", value: class }),
        };
        Ok((msg, used))
    }

    /// The alt-sector bytes (least significant first, project-defined).
    pub fn to_bytes(&self) -> Result<[u8; 4], Error> {
        self.to_word().map(u32::to_le_bytes)
    }

    /// Decodes alt-sector bytes.
    pub fn from_bytes(b: [u8; 4]) -> Result<Self, Error> {
        Self::from_word(u32::from_le_bytes(b))
    }
}

/// Most payload words a UART Stream Transport message carries (Length is 5 bits, + 1).
pub const UART_MAX_WORDS: usize = 32;

/// The transmit queue of alternative-sector words (§6.4.1.2).
///
/// A UART Stream Transport message is queued whole, header then payload words, so it goes out
/// one word per segment, contiguously, with no other DL message in between, as §6.4.1.2
/// requires. *Project-defined*: messages leave in the order queued; the round-robin arbitration
/// between and within the Basic, Control and UART groups is the caller's, who decides what to
/// queue when.
#[derive(Clone, Debug, Default)]
pub struct AltQueue<const N: usize> {
    words: heapless::Deque<u32, N>,
    /// Words the link has taken (wrapping).
    taken: u32,
}

impl<const N: usize> AltQueue<N> {
    /// An empty queue.
    pub const fn new() -> Self {
        AltQueue { words: heapless::Deque::new(), taken: 0 }
    }

    /// How many words the link has taken from the queue so far, wrapping at 2^32: a word queued
    /// when this plus [`AltQueue::len`] was `n` has gone out once this reaches `n`.
    pub fn taken(&self) -> u32 {
        self.taken
    }

    /// Words waiting.
    pub fn len(&self) -> usize {
        self.words.len()
    }

    /// Whether nothing waits.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// Drops every queued word.
    pub fn clear(&mut self) {
        self.words.clear();
    }

    /// Queues a one-word message. A UART Stream Transport header is refused here (use
    /// [`AltQueue::send_uart`], which queues its payload with it).
    pub fn send(&mut self, m: DlMessage) -> Result<(), Error> {
        if let DlMessage::UartStream { length, .. } = m {
            return Err(Error::BadValue { field: "UART Stream Transport without payload", value: u32::from(length) });
        }
        let w = m.to_word()?;
        self.words.push_back(w).map_err(|_| Error::Full { queue: "DL alt sectors" })
    }

    /// Queues a UART Stream Transport message with 1..=32 payload words, or nothing if they do not
    /// all fit.
    pub fn send_uart(&mut self, stream: u8, payload: &[u32]) -> Result<(), Error> {
        let n = payload.len();
        if n == 0 || n > UART_MAX_WORDS {
            return Err(Error::BadValue { field: "UART payload words", value: n as u32 });
        }
        let head = DlMessage::UartStream { stream, length: (n - 1) as u8 }.to_word()?;
        if self.words.capacity() - self.words.len() < n + 1 {
            return Err(Error::Full { queue: "DL alt sectors" });
        }
        for w in core::iter::once(&head).chain(payload) {
            self.words.push_back(*w).map_err(|_| Error::Full { queue: "DL alt sectors" })?;
        }
        Ok(())
    }
}

impl<const N: usize> super::packing::AltSource for AltQueue<N> {
    fn has_alt(&self) -> bool {
        !self.words.is_empty()
    }
    fn next_alt(&mut self) -> Option<u32> {
        let w = self.words.pop_front()?;
        self.taken = self.taken.wrapping_add(1);
        Some(w)
    }
}

/// A received alternative sector, read in context.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum AltItem {
    /// A DL message (a UART Stream Transport header announces payload words that follow).
    Message(DlMessage),
    /// A payload word of the UART stream in progress.
    UartWord {
        /// The stream.
        stream: u8,
        /// The word.
        word: u32,
        /// Whether it is the stream message's last word.
        last: bool,
    },
}

/// The receive side of the alternative sectors: tells UART payload words from messages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AltReceiver {
    stream: u8,
    left: u8,
}

impl AltReceiver {
    /// A receiver between messages.
    pub const fn new() -> Self {
        AltReceiver { stream: 0, left: 0 }
    }

    /// Reads the next alternative-sector word. An undefined message is refused and skipped.
    pub fn receive(&mut self, word: u32) -> Result<AltItem, Error> {
        if self.left > 0 {
            self.left -= 1;
            return Ok(AltItem::UartWord { stream: self.stream, word, last: self.left == 0 });
        }
        let m = DlMessage::receive(word)?;
        if let DlMessage::UartStream { stream, length } = m {
            self.stream = stream;
            self.left = length + 1;
        }
        Ok(AltItem::Message(m))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn examples_from_the_tables() {
        // TL Rate Notification request for 1562.5 MHz: Rate = 31250.
        let w = DlMessage::TlRate { ack: false, rate: 31250 }.to_word().unwrap();
        assert_eq!(w, 0b100 << 6 | 31250 << 16);
        // Channel negotiation: request TL channel 0 online.
        let c = DlMessage::ChannelNegotiation { target_state: 0b1000, command: 0b0100, response: 0 };
        assert_eq!(c.to_word().unwrap(), 0b1000 << 2 | 0b100 << 6 | 0b1000 << 16 | 0b0100 << 20);
        // UART: 33-word stream header (Length = 31 → 32 payload words).
        let s = DlMessage::UartStream { stream: 0, length: 31 };
        assert_eq!(DlMessage::from_word(s.to_word().unwrap()), Ok(s));
        // Refusals name the field.
        assert_eq!(DlMessage::from_word(1), Err(Error::BadValue { field: "DL message Compressed bit", value: 1 }));
        assert_eq!(DlMessage::from_word(0b10), Err(Error::Reserved { field: "DL message bit 1" }));
        assert_eq!(DlMessage::from_word(0b0010 << 2), Err(Error::BadValue { field: "DL message mclass", value: 2 }));
        assert_eq!(DlMessage::from_word(0b011 << 6), Err(Error::BadValue { field: "DL message mtype", value: 3 }));
        assert_eq!(DlMessage::from_word(1 << 12), Err(Error::Reserved { field: "DL message reserved bits" }));
        assert!(DlMessage::PortNumber { ack: true, port: 1024, valid: true }.to_word().is_err());
        // A 12-bit port number is accepted on receive.
        assert_eq!(
            DlMessage::from_word(0b110 << 6 | 0xFFF << 16),
            Ok(DlMessage::PortNumber { ack: false, port: 0xFFF, valid: false })
        );
    }

    #[test]
    fn receivers_ignore_reserved_bits() {
        // §6.4: reserved fields "shall be ignored by receiving link partner".
        let w = DlMessage::TlRate { ack: true, rate: 3125 }.to_word().unwrap();
        assert_eq!(DlMessage::receive(w | 0b11 | 0x0E00), Ok(DlMessage::TlRate { ack: true, rate: 3125 }));
        assert!(DlMessage::from_word(w | 0x0E00).is_err());
        assert_eq!(DlMessage::receive(0b0010 << 2), Err(Error::BadValue { field: "DL message mclass", value: 2 }));
    }

    #[test]
    fn uart_streams_go_out_whole_and_come_back_in_context() {
        use crate::dl::packing::AltSource;
        let mut q: AltQueue<8> = AltQueue::new();
        q.send(DlMessage::DeviceId { ack: false, id: 0, kind: 0, valid: false }).unwrap();
        assert_eq!(q.send_uart(0, &[0; 8]), Err(Error::Full { queue: "DL alt sectors" }), "9 words do not fit in 7");
        assert_eq!(q.len(), 1, "nothing of the refused stream was queued");
        q.send_uart(0, &[0xDEAD_BEEF, 7]).unwrap();
        assert!(q.send(DlMessage::UartStream { stream: 0, length: 0 }).is_err());
        assert!(q.send_uart(0, &[]).is_err());
        let mut rx = AltReceiver::new();
        let mut got = Vec::new();
        while let Some(w) = q.next_alt() {
            got.push(rx.receive(w).unwrap());
        }
        assert_eq!(
            got,
            [
                AltItem::Message(DlMessage::DeviceId { ack: false, id: 0, kind: 0, valid: false }),
                AltItem::Message(DlMessage::UartStream { stream: 0, length: 1 }),
                // The payload words are not read as messages, whatever their bits.
                AltItem::UartWord { stream: 0, word: 0xDEAD_BEEF, last: false },
                AltItem::UartWord { stream: 0, word: 7, last: true },
            ]
        );
    }

    proptest! {
        /// Every word that decodes re-encodes to itself, except Port Numbers of 1024 and up,
        /// which are read but never written.
        #[test]
        fn accepted_words_re_encode(w in any::<u32>()) {
            if let Ok(m) = DlMessage::from_word(w) {
                match m {
                    DlMessage::PortNumber { port, .. } if port >= 1024 => prop_assert!(m.to_word().is_err()),
                    _ => prop_assert_eq!(m.to_word(), Ok(w)),
                }
            }
        }

        #[test]
        fn round_trip(m in any::<u8>().prop_flat_map(|k| (Just(k), any::<u32>()))) {
            let (k, x) = m;
            let msg = match k % 9 {
                0 => DlMessage::NoOp,
                1 => DlMessage::TlRate { ack: x & 1 != 0, rate: (x >> 8) as u16 },
                2 => DlMessage::DeviceId { ack: x & 1 != 0, id: (x >> 4) as u16 & 0x3FF, kind: (x >> 20) as u8 & 3, valid: x & 2 != 0 },
                3 => DlMessage::PortNumber { ack: x & 1 != 0, port: (x >> 4) as u16 & 0x3FF, valid: x & 2 != 0 },
                4 => DlMessage::ChannelNegotiation { target_state: x as u8 & 0xF, command: (x >> 4) as u8 & 0xF, response: (x >> 8) as u8 & 0xF },
                5 => DlMessage::UartStream { stream: x as u8 & 7, length: (x >> 3) as u8 & 0x1F },
                6 => DlMessage::UartCredit { stream: x as u8 & 7, data_fc_seq: (x >> 3) as u16 & 0xFFF },
                7 => DlMessage::UartResetReq { stream: x as u8 & 7, all_streams: x & 8 != 0 },
                _ => DlMessage::UartResetRsp { stream: x as u8 & 7, all_streams: x & 8 != 0, status: (x >> 4) as u8 & 7 },
            };
            prop_assert_eq!(DlMessage::from_bytes(msg.to_bytes().unwrap()), Ok(msg));
        }
    }
}
