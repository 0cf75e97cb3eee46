//! Archives: the format told by the first bytes, each entry checked and
//! written by [`TreeWriter`] (the archive crates never unpack anything).

use std::cell::Cell;
use std::fs::File;
use std::io::{self, BufReader, Cursor, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use crate::ExtractLimits;
use crate::entry_path::{self, RelPath};
use crate::error::{SkillError, io_at, shown};
use crate::writer::TreeWriter;

/// The archive formats read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Zip,
    Tar,
    TarGz,
}

/// How many leading bytes [`detect`] needs to see (a tar header).
const HEAD: usize = 512;
/// Where a POSIX (`ustar\0`) or GNU (`ustar `) tar header keeps its magic.
const USTAR_AT: usize = 257;

/// The format of an archive starting with `head`: zip by its local-file or
/// empty-archive signature, gzip by its magic (the content must then be a
/// tar, checked after decompression), tar by the `ustar` magic. A pre-POSIX
/// (v7) tar has no magic and is not read.
pub(crate) fn detect(head: &[u8]) -> Option<Format> {
    if head.starts_with(b"PK\x03\x04") || head.starts_with(b"PK\x05\x06") {
        Some(Format::Zip)
    } else if head.starts_with(&[0x1f, 0x8b]) {
        Some(Format::TarGz)
    } else if is_tar(head) {
        Some(Format::Tar)
    } else {
        None
    }
}

fn is_tar(head: &[u8]) -> bool {
    head.get(USTAR_AT..USTAR_AT + 5) == Some(b"ustar")
}

/// Extracts the archive at `path` into the empty directory `target`.
/// On error, `target` may hold part of the archive: the caller removes it.
pub(crate) fn extract(path: &Path, target: &Path, limits: ExtractLimits) -> Result<(), SkillError> {
    let mut file = File::open(path).map_err(io_at(path))?;
    let head = read_head(&mut file).map_err(io_at(path))?;
    file.seek(SeekFrom::Start(0)).map_err(io_at(path))?;
    let mut writer = TreeWriter::new(target, limits);
    match detect(&head) {
        Some(Format::Zip) => extract_zip(file, &mut writer, limits),
        Some(Format::Tar) => extract_tar(BufReader::new(file), &mut writer, limits),
        Some(Format::TarGz) => {
            let mut gz = flate2::read::MultiGzDecoder::new(BufReader::new(file));
            let head = read_head(&mut gz).map_err(corrupt)?;
            if !is_tar(&head) {
                return Err(unsupported(path));
            }
            extract_tar(Cursor::new(head).chain(gz), &mut writer, limits)
        }
        None => Err(unsupported(path)),
    }
}

fn unsupported(path: &Path) -> SkillError {
    SkillError::UnsupportedArchive {
        path: path.to_path_buf(),
    }
}

/// Up to [`HEAD`] bytes from the start of `from`.
fn read_head(from: &mut impl Read) -> io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(HEAD);
    from.take(HEAD as u64).read_to_end(&mut head)?;
    Ok(head)
}

fn corrupt(error: impl std::fmt::Display) -> SkillError {
    SkillError::CorruptArchive {
        reason: shown(&error.to_string()),
    }
}

/// `S_IFMT` and the file types of a Unix mode.
mod mode {
    pub const TYPE: u32 = 0o170_000;
    pub const REGULAR: u32 = 0o100_000;
    pub const DIR: u32 = 0o040_000;
    pub const LINK: u32 = 0o120_000;
    pub const FIFO: u32 = 0o010_000;
    pub const CHAR: u32 = 0o020_000;
    pub const BLOCK: u32 = 0o060_000;
    pub const SOCKET: u32 = 0o140_000;
}

pub(crate) fn extract_zip<R: Read + Seek>(
    reader: R,
    writer: &mut TreeWriter<'_>,
    limits: ExtractLimits,
) -> Result<(), SkillError> {
    let mut archive = zip::ZipArchive::new(reader).map_err(corrupt)?;
    if archive.len() > limits.max_files {
        return Err(SkillError::TooManyFiles {
            limit: limits.max_files,
        });
    }
    for index in 0..archive.len() {
        let mut entry = archive.by_index(index).map_err(corrupt)?;
        let name = entry.name().map_err(corrupt)?.into_owned();
        let rel = entry_path::check(name.as_bytes())?;
        let unix = entry.unix_mode();
        let file_type = unix.map_or(0, |m| m & mode::TYPE);
        if entry.is_symlink() || file_type == mode::LINK {
            return Err(SkillError::Link { path: shown(&name) });
        }
        if let Some(kind) = special_kind(file_type) {
            return Err(SkillError::SpecialFile {
                path: shown(&name),
                kind,
            });
        }
        if entry.is_dir() || file_type == mode::DIR {
            if let Some(rel) = rel {
                writer.dir(&rel)?;
            }
            continue;
        }
        let rel = file_rel(rel, &name)?;
        let executable = unix.is_some_and(|m| m & 0o111 != 0);
        let claimed = entry.size();
        writer.file(&rel, executable, claimed, &mut entry, &corrupt)?;
    }
    Ok(())
}

