//! Bounded, deterministic fuzzing of protocol parsers on the stable
//! toolchain: seed inputs (recorded captures) are mutated by a proptest
//! strategy — truncated, bit-flipped, spliced, nested, stuffed with invalid
//! UTF-8 or huge strings — and the parser must neither panic nor blow up.
//!
//! ```
//! use agent_adaptor_conformance::fuzz::{FuzzConfig, fuzz_inputs};
//!
//! let seeds: [&[u8]; 1] = [br#"{"type":"result","result":"ok"}"#];
//! fuzz_inputs(&seeds, FuzzConfig::default(), |input| {
//!     // The parser under test: must return (Ok or a typed error), never panic.
//!     let _ = serde_json::from_slice::<serde_json::Value>(input);
//! });
//! ```
//!
//! Every built-in parser gets a fuzz test built on this, seeded with its
//! captures, that runs in CI within a bounded number of cases.

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

/// How much to fuzz.
#[derive(Debug, Clone, Copy)]
pub struct FuzzConfig {
    /// Number of generated inputs (default 512).
    pub cases: u32,
    /// Upper bound on the size of one generated input (default 1 MiB).
    pub max_len: usize,
    /// Seed of the deterministic generator (CI failures reproduce exactly).
    pub seed: u64,
}

impl Default for FuzzConfig {
    fn default() -> Self {
        FuzzConfig {
            cases: 512,
            max_len: 1 << 20,
            seed: 0x5eed_a6e7,
        }
    }
}

/// One mutation of a seed.
#[derive(Debug, Clone)]
enum Mutation {
    Truncate(usize),
    FlipBit(usize, u8),
    InsertByte(usize, u8),
    Splice(usize, usize),
    Duplicate(usize, usize),
    InvalidUtf8(usize),
    HugeString(usize, usize),
    DeepNesting(usize),
    Replace(usize, Vec<u8>),
}

fn apply(seed: &[u8], mutations: &[Mutation], max_len: usize) -> Vec<u8> {
    let mut v = seed.to_vec();
    for m in mutations {
        let at = |i: usize, v: &Vec<u8>| if v.is_empty() { 0 } else { i % (v.len() + 1) };
        match m {
            Mutation::Truncate(i) => {
                let i = at(*i, &v);
                v.truncate(i);
            }
            Mutation::FlipBit(i, bit) => {
                if !v.is_empty() {
                    let i = *i % v.len();
                    v[i] ^= 1 << (bit % 8);
                }
            }
            Mutation::InsertByte(i, b) => {
                let i = at(*i, &v);
                v.insert(i, *b);
            }
            Mutation::Splice(i, j) => {
                let (i, j) = (at(*i, &v), at(*j, &v));
                let (lo, hi) = if i <= j { (i, j) } else { (j, i) };
                v.drain(lo..hi);
            }
            Mutation::Duplicate(i, j) => {
                let (i, j) = (at(*i, &v), at(*j, &v));
                let (lo, hi) = if i <= j { (i, j) } else { (j, i) };
                let chunk = v[lo..hi].to_vec();
                v.splice(hi..hi, chunk);
            }
            Mutation::InvalidUtf8(i) => {
                let i = at(*i, &v);
                v.splice(i..i, [0xff, 0xfe, 0xc3]);
            }
            Mutation::HugeString(i, n) => {
                let i = at(*i, &v);
                let mut s = vec![b'"'];
                s.extend(std::iter::repeat_n(b'a', *n));
                s.push(b'"');
                v.splice(i..i, s);
            }
            Mutation::DeepNesting(n) => {
                let mut s = vec![b'['; *n];
                s.extend(std::iter::repeat_n(b']', *n));
                v.extend(s);
            }
            Mutation::Replace(i, with) => {
                let i = at(*i, &v);
                let end = (i + with.len()).min(v.len());
                v.splice(i..end, with.iter().copied());
            }
        }
        v.truncate(max_len);
    }
    v
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let interesting = prop::sample::select(vec![
        b"null".to_vec(),
        b"{}".to_vec(),
        b"[]".to_vec(),
        b"\"\"".to_vec(),
        b"-1".to_vec(),
        b"1e999".to_vec(),
        b"18446744073709551616".to_vec(),
        b"\\u0000".to_vec(),
        b"\\ud800".to_vec(),
        b"\n".to_vec(),
        b"\r\n".to_vec(),
        b"data: ".to_vec(),
        b"event: ".to_vec(),
        b":".to_vec(),
        b"{\"type\":".to_vec(),
    ]);
    prop_oneof![
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::FlipBit(i, b)),
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::InsertByte(i, b)),
        (any::<usize>(), any::<usize>()).prop_map(|(i, j)| Mutation::Splice(i, j)),
        (any::<usize>(), any::<usize>()).prop_map(|(i, j)| Mutation::Duplicate(i, j)),
        any::<usize>().prop_map(Mutation::InvalidUtf8),
        (any::<usize>(), 0usize..200_000).prop_map(|(i, n)| Mutation::HugeString(i, n)),
        (1usize..4_000).prop_map(Mutation::DeepNesting),
        (any::<usize>(), interesting).prop_map(|(i, w)| Mutation::Replace(i, w)),
    ]
}

/// The strategy: a seed (or random bytes), then up to eight mutations.
pub fn inputs(seeds: &[&[u8]], max_len: usize) -> BoxedStrategy<Vec<u8>> {
    let seeds: Vec<Vec<u8>> = seeds.iter().map(|s| s.to_vec()).collect();
    let seeded = if seeds.is_empty() {
        Just(Vec::new()).boxed()
    } else {
        prop::sample::select(seeds).boxed()
    };
    let random = prop::collection::vec(any::<u8>(), 0..512);
    (
        prop_oneof![4 => seeded, 1 => random],
        prop::collection::vec(mutation(), 0..8),
    )
        .prop_map(move |(seed, ms)| apply(&seed, &ms, max_len))
        .boxed()
}

/// Feed `config.cases` mutated inputs to `parse`. Panics — with the
/// minimized failing input — when `parse` panics on one of them.
#[track_caller]
pub fn fuzz_inputs(seeds: &[&[u8]], config: FuzzConfig, parse: impl FnMut(&[u8])) {
    // proptest's runner takes `Fn`; the parser may keep state between inputs.
    let parse = std::cell::RefCell::new(parse);
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes(config.seed));
    let mut runner = TestRunner::new_with_rng(
        Config {
            cases: config.cases,
            failure_persistence: None,
            ..Config::default()
        },
        rng,
    );
    let verdict = runner.run(&inputs(seeds, config.max_len), |input| {
        (parse.borrow_mut())(&input);
        Ok(())
    });
    if let Err(e) = verdict {
        panic!("fuzzing found a failing input: {e}");
    }
}

fn seed_bytes(seed: u64) -> [u8; 32] {
    let mut out = [0u8; 32];
    for (i, chunk) in out.chunks_mut(8).enumerate() {
        chunk.copy_from_slice(&(seed.rotate_left(i as u32 * 13) ^ i as u64).to_le_bytes());
    }
    out
}
