//! Pipeline benchmark (placeholder until the divan bench lands).
fn main() {}
