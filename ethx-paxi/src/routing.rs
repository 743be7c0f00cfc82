//! AXI USER routing and virtual-channel mapping of PAXI.
//!
//! Public facts (UniVista's PAXI documentation as secondary sources quote it):
//!
//! * The upper bits of AXI USER carry the route: unicast `{DA (n bits), VC (3), 0}`, multicast
//!   `{0 (n − 3 bits), group (3), VC (3), 1}` — 8 multicast groups (of up to 16 devices each).
//! * VC mapping mode 0 spreads destinations evenly: requests on VC0 or VC2, responses on VC1 or
//!   VC3, multicast requests on VC4. Mode 1 takes the VC from AXI USER, requests only on VC0 or
//!   VC2, responses only on VC1 or VC3; APB flits on any VC.
//!
//! *Project-defined*: the DA width `n` is the configuration's ([`RouteField`], 3 to 16 bits);
//! the route sits in the top `n + 4` bits of the USER signal; mode 0 spreads by the DA's lowest
//! bit (even DAs on VC0/VC1, odd on VC2/VC3), puts multicast responses on VC1 and APB flits on
//! the VC the route names (the documentation says "any"); a multicast route's `n − 3` high bits, which are
//! zero, are ignored on receive ([`RouteField::decode`]) and checked by
//! [`RouteField::check_reserved`].

/// Why a route does not encode or decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RouteError {
    /// The DA does not fit the configured width.
    DaTooWide {
        /// The DA.
        da: u16,
    },
    /// VCs are 0 to 7; multicast groups 0 to 7.
    OutOfRange,
    /// The configured DA width is outside 3 to 16 bits, or the route does not fit the USER width.
    BadWidth,
    /// Mode 1: a request's VC must be 0 or 2, a response's 1 or 3.
    VcNotAllowed {
        /// The VC asked for.
        vc: u8,
    },
    /// A multicast route's high bits are not zero (strict check only).
    ReservedBits,
}

impl core::fmt::Display for RouteError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            RouteError::DaTooWide { da } => write!(f, "DA {da} does not fit the route field"),
            RouteError::OutOfRange => write!(f, "VC or multicast group above 7"),
            RouteError::BadWidth => write!(f, "route field width out of range"),
            RouteError::VcNotAllowed { vc } => write!(f, "VC {vc} is not allowed for this traffic"),
            RouteError::ReservedBits => write!(f, "a multicast route's high bits are set"),
        }
    }
}

impl core::error::Error for RouteError {}

/// Where a transaction goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Route {
    /// One destination device.
    Unicast {
        /// Destination address (device).
        da: u16,
        /// Virtual channel, 0 to 7.
        vc: u8,
    },
    /// A multicast group.
    Multicast {
        /// Group, 0 to 7.
        group: u8,
        /// Virtual channel, 0 to 7.
        vc: u8,
    },
}

/// The route field of AXI USER, for a DA of `da_bits` bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RouteField {
    da_bits: u8,
}

impl RouteField {
    /// A route field for DAs of `da_bits` bits (3 to 16).
    pub const fn new(da_bits: u8) -> Result<Self, RouteError> {
        if da_bits >= 3 && da_bits <= 16 { Ok(RouteField { da_bits }) } else { Err(RouteError::BadWidth) }
    }

    /// The field's width in bits: `n + 4`.
    pub const fn bits(&self) -> u32 {
        self.da_bits as u32 + 4
    }

    /// The route as the field's `n + 4` bits.
    pub const fn encode(&self, route: Route) -> Result<u32, RouteError> {
        match route {
            Route::Unicast { da, vc } => {
                if vc > 7 {
                    return Err(RouteError::OutOfRange);
                }
                if (da as u32) >> self.da_bits != 0 {
                    return Err(RouteError::DaTooWide { da });
                }
                Ok((da as u32) << 4 | (vc as u32) << 1)
            }
            Route::Multicast { group, vc } => {
                if vc > 7 || group > 7 {
                    return Err(RouteError::OutOfRange);
                }
                Ok((group as u32) << 4 | (vc as u32) << 1 | 1)
            }
        }
    }

