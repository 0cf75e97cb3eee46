//! Tests of [`Transcript`]: spill and read back, clones, serde, equality,
//! failures, and the item digest.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::json;

use super::{
    SharedItem, Transcript, TranscriptError, TranscriptFingerprint, TranscriptItem, TranscriptKind,
};
use crate::usage::Usage;

/// An item with every field set, distinct per `i`, with non-ASCII text.
fn full_item(i: usize) -> TranscriptItem {
    let mut item = TranscriptItem::new(
        TranscriptKind::ToolResult,
        format!("résultat №{i} — 日本語 🦀\n\"q\""),
    );
    item.delta = i.is_multiple_of(2);
    item.tool_use_id = Some(format!("toolu_{i}"));
    item.tool_name = Some("shell".into());
    item.input = Some(
        json!({"cmd": ["ls", "-l"], "n": i, "f": 1.5, "neg": -3, "nested": {"ok": true, "nil": null}}),
    );
    item.is_error = i.is_multiple_of(3);
    item.model = Some("claude-ünïcode".into());
    item.session_id = Some(format!("sess-{i}"));
    item.usage = Some(Usage {
        input_tokens: Some(i as u64),
        output_tokens: Some(7),
        cached_input_tokens: None,
        cache_creation_input_tokens: Some(0),
        reasoning_tokens: Some(3),
        total_tokens: Some(10 + i as u64),
        cost_usd: Some(0.25),
    });
    item.cost_usd = Some(0.125 * i as f64);
    item.subtype = Some("success".into());
    item.errors = vec!["e1".into(), format!("ошибка {i}")];
    item.metadata = BTreeMap::from([
        ("k".to_owned(), "v".to_owned()),
        ("i".to_owned(), i.to_string()),
    ]);
    item.data = Some(json!([1, "two", {"three": 3.0}, u64::MAX, i64::MIN, -0.5e300, ""]));
    item
}

fn items(n: usize) -> Vec<TranscriptItem> {
    (0..n).map(full_item).collect()
}

/// The items, when all are in memory.
fn in_memory(t: &Transcript) -> Option<Vec<TranscriptItem>> {
    t.as_slice()
        .map(|items| items.iter().map(|i| (**i).clone()).collect())
}

fn filled(budget: usize, items: &[TranscriptItem]) -> Transcript {
    let mut t = Transcript::with_budget(budget);
    for item in items {
        t.push(item.clone());
    }
    t
}

#[test]
fn stays_in_memory_within_the_budget() {
    let expected = items(10);
    let t = filled(1 << 20, &expected);
    assert!(!t.is_spilled());
    assert_eq!(t.len(), 10);
    assert_eq!(in_memory(&t), Some(expected.clone()));
    assert!(t.iter().all(|r| matches!(r, Ok(Cow::Borrowed(_)))));
}

#[test]
fn spills_past_a_small_budget_and_reads_back_exactly() {
    let expected = items(500);
    let t = filled(8 * 1024, &expected);
    assert!(t.is_spilled());
    assert!(t.spill_error().is_none());
    assert_eq!(t.as_slice(), None);
    assert_eq!(t.len(), 500);
    assert_eq!(t.to_vec().unwrap(), expected);
    assert_eq!(t.iter().len(), 500);
    // Some items are read back, the newest are still borrowed from memory.
    let cows: Vec<_> = t.iter().map(Result::unwrap).collect();
    assert!(matches!(cows[0], Cow::Owned(_)));
    assert!(matches!(cows[499], Cow::Borrowed(_)));
    for i in [0, 1, 250, 498, 499] {
        assert_eq!(*t.get(i).unwrap().unwrap(), expected[i], "item {i}");
    }
    assert!(t.get(500).unwrap().is_none());
    assert_eq!(t.last(), expected.last());
    assert_eq!(t, expected);
    assert_eq!(expected, t);
}

