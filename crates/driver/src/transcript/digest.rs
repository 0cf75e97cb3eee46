//! A 64-bit digest of one [`TranscriptItem`], and the order-sensitive
//! [`TranscriptFingerprint`] of a whole sequence of them, so a run's emitted and
//! returned transcripts can be compared without keeping a second copy, or
//! even a list of digests.

use std::hash::{BuildHasher, Hash, Hasher};

use foldhash::fast::{FixedState, FoldHasher};

use serde_json::Value;

use super::TranscriptItem;
use crate::usage::Usage;

/// A digest of every field of `item`.
///
/// Fast (one pass over the item, no allocation) and stable within a process;
/// it is not meant to be stored. Equal items always have equal digests
/// (`0.0` and `-0.0` hash alike, JSON objects hash independently of key
/// order), so different digests prove the items differ; equal digests mean
/// equal items except for a 64-bit hash collision.
pub fn digest(item: &TranscriptItem) -> u64 {
    let mut h = hasher();
    let TranscriptItem {
        kind,
        text,
        delta,
        tool_use_id,
        tool_name,
        input,
        is_error,
        model,
        session_id,
        usage,
        cost_usd,
        subtype,
        errors,
        metadata,
        data,
    } = item;
    kind.hash(&mut h);
    text.hash(&mut h);
    delta.hash(&mut h);
    tool_use_id.hash(&mut h);
    tool_name.hash(&mut h);
    hash_opt_value(input.as_ref(), &mut h);
    is_error.hash(&mut h);
    model.hash(&mut h);
    session_id.hash(&mut h);
    hash_usage(usage.as_ref(), &mut h);
    hash_opt_f64(*cost_usd, &mut h);
    subtype.hash(&mut h);
    errors.hash(&mut h);
    metadata.hash(&mut h);
    hash_opt_value(data.as_ref(), &mut h);
    h.finish()
}

/// The digests' seed: fixed, so two digests of one item agree wherever in
/// the process they are taken.
const SEED: u64 = 0x9e37_79b9_7f4a_7c15;

/// A hasher for digests (foldhash: the items are hashed twice per run, and
/// SipHash showed in profiles).
fn hasher() -> FoldHasher<'static> {
    FixedState::with_seed(SEED).build_hasher()
}

/// The fingerprint of a sequence of transcript items: how many, and an
/// order-sensitive fold of their [`digest`](TranscriptItem::digest)s. Two sequences with different
/// fingerprints differ; equal fingerprints mean equal sequences except for
/// a 64-bit hash collision. 16 bytes, whatever the length.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct TranscriptFingerprint {
    len: u64,
    fold: u64,
}

impl TranscriptFingerprint {
    /// The fingerprint of the empty sequence.
    pub fn new() -> Self {
        TranscriptFingerprint::default()
    }

    /// Append one item.
    pub fn push(&mut self, item: &TranscriptItem) {
        self.push_digest(digest(item));
    }

    /// Append one item by its [`digest`](TranscriptItem::digest).
    pub fn push_digest(&mut self, digest: u64) {
        let mut h = hasher();
        h.write_u64(self.fold);
        h.write_u64(digest);
        self.fold = h.finish();
        self.len += 1;
    }

    /// How many items were appended.
    pub fn len(&self) -> usize {
        usize::try_from(self.len).unwrap_or(usize::MAX)
    }

    /// True when nothing was appended.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

fn hash_f64(x: f64, h: &mut FoldHasher<'static>) {
    // `0.0 == -0.0`: equal values must hash alike.
    let x = if x == 0.0 { 0.0 } else { x };
    x.to_bits().hash(h);
}

fn hash_opt_f64(x: Option<f64>, h: &mut FoldHasher<'static>) {
    match x {
        None => 0u8.hash(h),
        Some(x) => {
            1u8.hash(h);
            hash_f64(x, h);
        }
    }
}

fn hash_usage(usage: Option<&Usage>, h: &mut FoldHasher<'static>) {
    let Some(u) = usage else {
        return 0u8.hash(h);
    };
    1u8.hash(h);
    let Usage {
        input_tokens,
        output_tokens,
        cached_input_tokens,
        cache_creation_input_tokens,
        reasoning_tokens,
        total_tokens,
        cost_usd,
    } = u;
    input_tokens.hash(h);
    output_tokens.hash(h);
    cached_input_tokens.hash(h);
    cache_creation_input_tokens.hash(h);
    reasoning_tokens.hash(h);
    total_tokens.hash(h);
    hash_opt_f64(*cost_usd, h);
}

fn hash_opt_value(v: Option<&Value>, h: &mut FoldHasher<'static>) {
    match v {
        None => 0u8.hash(h),
        Some(v) => {
            1u8.hash(h);
            hash_value(v, h);
        }
    }
}

fn hash_value(v: &Value, h: &mut FoldHasher<'static>) {
    match v {
        Value::Null => 0u8.hash(h),
        Value::Bool(b) => {
            1u8.hash(h);
            b.hash(h);
        }
        Value::Number(n) => {
            2u8.hash(h);
            if let Some(u) = n.as_u64() {
                0u8.hash(h);
                u.hash(h);
            } else if let Some(i) = n.as_i64() {
                1u8.hash(h);
                i.hash(h);
            } else {
                2u8.hash(h);
                hash_f64(n.as_f64().unwrap_or(0.0), h);
            }
        }
        Value::String(s) => {
            3u8.hash(h);
            s.hash(h);
        }
        Value::Array(a) => {
            4u8.hash(h);
            a.len().hash(h);
            for v in a {
                hash_value(v, h);
            }
        }
        Value::Object(m) => {
            5u8.hash(h);
            m.len().hash(h);
            // Combine entries independently of their order, so the digest
            // agrees with `Map`'s equality whatever its iteration order.
            let mut sum = 0u64;
            for (k, v) in m {
                let mut eh = hasher();
                k.hash(&mut eh);
                hash_value(v, &mut eh);
                sum = sum.wrapping_add(eh.finish());
            }
            sum.hash(h);
        }
    }
}
