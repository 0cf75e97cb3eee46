//! The two ways a run's structured-output request is refused before it
//! starts: a leaf, so that [`Error`](crate::Error) holds them without
//! importing [`structured`](crate::structured).

/// The schema of a run is unusable; the run was refused before anything
/// started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid output schema ({field}): {reason}")]
pub struct InvalidOutputSchemaError {
    /// The option at fault: `schema`, `schema_name`, `schema_description`
    /// or `schema_return_invalid`.
    pub field: &'static str,
    /// What is wrong with it.
    pub reason: String,
}

/// The driver cannot produce structured output for this run; the run was
/// refused before anything started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("driver {driver} cannot produce structured output: {reason}")]
pub struct StructuredOutputUnsupportedError {
    /// The driver type.
    pub driver: String,
    /// Why (which declaration is missing).
    pub reason: String,
}
