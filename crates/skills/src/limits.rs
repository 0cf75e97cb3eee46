//! [`ExtractLimits`]: the caps a skill tree must stay under.

/// The caps on a skill tree, for archives (enforced while extracting, on the
/// bytes actually read) and for directories (checked while fingerprinting).
///
/// ```
/// use agent_adaptor_skills::ExtractLimits;
///
/// let small = ExtractLimits::default().with_max_entry_bytes(1 << 20);
/// assert_eq!(small.max_entry_bytes, 1 << 20);
/// assert_eq!(small.max_files, ExtractLimits::DEFAULT_MAX_FILES);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExtractLimits {
    /// Files and directories in the tree (every directory an entry creates,
    /// implicitly or not, counts).
    pub max_files: usize,
    /// Bytes of file content in all.
    pub max_total_bytes: u64,
    /// Bytes of one file.
    pub max_entry_bytes: u64,
}

impl ExtractLimits {
    /// Default [`max_files`](Self::max_files): 1000.
    pub const DEFAULT_MAX_FILES: usize = 1000;
    /// Default [`max_total_bytes`](Self::max_total_bytes): 50 MiB.
    pub const DEFAULT_MAX_TOTAL_BYTES: u64 = 50 << 20;
    /// Default [`max_entry_bytes`](Self::max_entry_bytes): 10 MiB.
    pub const DEFAULT_MAX_ENTRY_BYTES: u64 = 10 << 20;

    /// These limits with `max_files` set.
    #[must_use]
    pub fn with_max_files(mut self, max_files: usize) -> Self {
        self.max_files = max_files;
        self
    }

    /// These limits with `max_total_bytes` set.
    #[must_use]
    pub fn with_max_total_bytes(mut self, max_total_bytes: u64) -> Self {
        self.max_total_bytes = max_total_bytes;
        self
    }

    /// These limits with `max_entry_bytes` set.
    #[must_use]
    pub fn with_max_entry_bytes(mut self, max_entry_bytes: u64) -> Self {
        self.max_entry_bytes = max_entry_bytes;
        self
    }

    /// How many bytes a tar stream may hold in all: the content caps plus
    /// room for headers and metadata records (16 KiB per entry). The tar
    /// reader keeps long-name and PAX records in memory, so the stream
    /// itself is capped too.
    pub(crate) fn tar_stream_budget(&self) -> u64 {
        let per_entry = 16 * 1024u64;
        let entries = u64::try_from(self.max_files).unwrap_or(u64::MAX);
        self.max_total_bytes
            .saturating_add(entries.saturating_add(2).saturating_mul(per_entry))
    }
}

impl Default for ExtractLimits {
    fn default() -> Self {
        Self {
            max_files: Self::DEFAULT_MAX_FILES,
            max_total_bytes: Self::DEFAULT_MAX_TOTAL_BYTES,
            max_entry_bytes: Self::DEFAULT_MAX_ENTRY_BYTES,
        }
    }
}
