//! # agent-adaptor-process (work in progress)
