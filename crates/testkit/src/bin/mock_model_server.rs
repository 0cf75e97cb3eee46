//! `mock-model-server`: the mock model server as a binary (work in progress).
fn main() {}