/// The kind of a Unix file type that is neither a file, a directory nor a
/// link (`0`: no type given, a plain entry).
fn special_kind(file_type: u32) -> Option<&'static str> {
    match file_type {
        0 | mode::REGULAR | mode::DIR | mode::LINK => None,
        mode::FIFO => Some("FIFO"),
        mode::CHAR => Some("character device"),
        mode::BLOCK => Some("block device"),
        mode::SOCKET => Some("socket"),
        _ => Some("unknown file type"),
    }
}

/// A file entry needs a name other than the root.
fn file_rel(rel: Option<RelPath>, name: &str) -> Result<RelPath, SkillError> {
    rel.ok_or_else(|| SkillError::InvalidPath {
        path: shown(name),
        reason: "a file entry names the root",
    })
}

/// A reader that fails once more than `budget` bytes went through it, and
/// says so in `hit` (the tar reader wraps the error it sees).
struct Budget<R> {
    inner: R,
    left: u64,
    hit: Rc<Cell<bool>>,
}

impl<R: Read> Read for Budget<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let want = buf.len().min(
            usize::try_from(self.left)
                .unwrap_or(usize::MAX)
                .saturating_add(1),
        );
        let n = self.inner.read(&mut buf[..want])?;
        let n64 = n as u64;
        if n64 > self.left {
            self.hit.set(true);
            return Err(io::Error::other("tar stream over its byte budget"));
        }
        self.left -= n64;
        Ok(n)
    }
}

pub(crate) fn extract_tar<R: Read>(
    reader: R,
    writer: &mut TreeWriter<'_>,
    limits: ExtractLimits,
) -> Result<(), SkillError> {
    let hit = Rc::new(Cell::new(false));
    let budget = Budget {
        inner: reader,
        left: limits.tar_stream_budget(),
        hit: Rc::clone(&hit),
    };
    let error = |e: io::Error| {
        if hit.get() {
            SkillError::TotalTooLarge {
                limit: limits.max_total_bytes,
            }
        } else {
            corrupt(e)
        }
    };
    let mut archive = tar::Archive::new(budget);
    for entry in archive.entries().map_err(error)? {
        let mut entry = entry.map_err(error)?;
        let name_bytes = entry.path_bytes().into_owned();
        let name = String::from_utf8_lossy(&name_bytes).into_owned();
        let rel = entry_path::check(&name_bytes)?;
        let header = entry.header();
        let executable = header.mode().map_err(error)? & 0o111 != 0;
        use tar::EntryType as T;
        let special = |kind| SkillError::SpecialFile {
            path: shown(&name),
            kind,
        };
        match header.entry_type() {
            T::Regular | T::Continuous => {
                let rel = file_rel(rel, &name)?;
                let claimed = entry.size();
                writer.file(&rel, executable, claimed, &mut entry, &error)?;
            }
            T::Directory => {
                if entry.size() != 0 {
                    return Err(corrupt(format!("directory entry {name:?} holds data")));
                }
                if let Some(rel) = rel {
                    writer.dir(&rel)?;
                }
            }
            T::Symlink | T::Link => return Err(SkillError::Link { path: shown(&name) }),
            T::Char => return Err(special("character device")),
            T::Block => return Err(special("block device")),
            T::Fifo => return Err(special("FIFO")),
            T::GNUSparse => return Err(special("sparse file")),
            // A PAX global header (`git archive` writes one): metadata only.
            T::XGlobalHeader => {}
            _ => return Err(special("unknown entry type")),
        }
    }
    Ok(())
}

/// Where the skill is in an extracted archive: its root when it holds
/// `SKILL.md`, else the single top-level directory that does (a
/// `__MACOSX` folder beside it is ignored).
pub(crate) fn skill_root(extracted: &Path) -> Result<PathBuf, SkillError> {
    if is_skill_dir(extracted) {
        return Ok(extracted.to_path_buf());
    }
    let mut top = Vec::new();
    for entry in std::fs::read_dir(extracted).map_err(io_at(extracted))? {
        let entry = entry.map_err(io_at(extracted))?;
        if entry.file_name() != "__MACOSX" {
            top.push(entry.path());
        }
    }
    match top.as_slice() {
        [only] if is_skill_dir(only) => Ok(only.clone()),
        _ => Err(SkillError::MissingSkillMd),
    }
}

/// A directory (not a link to one) with a regular `SKILL.md` in it.
pub(crate) fn is_skill_dir(dir: &Path) -> bool {
    let is = |path: &Path, file: bool| {
        std::fs::symlink_metadata(path).is_ok_and(|m| if file { m.is_file() } else { m.is_dir() })
    };
    is(dir, false) && is(&dir.join(crate::SKILL_MD), true)
}
