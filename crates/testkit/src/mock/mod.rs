//! The scripted mock model server (work in progress).
