//! `fake-cli`: replays a recorded capture (work in progress).
fn main() {}
