//! See Cargo.toml: proves that the library crates need neither std nor alloc.
#![no_std]

pub use cxl_types;
pub use ethx_paxi;
pub use linklayer;
pub use ualink_flit;
pub use ucie_adapter;
pub use uet_wire;

/// Uses the engines so that they are compiled and linked, not only type-checked.
pub extern "C" fn xlink_nostd_check(len: usize) -> u32 {
    use linklayer::cbfc::{CbfcSender, CbfcSenderConfig, Vc, VcMode};
    let Ok(mut s) = CbfcSender::new(CbfcSenderConfig::default()) else { return 0 };
    let Ok(vc) = Vc::new(1) else { return 0 };
    let mode = VcMode::Lossless { credit_limit: Some(100) };
    if s.set_vc_mode(linklayer::Instant::ZERO, vc, mode).is_err() {
        return 0;
    }
    s.on_sent(vc, len).unwrap_or(0)
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    loop {}
}
