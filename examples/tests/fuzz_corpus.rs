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
