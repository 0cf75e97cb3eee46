//! Loading of recorded CLI captures (work in progress).