    /// The route in the field's low `n + 4` bits (higher bits ignored; a multicast route's high
    /// DA bits too, see the module doc).
    pub const fn decode(&self, field: u32) -> Route {
        let vc = ((field >> 1) & 0b111) as u8;
        if field & 1 == 0 {
            let mask = (1u32 << self.da_bits) - 1;
            Route::Unicast { da: ((field >> 4) & mask) as u16, vc }
        } else {
            Route::Multicast { group: ((field >> 4) & 0b111) as u8, vc }
        }
    }

    /// Strict check for conformance tests: a multicast route's `n − 3` high bits are zero.
    pub const fn check_reserved(&self, field: u32) -> Result<(), RouteError> {
        let high = (field >> 7) & ((1u32 << (self.da_bits - 3)) - 1);
        if field & 1 == 1 && high != 0 { Err(RouteError::ReservedBits) } else { Ok(()) }
    }

    /// The route placed in the top bits of a USER signal of `user_bits` bits, the lower bits
    /// `rest` kept.
    pub const fn to_user(&self, route: Route, user_bits: u32, rest: u64) -> Result<u64, RouteError> {
        let width = self.bits();
        if user_bits > 64 || user_bits < width {
            return Err(RouteError::BadWidth);
        }
        let shift = user_bits - width;
        let field = match self.encode(route) {
            Ok(f) => f as u64,
            Err(e) => return Err(e),
        };
        let low = if shift == 0 { 0 } else { rest & ((1u64 << shift) - 1) };
        Ok(field << shift | low)
    }

    /// The route from the top bits of a USER signal of `user_bits` bits.
    pub const fn from_user(&self, user: u64, user_bits: u32) -> Result<Route, RouteError> {
        let width = self.bits();
        if user_bits > 64 || user_bits < width {
            return Err(RouteError::BadWidth);
        }
        let field = (user >> (user_bits - width)) as u32 & ((1u32 << width) - 1);
        Ok(self.decode(field))
    }
}

/// What a flit carries, for its VC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Traffic {
    /// AXI requests (AW+W, AR).
    Request,
    /// AXI responses (B, R).
    Response,
    /// APB register accesses and messages.
    Apb,
}

/// The VC mapping mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum VcMode {
    /// Mode 0: destinations spread evenly over the request and response VCs.
    Spread,
    /// Mode 1: the VC the route in AXI USER names.
    User,
}

