#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| xlink_fuzz::ualink_port(data));
