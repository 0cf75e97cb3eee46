//! [`SharedItem`]: one transcript item held by a transcript and the event
//! that announces it, with its digest worked out once.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use serde::{Serialize, Serializer};

use super::TranscriptItem;
use super::digest::digest;

/// A [`TranscriptItem`] behind an [`Arc`], with its
/// [`digest`](TranscriptItem::digest).
///
/// [`Transcript::share`](crate::Transcript::share) makes one: the transcript
/// keeps the item and the [`RunEvent::Item`](crate::RunEvent::Item) carries
/// the same allocation, and neither the transcript's fingerprint nor the
/// host's mirror of it (spec §6: the emitted items must equal the returned
/// transcript) hashes the item again. The item cannot change after the digest
/// is taken: a `SharedItem` only hands out shared references.
///
/// It dereferences to the item, serializes as the item, and equality
/// compares the items.
#[derive(Clone)]
pub struct SharedItem {
    item: Arc<TranscriptItem>,
    digest: u64,
}

impl SharedItem {
    /// Share `item`, working out its digest.
    pub fn new(item: TranscriptItem) -> Self {
        Self::from(Arc::new(item))
    }

    /// The item's [`digest`](TranscriptItem::digest), worked out when this
    /// was made.
    pub fn digest(&self) -> u64 {
        self.digest
    }

    /// The shared allocation.
    pub fn as_arc(&self) -> &Arc<TranscriptItem> {
        &self.item
    }

    /// The shared allocation, without the digest.
    pub fn into_arc(self) -> Arc<TranscriptItem> {
        self.item
    }
}

impl Deref for SharedItem {
    type Target = TranscriptItem;

    fn deref(&self) -> &TranscriptItem {
        &self.item
    }
}

impl AsRef<TranscriptItem> for SharedItem {
    fn as_ref(&self) -> &TranscriptItem {
        &self.item
    }
}

impl From<TranscriptItem> for SharedItem {
    fn from(item: TranscriptItem) -> Self {
        Self::new(item)
    }
}

impl From<Arc<TranscriptItem>> for SharedItem {
    fn from(item: Arc<TranscriptItem>) -> Self {
        let digest = digest(&item);
        SharedItem { item, digest }
    }
}

impl PartialEq for SharedItem {
    fn eq(&self, other: &Self) -> bool {
        self.digest == other.digest && *self.item == *other.item
    }
}

impl Serialize for SharedItem {
    /// As the item itself.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.item.serialize(s)
    }
}

impl fmt::Debug for SharedItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.item.fmt(f)
    }
}