#[test]
fn a_zero_budget_keeps_only_the_last_item_in_memory() {
    let expected = items(5);
    let t = filled(0, &expected);
    assert!(t.is_spilled());
    assert_eq!(t.last(), Some(&expected[4]));
    assert!(matches!(t.get(3).unwrap(), Some(Cow::Owned(_))));
    assert!(matches!(t.get(4).unwrap(), Some(Cow::Borrowed(_))));
    assert_eq!(t.to_vec().unwrap(), expected);
}

#[test]
fn clones_push_independently_into_the_shared_file() {
    let base = items(100);
    let mut a = filled(4 * 1024, &base);
    assert!(a.is_spilled());
    let mut b = a.clone();
    let mut want_a = base.clone();
    let mut want_b = base.clone();
    // Interleave pushes so both append records to the same file.
    for i in 0..200 {
        let mut x = full_item(1000 + i);
        x.text = format!("a{i}");
        let mut y = full_item(2000 + i);
        y.text = format!("b{i}");
        a.push(x.clone());
        want_a.push(x);
        b.push(y.clone());
        want_b.push(y);
    }
    assert_eq!(a.to_vec().unwrap(), want_a);
    assert_eq!(b.to_vec().unwrap(), want_b);
    assert_ne!(a, b);
    // Random access finds each record across the interleaved runs too,
    // backwards (no sequential hint to lean on).
    for (t, want) in [(&a, &want_a), (&b, &want_b)] {
        for i in (0..want.len()).rev() {
            assert_eq!(t.get(i).unwrap().unwrap().as_ref(), &want[i], "item {i}");
        }
        assert!(t.get(want.len()).unwrap().is_none());
    }
}

#[test]
fn a_spill_larger_than_one_write_is_read_back_in_order() {
    // ~2 MB of records in one spill: several appends (runs) of ~64 KiB.
    let big: Vec<TranscriptItem> = (0..4000)
        .map(|i| {
            let mut x = full_item(i);
            x.text = format!("{i}: {}", "é".repeat(200));
            x
        })
        .collect();
    let t = filled(4 * 1024 * 1024, &big);
    assert!(t.is_spilled());
    assert_eq!(t.to_vec().unwrap(), big);
    for i in [0, 1, 63, 64, 65, 1000, 2345, 3999] {
        assert_eq!(t.get(i).unwrap().unwrap().as_ref(), &big[i], "item {i}");
    }
}

#[test]
fn a_clone_of_an_unspilled_transcript_spills_on_its_own() {
    let base = items(3);
    let a = filled(16 * 1024, &base);
    assert!(!a.is_spilled());
    let mut b = a.clone();
    for item in items(100) {
        b.push(item);
    }
    assert!(b.is_spilled());
    assert!(!a.is_spilled());
    assert_eq!(in_memory(&a), Some(base.clone()));
    let mut want = base.clone();
    want.extend(items(100));
    assert_eq!(b, want);
}

#[test]
fn serde_round_trip_is_a_plain_json_array() {
    let expected = items(300);
    let spilled = filled(4 * 1024, &expected);
    assert!(spilled.is_spilled());
    let text = serde_json::to_string(&spilled).unwrap();
    assert_eq!(text, serde_json::to_string(&expected).unwrap());
    let back: Transcript = serde_json::from_str(&text).unwrap();
    assert_eq!(back, spilled);
    assert_eq!(back.to_vec().unwrap(), expected);
    let empty: Transcript = serde_json::from_str("[]").unwrap();
    assert!(empty.is_empty());
    assert!(serde_json::from_str::<Transcript>("{}").is_err());
}

