//! [`LifecycleId`]: the id every payload of one lifecycle carries.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The id of a message, a reasoning block or a tool call, as every payload
/// of that lifecycle carries it (start, content, end), and as the public
/// events carry it on.
///
/// It is shared, not copied: cloning is a reference-count increment, so a
/// driver that makes the id once hands the same string to the start, every
/// delta and the end, and to the lifecycle bookkeeping, without allocating
/// for each. It reads as a `str` everywhere else: it dereferences to one,
/// compares equal to `&str` and `String`, hashes like the `str` (so a map
/// keyed by ids is looked up by `&str`), and serializes as a JSON string.
///
/// ```
/// use agent_adaptor_driver::LifecycleId;
///
/// let id = LifecycleId::from("msg_1");
/// let again = id.clone(); // no copy of the string
/// assert_eq!(again, "msg_1");
/// assert!(again.starts_with("msg"));
/// assert_eq!(serde_json::to_string(&id).unwrap(), r#""msg_1""#);
/// ```
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct LifecycleId(Arc<str>);

impl LifecycleId {
    /// The id as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Deref for LifecycleId {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for LifecycleId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for LifecycleId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl Hash for LifecycleId {
    // The same hash as the `str`, as `Borrow<str>` requires.
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl fmt::Debug for LifecycleId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for LifecycleId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self)
    }
}

impl From<&str> for LifecycleId {
    fn from(s: &str) -> Self {
        LifecycleId(Arc::from(s))
    }
}

impl From<&String> for LifecycleId {
    fn from(s: &String) -> Self {
        LifecycleId(Arc::from(s.as_str()))
    }
}

impl From<String> for LifecycleId {
    fn from(s: String) -> Self {
        LifecycleId(Arc::from(s))
    }
}

impl From<Arc<str>> for LifecycleId {
    fn from(s: Arc<str>) -> Self {
        LifecycleId(s)
    }
}

impl From<&LifecycleId> for LifecycleId {
    fn from(id: &LifecycleId) -> Self {
        id.clone()
    }
}

impl From<LifecycleId> for String {
    fn from(id: LifecycleId) -> Self {
        id.as_str().to_owned()
    }
}

impl PartialEq<str> for LifecycleId {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for LifecycleId {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for LifecycleId {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other.as_str()
    }
}

impl PartialEq<LifecycleId> for str {
    fn eq(&self, other: &LifecycleId) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<LifecycleId> for &str {
    fn eq(&self, other: &LifecycleId) -> bool {
        *self == other.as_str()
    }
}

impl PartialEq<LifecycleId> for String {
    fn eq(&self, other: &LifecycleId) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Serialize for LifecycleId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self)
    }
}

impl<'de> Deserialize<'de> for LifecycleId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Arc::<str>::deserialize(d).map(LifecycleId)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests fail loudly by design
mod tests {
    use std::collections::HashMap;

    use super::*;

    #[test]
    fn a_clone_shares_the_string() {
        let id = LifecycleId::from(String::from("call_7"));
        let again = id.clone();
        assert!(std::ptr::eq(id.as_str(), again.as_str()));
        let from_ref = LifecycleId::from(&id);
        assert!(
            std::ptr::eq(id.as_str(), from_ref.as_str()),
            "From<&LifecycleId> clones"
        );
        let arc: Arc<str> = Arc::from("x");
        let shared = LifecycleId::from(Arc::clone(&arc));
        assert!(
            std::ptr::eq(&*arc, shared.as_str()),
            "From<Arc<str>> keeps the Arc"
        );
    }

    #[test]
    fn converts_from_and_to_owned_strings() {
        let owned = String::from("m9");
        assert_eq!(LifecycleId::from(&owned), "m9");
        assert_eq!(String::from(LifecycleId::from("m9")), owned);
        assert_eq!(LifecycleId::default(), "");
        assert_eq!(LifecycleId::from("a").as_ref() as &str, "a");
    }

    #[test]
    fn compares_hashes_and_looks_up_as_a_str() {
        let id = LifecycleId::from("m1");
        assert_eq!(id, "m1");
        assert_eq!("m1", id);
        assert_eq!(id, String::from("m1"));
        assert_ne!(id, "m2");
        let mut open: HashMap<LifecycleId, u8> = HashMap::new();
        open.insert(id.clone(), 1);
        assert_eq!(open.get("m1"), Some(&1));
        assert_eq!(open.remove("m1"), Some(1));
    }

    #[test]
    fn serializes_and_reads_back_as_a_json_string() {
        let id = LifecycleId::from("é \"quoted\"");
        let json = serde_json::to_string(&id).unwrap();
        assert_eq!(json, r#""é \"quoted\"""#);
        assert_eq!(serde_json::from_str::<LifecycleId>(&json).unwrap(), id);
        assert!(serde_json::from_str::<LifecycleId>("7").is_err());
        assert_eq!(format!("{id}"), "é \"quoted\"");
        assert_eq!(format!("{id:?}"), r#""é \"quoted\"""#);
    }
}
