//! The client's file system, served to the agent (`fs/read_text_file`,
//! `fs/write_text_file`) and confined to the run's workspace.
//!
//! [`Workspace`] is the confinement, usable by anyone serving paths to an
//! agent: the root is canonicalised once; a path the agent names (absolute,
//! or relative to the root) is resolved through the file system — `..`
//! and symbolic links included — and refused unless what it names lies
//! inside the root. A path that does not exist yet (a file to write) is
//! checked through its nearest existing ancestor, and its missing part may
//! hold no `..`.

use std::io;
use std::path::{Component, Path, PathBuf};

use agent_client_protocol::v1::schema::{
    ReadTextFileRequest, ReadTextFileResponse, WriteTextFileRequest, WriteTextFileResponse,
};
use serde_json::Value;

use super::wire::{INTERNAL_ERROR, INVALID_PARAMS, RESOURCE_NOT_FOUND};

/// The largest file the client reads for the agent (64 MiB).
pub const MAX_READ_BYTES: u64 = 64 * 1024 * 1024;

/// A JSON-RPC error the client answers with: its code and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RpcError {
    /// The JSON-RPC error code.
    pub code: i64,
    /// The message (it names the path the agent gave, nothing else).
    pub message: String,
}

impl RpcError {
    /// An error with `code` and `message`.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
        }
    }

    fn io(path: &Path, e: &io::Error) -> Self {
        let code = if e.kind() == io::ErrorKind::NotFound {
            RESOURCE_NOT_FOUND
        } else {
            INTERNAL_ERROR
        };
        RpcError::new(code, format!("{}: {e}", path.display()))
    }
}

/// The root an agent's paths are confined to.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
}

