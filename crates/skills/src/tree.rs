//! A skill tree on disk, checked and fingerprinted in one walk.
//!
//! The fingerprint is SHA-256 over a domain tag, then, for every regular
//! file in the order of its `/`-joined relative path (bytewise): the path's
//! length and bytes, whether it is executable, the content's length and the
//! SHA-256 of the content. Every field has a fixed size or a length before
//! it, so two different trees never encode alike. Directories add nothing
//! (an empty directory changes no fingerprint).

use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::{SkillError, io_at, shown};
use crate::{ExtractLimits, SKILL_MD};

/// The tag that starts every tree fingerprint (and only those).
const DOMAIN: &[u8] = b"agent-adaptor/skill-tree/v1\0";

/// What a walk of a skill tree found.
#[derive(Debug)]
pub(crate) struct Scan {
    /// `sha256:<hex>` of the tree.
    pub fingerprint: String,
    /// The text of the root's `SKILL.md`.
    pub skill_md: String,
}

struct FileAt {
    rel: String,
    path: PathBuf,
    executable: bool,
}

/// Walks the tree at `root` (not following any link): refuses links and
/// special files, holds it to `limits` (sizes both as listed and as read),
/// and fingerprints it.
pub(crate) fn scan(root: &Path, limits: ExtractLimits) -> Result<Scan, SkillError> {
    let files = list(root, limits)?;
    let mut tree = Sha256::new();
    tree.update(DOMAIN);
    tree.update((files.len() as u64).to_le_bytes());
    let mut total = 0u64;
    let mut skill_md = None;
    for file in &files {
        let keep = file.rel == SKILL_MD;
        let Hashed {
            len,
            digest,
            content,
        } = hash_file(file, limits, total, keep)?;
        total += len;
        tree.update((file.rel.len() as u64).to_le_bytes());
        tree.update(file.rel.as_bytes());
        tree.update([u8::from(file.executable)]);
        tree.update(len.to_le_bytes());
        tree.update(digest);
        if keep {
            skill_md = content;
        }
    }
    let skill_md = skill_md.ok_or(SkillError::MissingSkillMd)?;
    let skill_md = String::from_utf8(skill_md).map_err(|_| SkillError::FrontMatter {
        reason: "SKILL.md is not UTF-8".to_owned(),
    })?;
    Ok(Scan {
        fingerprint: format!("sha256:{}", hex(&tree.finalize())),
        skill_md,
    })
}

/// Every regular file under `root`, sorted by relative path.
fn list(root: &Path, limits: ExtractLimits) -> Result<Vec<FileAt>, SkillError> {
    let mut files = Vec::new();
    let mut entries = 0usize;
    let mut listed = 0u64;
    let mut pending = vec![(root.to_path_buf(), String::new())];
    while let Some((dir, prefix)) = pending.pop() {
        for entry in fs::read_dir(&dir).map_err(io_at(&dir))? {
            let entry = entry.map_err(io_at(&dir))?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else {
                return Err(SkillError::InvalidPath {
                    path: shown(&format!("{prefix}{}", name.to_string_lossy())),
                    reason: "not UTF-8",
                });
            };
            let rel = format!("{prefix}{name}");
            let path = entry.path();
            entries += 1;
            if entries > limits.max_files {
                return Err(SkillError::TooManyFiles {
                    limit: limits.max_files,
                });
            }
            // `DirEntry::metadata` does not follow a link.
            let meta = entry.metadata().map_err(io_at(&path))?;
            let kind = meta.file_type();
            if kind.is_symlink() {
                return Err(SkillError::Link { path: shown(&rel) });
            } else if kind.is_dir() {
                pending.push((path, format!("{rel}/")));
            } else if kind.is_file() {
                if meta.len() > limits.max_entry_bytes {
                    return Err(SkillError::EntryTooLarge {
                        path: shown(&rel),
                        limit: limits.max_entry_bytes,
                    });
                }
                listed = listed.saturating_add(meta.len());
                if listed > limits.max_total_bytes {
                    return Err(SkillError::TotalTooLarge {
                        limit: limits.max_total_bytes,
                    });
                }
                files.push(FileAt {
                    rel,
                    path,
                    executable: executable(&meta),
                });
            } else {
                return Err(SkillError::SpecialFile {
                    path: shown(&rel),
                    kind: special_kind(&kind),
                });
            }
        }
    }
    files.sort_by(|a, b| a.rel.as_bytes().cmp(b.rel.as_bytes()));
    Ok(files)
}

/// A file's content as the fingerprint sees it.
struct Hashed {
    len: u64,
    digest: [u8; 32],
    /// The content itself, when asked for.
    content: Option<Vec<u8>>,
}

/// The length and SHA-256 of a file's content, read with the caps (a file
/// that grew since it was listed is caught here), and the content itself
/// when `keep`.
fn hash_file(
    file: &FileAt,
    limits: ExtractLimits,
    total: u64,
    keep: bool,
) -> Result<Hashed, SkillError> {
    let cap = limits
        .max_entry_bytes
        .min(limits.max_total_bytes.saturating_sub(total));
    let opened = fs::File::open(&file.path).map_err(io_at(&file.path))?;
    let mut limited = opened.take(cap.saturating_add(1));
    let mut hasher = Sha256::new();
    let mut kept = keep.then(Vec::new);
    let mut buf = vec![0u8; 64 * 1024];
    let mut len = 0u64;
    loop {
        let n = match limited.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_at(&file.path)(e)),
        };
        len = len.saturating_add(n as u64);
        if len > cap {
            return Err(if len > limits.max_entry_bytes {
                SkillError::EntryTooLarge {
                    path: shown(&file.rel),
                    limit: limits.max_entry_bytes,
                }
            } else {
                SkillError::TotalTooLarge {
                    limit: limits.max_total_bytes,
                }
            });
        }
        hasher.update(&buf[..n]);
        if let Some(kept) = kept.as_mut() {
            kept.extend_from_slice(&buf[..n]);
        }
    }
    Ok(Hashed {
        len,
        digest: hasher.finalize().into(),
        content: kept,
    })
}

#[cfg(unix)]
fn executable(meta: &fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn executable(_: &fs::Metadata) -> bool {
    false
}

#[cfg(unix)]
fn special_kind(kind: &fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_fifo() {
        "FIFO"
    } else if kind.is_socket() {
        "socket"
    } else if kind.is_char_device() {
        "character device"
    } else if kind.is_block_device() {
        "block device"
    } else {
        "unknown file type"
    }
}

#[cfg(not(unix))]
fn special_kind(_: &fs::FileType) -> &'static str {
    "unknown file type"
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::with_capacity(64), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}
