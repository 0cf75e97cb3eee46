//! Identifiers.

/// `prefix` followed by 16 random hex digits (64 bits of entropy).
pub(crate) fn new_id(prefix: &str) -> String {
    format!("{prefix}{:016x}", rand::random::<u64>())
}

#[cfg(test)]
mod tests {
    #[test]
    fn run_ids_have_the_documented_shape() {
        let id = super::new_id("run_");
        assert_eq!(id.len(), 20);
        assert!(id.starts_with("run_"));
        assert!(id[4..].chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(id, super::new_id("run_"));
    }
}