impl Workspace {
    /// The workspace at `root` (canonicalised; it must exist).
    pub fn new(root: &Path) -> io::Result<Workspace> {
        Ok(Workspace {
            root: root.canonicalize()?,
        })
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn outside(path: &Path) -> RpcError {
        RpcError::new(
            INVALID_PARAMS,
            format!("{}: outside the run's workspace", path.display()),
        )
    }

    /// The real path of `path`, which must exist inside the workspace.
    pub fn existing(&self, path: &Path) -> Result<PathBuf, RpcError> {
        let joined = self.root.join(path);
        let real = joined.canonicalize().map_err(|e| match e.kind() {
            // A missing path outside the root is still "outside".
            io::ErrorKind::NotFound if !self.lexically_inside(&joined) => Self::outside(path),
            _ => RpcError::io(path, &e),
        })?;
        if real.starts_with(&self.root) {
            Ok(real)
        } else {
            Err(Self::outside(path))
        }
    }

    /// The real path to write `path` at: its nearest existing ancestor must
    /// resolve inside the workspace, and the rest may hold no `..`. An
    /// existing file is resolved as by [`existing`](Self::existing) (a link
    /// is written through only when its target is inside).
    pub fn writable(&self, path: &Path) -> Result<PathBuf, RpcError> {
        let joined = self.root.join(path);
        if std::fs::symlink_metadata(&joined).is_ok() {
            return self.existing(path);
        }
        let mut base = joined.as_path();
        let mut rest = Vec::new();
        loop {
            let Some(parent) = base.parent() else {
                return Err(Self::outside(path));
            };
            rest.push(base.file_name().map(PathBuf::from).unwrap_or_default());
            if std::fs::symlink_metadata(parent).is_ok() {
                base = parent;
                break;
            }
            base = parent;
        }
        let real = base.canonicalize().map_err(|e| RpcError::io(path, &e))?;
        if !real.starts_with(&self.root) {
            return Err(Self::outside(path));
        }
        let mut out = real;
        for part in rest.into_iter().rev() {
            if part.as_os_str().is_empty()
                || part
                    .components()
                    .any(|c| !matches!(c, Component::Normal(_)))
            {
                return Err(Self::outside(path));
            }
            out.push(part);
        }
        Ok(out)
    }

    /// Whether `path` lies under the root by its components alone.
    fn lexically_inside(&self, path: &Path) -> bool {
        let mut depth: Vec<Component<'_>> = Vec::new();
        for c in path.components() {
            match c {
                Component::ParentDir => {
                    depth.pop();
                }
                Component::CurDir => {}
                other => depth.push(other),
            }
        }
        depth.iter().collect::<PathBuf>().starts_with(&self.root)
    }
}

fn params<T: serde::de::DeserializeOwned>(params: Value) -> Result<T, RpcError> {
    serde_json::from_value(params).map_err(|e| RpcError::new(INVALID_PARAMS, e.to_string()))
}

/// `fs/read_text_file`: the file (from `line`, 1-based, at most `limit`
/// lines), inside the workspace.
pub fn read_text_file(ws: &Workspace, raw: Value) -> Result<Value, RpcError> {
    let req: ReadTextFileRequest = params(raw)?;
    let real = ws.existing(&req.path)?;
    let size = std::fs::metadata(&real)
        .map_err(|e| RpcError::io(&req.path, &e))?
        .len();
    if size > MAX_READ_BYTES {
        return Err(RpcError::new(
            INVALID_PARAMS,
            format!(
                "{}: {size} bytes, more than the client reads ({MAX_READ_BYTES})",
                req.path.display()
            ),
        ));
    }
    let text = std::fs::read_to_string(&real).map_err(|e| RpcError::io(&req.path, &e))?;
    let content = match (req.line, req.limit) {
        (None, None) => text,
        (line, limit) => {
            let skip = line.map_or(0, |l| l.saturating_sub(1)) as usize;
            let take = limit.map_or(usize::MAX, |l| l as usize);
            text.split_inclusive('\n')
                .skip(skip)
                .take(take)
                .collect::<String>()
        }
    };
    serde_json::to_value(ReadTextFileResponse::new(content))
        .map_err(|e| RpcError::new(INTERNAL_ERROR, e.to_string()))
}

/// `fs/write_text_file`: the file written (missing directories created),
/// inside the workspace.
pub fn write_text_file(ws: &Workspace, raw: Value) -> Result<Value, RpcError> {
    let req: WriteTextFileRequest = params(raw)?;
    let real = ws.writable(&req.path)?;
    if let Some(dir) = real.parent() {
        std::fs::create_dir_all(dir).map_err(|e| RpcError::io(&req.path, &e))?;
    }
    std::fs::write(&real, req.content.as_bytes()).map_err(|e| RpcError::io(&req.path, &e))?;
    serde_json::to_value(WriteTextFileResponse::new())
        .map_err(|e| RpcError::new(INTERNAL_ERROR, e.to_string()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn ws() -> (tempfile::TempDir, Workspace) {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("work/sub")).unwrap();
        std::fs::write(tmp.path().join("work/a.txt"), "one\ntwo\nthree\n").unwrap();
        std::fs::write(tmp.path().join("secret.txt"), "no").unwrap();
        let ws = Workspace::new(&tmp.path().join("work")).unwrap();
        (tmp, ws)
    }

    #[test]
    fn reads_inside_and_refuses_outside() {
        let (tmp, ws) = ws();
        let read = |p: &str| read_text_file(&ws, json!({"sessionId": "s", "path": p}));
        assert_eq!(read("a.txt").unwrap()["content"], "one\ntwo\nthree\n");
        let abs = ws.root().join("a.txt");
        let part = read_text_file(
            &ws,
            json!({"sessionId": "s", "path": abs, "line": 2, "limit": 1}),
        );
        assert_eq!(part.unwrap()["content"], "two\n");
        for bad in [
            "../secret.txt",
            "/etc/passwd",
            "sub/../../secret.txt",
            "../nope",
        ] {
            let e = read(bad).unwrap_err();
            assert!(e.message.contains("outside"), "{bad}: {e:?}");
        }
        assert_eq!(read("missing.txt").unwrap_err().code, RESOURCE_NOT_FOUND);
        std::os::unix::fs::symlink(tmp.path().join("secret.txt"), ws.root().join("link")).unwrap();
        assert!(read("link").unwrap_err().message.contains("outside"));
    }

    #[test]
    fn writes_inside_and_refuses_outside() {
        let (tmp, ws) = ws();
        let write =
            |p: &str| write_text_file(&ws, json!({"sessionId": "s", "path": p, "content": "x"}));
        write("new/dir/b.txt").unwrap();
        assert_eq!(
            std::fs::read_to_string(ws.root().join("new/dir/b.txt")).unwrap(),
            "x"
        );
        for bad in [
            "../evil.txt",
            "/tmp/evil.txt",
            "sub/../../evil.txt",
            "new/../../evil",
        ] {
            assert!(write(bad).is_err(), "{bad}");
        }
        std::os::unix::fs::symlink(tmp.path(), ws.root().join("up")).unwrap();
        assert!(write("up/evil.txt").is_err());
        std::os::unix::fs::symlink(tmp.path().join("secret.txt"), ws.root().join("s")).unwrap();
        assert!(write("s").is_err());
        assert_eq!(
            std::fs::read_to_string(tmp.path().join("secret.txt")).unwrap(),
            "no"
        );
        assert!(!tmp.path().join("evil.txt").exists());
    }
}
