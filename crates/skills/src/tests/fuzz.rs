//! Arbitrary archive bytes: the loader never panics, never leaves anything
//! behind on error, and never writes outside its own directory
//! ([`Sandbox::load`] checks the sandbox after every call).

use std::sync::LazyLock;

use proptest::prelude::*;

use super::*;

/// Small caps, so a mutated size field cannot make a case slow.
fn limits() -> ExtractLimits {
    ExtractLimits::default()
        .with_max_files(64)
        .with_max_total_bytes(48 << 10)
        .with_max_entry_bytes(16 << 10)
}

/// Valid archives of a small tree (links and traversal included: a
/// mutation may turn them into anything).
static SEEDS: LazyLock<Vec<Vec<u8>>> = LazyLock::new(|| {
    let entries = [
        skill_md(),
        E::Dir("scripts/"),
        E::File("scripts/run.sh", b"#!/bin/sh\necho hi\n".to_vec(), true),
        file("docs/ref.md", vec![b'r'; 700]),
    ];
    let mut linked = entries.to_vec();
    linked.push(E::Symlink("l", "../x"));
    let tar = tar_of(&entries);
    vec![
        zip_of(&entries),
        zip_of(&linked),
        tar.clone(),
        tar_of(&linked),
        gz(&tar),
    ]
});

/// Valid archives load, in the sandbox: the seeds themselves are sound.
#[test]
fn the_seeds_load() {
    for (i, seed) in SEEDS.iter().enumerate() {
        let result = Sandbox::new().load(seed, limits());
        match i {
            1 | 3 => assert!(matches!(result, Err(SkillError::Link { .. })), "seed {i}"),
            _ => assert!(result.is_ok(), "seed {i}: {result:?}"),
        }
    }
}

/// Bytes that start like each format, then anything.
fn prefixed_bytes() -> impl Strategy<Value = Vec<u8>> {
    let prefixes: Vec<Vec<u8>> = vec![
        Vec::new(),
        b"PK\x03\x04".to_vec(),
        b"PK\x05\x06".to_vec(),
        vec![0x1f, 0x8b, 8, 0],
    ];
    (
        proptest::sample::select(prefixes),
        proptest::collection::vec(any::<u8>(), 0..2048),
        any::<bool>(),
    )
        .prop_map(|(prefix, rest, ustar)| {
            let mut bytes = prefix;
            bytes.extend(rest);
            if ustar && bytes.len() >= 262 {
                bytes[257..262].copy_from_slice(b"ustar");
            }
            bytes
        })
}

/// A seed with bytes overwritten, a range deleted or the tail cut off.
fn mutated_seed() -> impl Strategy<Value = Vec<u8>> {
    (
        0..SEEDS.len(),
        proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..12),
        proptest::option::of((any::<prop::sample::Index>(), 1usize..64)),
        proptest::option::of(any::<prop::sample::Index>()),
    )
        .prop_map(|(seed, writes, delete, cut)| {
            let mut bytes = SEEDS[seed].clone();
            for (at, byte) in writes {
                let at = at.index(bytes.len());
                bytes[at] = byte;
            }
            if let Some((at, len)) = delete {
                let at = at.index(bytes.len());
                let end = (at + len).min(bytes.len());
                bytes.drain(at..end);
            }
            if let Some(cut) = cut
                && !bytes.is_empty()
            {
                let keep = cut.index(bytes.len());
                bytes.truncate(keep);
            }
            fix_tar_checksums(&mut bytes);
            bytes
        })
}

/// Recomputes the checksum of every block that looks like a tar header, so
/// a mutation gets past the header check to the entry it changed.
fn fix_tar_checksums(bytes: &mut [u8]) {
    for block in bytes.chunks_exact_mut(512) {
        if &block[257..262] == b"ustar" {
            block[148..156].fill(b' ');
            let sum: u32 = block.iter().map(|&b| u32::from(b)).sum();
            block[148..155].copy_from_slice(format!("{sum:06o}\0").as_bytes());
        }
    }
}

/// Entry names from a pool that holds every kind of trouble.
const NAMES: &[&str] = &[
    "SKILL.md",
    "a",
    "a/b",
    "a/b/c",
    "./a",
    "b/",
    "../x",
    "a/../../x",
    "/abs",
    "C:\\x",
    "..\\x",
    "top/SKILL.md",
    "top/a",
    "",
    ".",
    "__MACOSX/x",
    "a//b",
    "\\srv\\x",
];

/// An archive of 1 to 12 entries picked from the pool, each a file (up to
/// four times the entry cap), a directory or a link, in any format.
fn generated_archive() -> impl Strategy<Value = Vec<u8>> {
    let entry = (0..NAMES.len(), 0u8..10, 0usize..(64 << 10)).prop_map(|(name, kind, size)| {
        let name = NAMES[name];
        match kind {
            0 => E::Dir(name),
            1 => E::Symlink(name, "../target"),
            2 => E::HardLink(name, "SKILL.md"),
            3 if name == "SKILL.md" || name == "top/SKILL.md" => {
                E::File(name, GOOD_MD.into(), false)
            }
            _ => E::File(name, vec![b'g'; size % (1 << (kind + 7))], kind % 2 == 0),
        }
    });
    (proptest::collection::vec(entry, 1..12), 0u8..3).prop_map(|(entries, format)| match format {
        0 => {
            let zip: Vec<E> = entries
                .into_iter()
                .filter(|e| !matches!(e, E::HardLink(..)))
                .collect();
            zip_of_lenient(&zip)
        }
        1 => tar_of(&entries),
        _ => gz(&tar_of(&entries)),
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_are_handled(bytes in prefixed_bytes()) {
        let _ = Sandbox::new().load(&bytes, limits());
    }

    #[test]
    fn generated_archives_are_handled(bytes in generated_archive()) {
        let sandbox = Sandbox::new();
        if let Ok(skill) = sandbox.load(&bytes, limits()) {
            drop(skill);
            prop_assert!(names(&sandbox.temps()).is_empty());
        }
    }

    #[test]
    fn mutated_archives_are_handled(bytes in mutated_seed()) {
        let sandbox = Sandbox::new();
        if let Ok(skill) = sandbox.load(&bytes, limits()) {
            let dir = skill.reference().dir.clone();
            prop_assert!(dir.starts_with(sandbox.temps()));
            drop(skill);
            prop_assert!(names(&sandbox.temps()).is_empty());
        }
    }
}