#[test]
fn equality_is_item_by_item_across_representations() {
    let expected = items(200);
    let spilled = filled(2 * 1024, &expected);
    let memory = filled(1 << 30, &expected);
    assert!(spilled.is_spilled() && !memory.is_spilled());
    assert_eq!(spilled, memory);
    assert_eq!(Transcript::from(expected.clone()), memory);
    assert_eq!(expected.iter().cloned().collect::<Transcript>(), memory);
    let mut other = expected.clone();
    other[17].text.push('!');
    assert_ne!(filled(2 * 1024, &other), spilled);
    assert_ne!(spilled, other);
    assert_ne!(filled(2 * 1024, &expected[..199]), spilled);
    assert_eq!(Transcript::new(), Transcript::with_budget(0));
}

#[test]
fn a_corrupt_record_is_a_typed_error_and_nothing_panics() {
    let expected = items(50);
    let t = filled(1024, &expected);
    assert!(t.is_spilled());
    t.corrupt_record(2, b"{\"kind\":42").unwrap();
    let got: Vec<_> = t.iter().collect();
    assert!(
        matches!(got[2], Err(TranscriptError::Corrupt { index: 2, .. })),
        "{:?}",
        got[2]
    );
    assert_eq!(*got[3].as_ref().unwrap().as_ref(), expected[3]);
    assert!(t.to_vec().is_err());
    assert!(serde_json::to_string(&t).is_err());
    assert_ne!(t, Transcript::from(expected));
}

