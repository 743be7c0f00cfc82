//! Replays every committed fuzz corpus file (`fuzz/corpus/<target>/*`) through the fuzz target
//! functions, on the stable toolchain, as part of `cargo test`. A target panics on a broken
//! invariant, so a regression in any corpus input fails this test.

// Test code: a broken invariant should stop the run loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

#[path = "../../fuzz/src/lib.rs"]
#[allow(dead_code, missing_docs)]
mod targets;

use std::path::Path;

#[test]
fn every_corpus_file_replays() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus");
    let mut total = 0;
    for (name, target) in targets::TARGETS {
        let dir = root.join(name);
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("corpus of target {name} missing at {}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        assert!(!files.is_empty(), "target {name} has no committed corpus");
        for file in &files {
            let data = std::fs::read(file).unwrap();
            let outcome = std::panic::catch_unwind(|| target(&data));
            assert!(outcome.is_ok(), "target {name} fails on {}", file.display());
        }
        total += files.len();
    }
    // Every target of the fuzz package is replayed.
    let manifest = std::fs::read_to_string(root.join("../Cargo.toml")).unwrap();
    let declared = manifest.matches("[[bin]]").count();
    assert_eq!(declared, targets::TARGETS.len(), "a fuzz target is missing from TARGETS");
    println!("replayed {total} corpus files");
}

/// The seeds named `engine-*` in the `ctlos` and `cc_update` corpora are what the engine emits
/// today, one per message kind (so the fuzzer starts from valid messages of this encoding, not
/// from hand-made bytes). `XLINK_WRITE_SEEDS=1 cargo test -p xlink-examples --test fuzz_corpus`
/// rewrites them after an encoding change.
#[test]
fn engine_seeds_are_what_the_engine_emits() {
    use linklayer::Seq;
    use linklayer::cbfc::{CfUpdate, Vc};
    use linklayer::wire::{CC_UPDATE_FRAME_LEN, CTLOS_LEN, CcUpdate, CcUpdateFrame, CtlOs};

    let mut seeds: Vec<(&str, String, Vec<u8>)> = Vec::new();
    let top = (1 << 20) - 1;
    for (name, msg) in [
        ("llr-init", CtlOs::LlrInit { seq: 0x12345 }),
        ("llr-init-echo", CtlOs::LlrInitEcho { seq: 0x12345 }),
        ("llr-ack", CtlOs::LlrAck { seq: top }),
        ("llr-nack", CtlOs::LlrNack { seq: 0 }),
        ("cf-update", CtlOs::CfUpdate(CfUpdate { vc: Vc::new(31).unwrap(), freed: Seq::new(0xabcde).unwrap() })),
    ] {
        let mut out = [0u8; CTLOS_LEN];
        msg.emit(&mut out).unwrap();
        seeds.push(("ctlos", format!("engine-{name}"), out.to_vec()));
    }
    for group in 0..2u8 {
        let mut update = CcUpdate::new(group).unwrap();
        for (i, vc) in (0..16).map(|i| (i, Vc::new(group * 16 + i).unwrap())) {
            update.set(vc, Seq::new(u32::from(i) * 0x10001 % (1 << 20)).unwrap()).unwrap();
        }
        let mut out = [0u8; CC_UPDATE_FRAME_LEN];
        CcUpdateFrame::new([2, 0, 0, 0, 0, 1], update).emit(&mut out).unwrap();
        seeds.push(("cc_update", format!("engine-cc-update-vcs-{}-{}", group * 16, group * 16 + 15), out.to_vec()));
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus");
    for (target, name, bytes) in seeds {
        let path = root.join(target).join(name);
        if std::env::var_os("XLINK_WRITE_SEEDS").is_some() {
            std::fs::write(&path, &bytes).unwrap();
        }
        let committed = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(committed, bytes, "{} is not what the engine emits", path.display());
    }
}
