//! The stream-json protocol family: Claude Code and CodeBuddy Code.
//!
//! Both CLIs print one JSON object per stdout line (`system`, `assistant`,
//! `user`, `stream_event`, `result`, control frames). They differ in details
//! that are data here, never copies of the parser: see [`Family`].

pub mod parse;
pub mod wire;

pub use parse::{ControlFrame, ExitFacts, Out, Parsed, Parser};

/// How a CLI of the family expects a permission reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PermissionReply {
    /// Claude: `{"behavior":"allow","updatedInput":…}` / `{"behavior":"deny","message":…}`.
    Behavior,
    /// CodeBuddy: `{"allowed":true,"updatedInput":…}` / `{"allowed":false,"reason":…}`.
    /// A Claude-shaped reply is treated as a denial by CodeBuddy.
    Allowed,
}

/// What distinguishes one CLI of the family from another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Family {
    /// The driver type, also the prefix of custom payload kinds.
    pub driver_type: &'static str,
    /// The permission reply shape.
    pub permission: PermissionReply,
}

/// Claude Code.
pub static CLAUDE: Family = Family {
    driver_type: "claude",
    permission: PermissionReply::Behavior,
};

/// CodeBuddy Code.
pub static CODEBUDDY: Family = Family {
    driver_type: "codebuddy",
    permission: PermissionReply::Allowed,
};