#[test]
fn a_spill_failure_keeps_every_item_in_memory_and_says_why() {
    let dir = std::env::temp_dir().join("agent-adaptor-no-such-dir-for-transcript-tests");
    let expected = items(100);
    let mut t = Transcript::with_budget(1024).with_spill_dir(&dir);
    for item in &expected {
        t.push(item.clone());
    }
    assert!(!t.is_spilled());
    let err = t
        .spill_error()
        .expect("spilling into a missing directory fails");
    assert!(
        matches!(
            err,
            TranscriptError::Spill {
                context: "creating the spill file",
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("creating the spill file"));
    assert_eq!(in_memory(&t), Some(expected.clone()));
}

#[test]
fn spill_dir_is_used_when_it_exists() {
    let expected = items(100);
    let t = {
        let mut t = Transcript::with_budget(1024).with_spill_dir(std::env::temp_dir());
        t.extend(expected.iter().cloned());
        t
    };
    assert!(t.is_spilled());
    assert_eq!(t.to_vec().unwrap(), expected);
}

#[test]
fn digests_follow_every_field() {
    let base = full_item(1);
    assert_eq!(base.digest(), base.clone().digest());
    let mut variants: Vec<TranscriptItem> = Vec::new();
    let mut push = |f: &dyn Fn(&mut TranscriptItem)| {
        let mut v = base.clone();
        f(&mut v);
        assert_ne!(v, base);
        variants.push(v);
    };
    push(&|i| i.kind = TranscriptKind::Assistant);
    push(&|i| i.text.push('x'));
    push(&|i| i.delta = !i.delta);
    push(&|i| i.tool_use_id = None);
    push(&|i| i.tool_name = Some("other".into()));
    push(&|i| i.input = Some(json!({"cmd": ["ls", "-la"]})));
    push(&|i| i.is_error = !i.is_error);
    push(&|i| i.model = None);
    push(&|i| i.session_id = Some("s".into()));
    push(&|i| i.usage.as_mut().unwrap().output_tokens = Some(8));
    push(&|i| i.usage.as_mut().unwrap().cost_usd = None);
    push(&|i| i.cost_usd = Some(9.0));
    push(&|i| i.subtype = None);
    push(&|i| i.errors.pop().map(drop).unwrap_or(()));
    push(&|i| {
        i.metadata.insert("z".into(), "z".into());
    });
    push(&|i| i.data = Some(json!([1, "two", {"three": 3.5}])));
    for v in &variants {
        assert_ne!(v.digest(), base.digest(), "{v:?}");
    }
    let t: Transcript = variants.iter().cloned().collect();
    let mut want = TranscriptFingerprint::new();
    for v in &variants {
        want.push_digest(v.digest());
    }
    assert_eq!(t.fingerprint(), want);
    assert_eq!(t.fingerprint().len(), variants.len());
}

#[test]
fn fingerprints_follow_order_length_and_content() {
    let a = TranscriptItem::assistant("a");
    let b = TranscriptItem::assistant("b");
    let fp = |items: &[&TranscriptItem]| {
        let mut f = TranscriptFingerprint::new();
        for i in items {
            f.push(i);
        }
        f
    };
    assert_eq!(fp(&[&a, &b]), fp(&[&a, &b]));
    assert_ne!(fp(&[&a, &b]), fp(&[&b, &a]), "order");
    assert_ne!(fp(&[&a]), fp(&[&a, &a]), "length");
    assert_ne!(fp(&[&a, &a]), fp(&[&a, &b]), "content");
    assert!(fp(&[]).is_empty());
    assert_eq!(fp(&[&a, &b]).len(), 2);
}

#[test]
fn equal_values_have_equal_digests() {
    let mut a = TranscriptItem::assistant("x");
    let mut b = a.clone();
    a.cost_usd = Some(0.0);
    b.cost_usd = Some(-0.0);
    assert_eq!(a, b);
    assert_eq!(a.digest(), b.digest());
    a.data = Some(json!({"a": 1, "b": [2]}));
    b.data = Some(serde_json::from_str(r#"{"b": [2], "a": 1}"#).unwrap());
    assert_eq!(a, b);
    assert_eq!(a.digest(), b.digest());
    // A u64 and a float of the same magnitude are different JSON numbers.
    a.data = Some(json!(1));
    b.data = Some(json!(1.0));
    assert_ne!(a, b);
    assert_ne!(a.digest(), b.digest());
}

#[test]
fn debug_lists_items_in_memory_and_summarizes_a_spill() {
    let t = filled(1 << 20, &[TranscriptItem::assistant("hi")]);
    assert!(format!("{t:?}").contains("\"hi\""));
    let t = filled(0, &items(3));
    assert_eq!(format!("{t:?}"), "Transcript(3 items, 2 spilled)");
}

#[test]
fn a_shared_item_is_one_copy_and_counts_like_a_pushed_one() {
    let mut shared = Transcript::new();
    let item = shared.share(full_item(1));
    assert!(std::sync::Arc::ptr_eq(
        item.as_arc(),
        &shared.as_slice().unwrap()[0]
    ));
    let pushed = filled(1 << 20, &[full_item(1)]);
    assert_eq!(shared.fingerprint(), pushed.fingerprint());
    assert_eq!(shared, pushed);
    // The digest the item carries is the item's own.
    assert_eq!(item.digest(), full_item(1).digest());
    let mut by_digest = TranscriptFingerprint::new();
    by_digest.push_digest(item.digest());
    assert_eq!(by_digest, pushed.fingerprint());
}

#[test]
fn a_shared_item_made_any_way_carries_its_own_digest() {
    let a = SharedItem::new(full_item(2));
    let b = SharedItem::from(std::sync::Arc::new(full_item(2)));
    let c: SharedItem = full_item(3).into();
    assert_eq!(a.digest(), full_item(2).digest());
    assert_eq!(a, b);
    assert_ne!(a, c);
    assert_eq!(c.digest(), full_item(3).digest());
    assert_eq!(*a, full_item(2), "derefs to the item");
    assert_eq!(format!("{a:?}"), format!("{:?}", full_item(2)));
}

#[test]
fn a_spilled_item_keeps_a_non_finite_float() {
    let mut item = full_item(0);
    item.cost_usd = Some(f64::INFINITY);
    let mut t = Transcript::with_budget(0);
    t.push(item);
    t.push(full_item(1));
    assert!(t.is_spilled());
    let back = t.get(0).unwrap().unwrap();
    assert_eq!(back.cost_usd, Some(f64::INFINITY));
}
