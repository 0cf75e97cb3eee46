//! The agent driver (stub).
