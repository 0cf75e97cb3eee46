//! The fake CLI replayer (work in progress).