/// The VC a flit of `traffic` to `route` goes on, under `mode`.
pub const fn vc_for(mode: VcMode, traffic: Traffic, route: Route) -> Result<u8, RouteError> {
    let user_vc = match route {
        Route::Unicast { vc, .. } | Route::Multicast { vc, .. } => vc,
    };
    if user_vc > 7 {
        return Err(RouteError::OutOfRange);
    }
    match (mode, traffic, route) {
        (VcMode::Spread, Traffic::Request, Route::Multicast { .. }) => Ok(4),
        (VcMode::Spread, Traffic::Request, Route::Unicast { da, .. }) => Ok(if da & 1 == 0 { 0 } else { 2 }),
        (VcMode::Spread, Traffic::Response, Route::Unicast { da, .. }) => Ok(if da & 1 == 0 { 1 } else { 3 }),
        (VcMode::Spread, Traffic::Response, Route::Multicast { .. }) => Ok(1),
        (VcMode::Spread, Traffic::Apb, _) | (VcMode::User, Traffic::Apb, _) => Ok(user_vc),
        (VcMode::User, Traffic::Request, _) => match user_vc {
            0 | 2 => Ok(user_vc),
            vc => Err(RouteError::VcNotAllowed { vc }),
        },
        (VcMode::User, Traffic::Response, _) => match user_vc {
            1 | 3 => Ok(user_vc),
            vc => Err(RouteError::VcNotAllowed { vc }),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn fields_by_hand() {
        let f = RouteField::new(8).unwrap();
        // Unicast DA 0xA5, VC 3: 1010_0101 011 0.
        assert_eq!(f.encode(Route::Unicast { da: 0xA5, vc: 3 }), Ok(0b1010_0101_0110));
        // Multicast group 5, VC 4: 00000 101 100 1.
        assert_eq!(f.encode(Route::Multicast { group: 5, vc: 4 }), Ok(0b0101_1001));
        assert_eq!(f.encode(Route::Unicast { da: 0x1A5, vc: 3 }), Err(RouteError::DaTooWide { da: 0x1A5 }));
        assert_eq!(f.encode(Route::Multicast { group: 8, vc: 0 }), Err(RouteError::OutOfRange));
        // In a 16-bit USER the 12-bit field sits at the top; the low 4 bits are the caller's.
        assert_eq!(f.to_user(Route::Unicast { da: 0xA5, vc: 3 }, 16, 0xF), Ok(0xA56F));
        assert_eq!(f.from_user(0xA56F, 16), Ok(Route::Unicast { da: 0xA5, vc: 3 }));
        assert_eq!(f.to_user(Route::Unicast { da: 1, vc: 0 }, 11, 0), Err(RouteError::BadWidth));
        // Receive liberally: a multicast route's high bits are ignored, and the strict check
        // reports them.
        let odd = 0b1000_0000_1001;
        assert_eq!(f.decode(odd), Route::Multicast { group: 0, vc: 4 });
        assert_eq!(f.check_reserved(odd), Err(RouteError::ReservedBits));
        assert!(RouteField::new(2).is_err() && RouteField::new(17).is_err());
    }

    #[test]
    fn vc_mapping() {
        let uni = |da, vc| Route::Unicast { da, vc };
        assert_eq!(vc_for(VcMode::Spread, Traffic::Request, uni(4, 7)), Ok(0));
        assert_eq!(vc_for(VcMode::Spread, Traffic::Request, uni(5, 7)), Ok(2));
        assert_eq!(vc_for(VcMode::Spread, Traffic::Response, uni(5, 0)), Ok(3));
        assert_eq!(vc_for(VcMode::Spread, Traffic::Request, Route::Multicast { group: 1, vc: 0 }), Ok(4));
        assert_eq!(vc_for(VcMode::User, Traffic::Request, uni(1, 2)), Ok(2));
        assert_eq!(vc_for(VcMode::User, Traffic::Request, uni(1, 1)), Err(RouteError::VcNotAllowed { vc: 1 }));
        assert_eq!(vc_for(VcMode::User, Traffic::Response, uni(1, 3)), Ok(3));
        assert_eq!(vc_for(VcMode::User, Traffic::Apb, uni(1, 6)), Ok(6));
    }

    proptest! {
        /// Every route that encodes decodes to itself, in the field and through USER, and the
        /// strict check passes what the encoder wrote.
        #[test]
        fn routes_round_trip(n in 3u8..=16, da: u16, vc in 0u8..8, group in 0u8..8, multicast: bool, rest: u64, extra in 0u32..=44) {
            let f = RouteField::new(n).unwrap();
            let route = if multicast { Route::Multicast { group, vc } } else { Route::Unicast { da, vc } };
            if let Ok(bits) = f.encode(route) {
                prop_assert!(bits >> f.bits() == 0);
                prop_assert_eq!(f.decode(bits), route);
                prop_assert_eq!(f.check_reserved(bits), Ok(()));
                let user_bits = f.bits() + extra;
                let user = f.to_user(route, user_bits, rest).unwrap();
                prop_assert_eq!(f.from_user(user, user_bits), Ok(route));
                if extra > 0 {
                    prop_assert_eq!(user & ((1 << extra) - 1), rest & ((1 << extra) - 1));
                }
            } else {
                prop_assert!(!multicast && u32::from(da) >> n != 0);
            }
        }
    }
}
