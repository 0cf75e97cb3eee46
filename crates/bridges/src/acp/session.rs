//! The session table: each ACP session's working directory, MCP servers,
//! the turn in progress (at most one) and the tools the client allowed for
//! the rest of the session.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use agent_adaptor_core::{McpServer, RunHandle};
use agent_client_protocol::v1::schema::Error as RpcError;
use tokio_util::sync::CancellationToken;

use super::rpc::invalid_request;

/// At most this many sessions per connection (a new one beyond it is
/// refused; sessions live as long as the connection).
pub const MAX_SESSIONS: usize = 4096;

/// One ACP session.
#[derive(Debug)]
pub(crate) struct Session {
    /// The session id (also the thread key).
    pub(crate) id: String,
    /// The canonical working directory of its runs.
    pub(crate) cwd: PathBuf,
    /// The MCP servers its runs get.
    pub(crate) mcp_servers: Vec<McpServer>,
    /// Loaded sessions only continue their stored thread (a record that
    /// no longer matches is an error, never a silent fresh start).
    pub(crate) resume_only: bool,
    turn: Mutex<Turn>,
    always: Mutex<HashSet<String>>,
}

#[derive(Debug, Default)]
struct Turn {
    /// The turn in progress: its run (once started), and a token cancelled
    /// when it ends or is cancelled.
    running: Option<(Option<RunHandle>, CancellationToken)>,
    /// `session/cancel` arrived for the turn in progress.
    cancelled: bool,
}

impl Session {
    /// A session with no turn in progress.
    pub(crate) fn new(
        id: String,
        cwd: PathBuf,
        mcp_servers: Vec<McpServer>,
        resume_only: bool,
    ) -> Self {
        Session {
            id,
            cwd,
            mcp_servers,
            resume_only,
            turn: Mutex::new(Turn::default()),
            always: Mutex::new(HashSet::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Turn> {
        self.turn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Begin a turn; refused while another one runs. Its token is
    /// cancelled when the turn is cancelled or ends (the guard drops).
    pub(crate) fn begin(self: &Arc<Self>) -> Result<TurnGuard, RpcError> {
        let mut turn = self.lock();
        if turn.running.is_some() {
            return Err(invalid_request(
                "a prompt is already running in this session (send session/cancel first)",
            ));
        }
        let ended = CancellationToken::new();
        turn.running = Some((None, ended.clone()));
        turn.cancelled = false;
        Ok(TurnGuard {
            session: self.clone(),
            ended,
        })
    }

    /// Cancel the turn in progress, if any (its run and processes end).
    pub(crate) fn cancel(&self) {
        let mut turn = self.lock();
        if turn.running.is_none() {
            return;
        }
        turn.cancelled = true;
        if let Some((handle, over)) = &turn.running {
            // Permission requests still open are denied at once: the client
            // should answer them `cancelled`, but the run must not wait on it.
            over.cancel();
            if let Some(handle) = handle {
                handle.cancel();
            }
        }
    }

    /// Whether `session/cancel` arrived during the current turn.
    pub(crate) fn cancel_requested(&self) -> bool {
        self.lock().cancelled
    }

    /// Whether the client chose "always allow" for `key` earlier.
    pub(crate) fn always_allowed(&self, key: &str) -> bool {
        self.always
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(key)
    }

    /// Remember "always allow" for `key` for the rest of the session.
    pub(crate) fn allow_always(&self, key: String) {
        self.always
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key);
    }
}

/// The turn in progress; dropping it ends the turn.
#[derive(Debug)]
pub(crate) struct TurnGuard {
    session: Arc<Session>,
    ended: CancellationToken,
}

impl TurnGuard {
    /// Attach the turn's run; a cancel that came first cancels it now.
    pub(crate) fn attach(&self, handle: RunHandle) {
        let mut turn = self.session.lock();
        if turn.cancelled {
            handle.cancel();
        }
        if let Some((slot, _)) = turn.running.as_mut() {
            *slot = Some(handle);
        }
    }

    /// Cancelled when the turn ends or is cancelled.
    pub(crate) fn over(&self) -> CancellationToken {
        self.ended.clone()
    }
}

impl Drop for TurnGuard {
    fn drop(&mut self) {
        self.ended.cancel();
        self.session.lock().running = None;
    }
}

/// The sessions of one connection.
#[derive(Debug, Default)]
pub(crate) struct Sessions {
    map: Mutex<HashMap<String, Arc<Session>>>,
}

impl Sessions {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Session>>> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The session `id`.
    pub(crate) fn get(&self, id: &str) -> Option<Arc<Session>> {
        self.lock().get(id).cloned()
    }

    /// Add (or, for a loaded session with no turn running, replace) a
    /// session.
    pub(crate) fn insert(&self, session: Session) -> Result<Arc<Session>, RpcError> {
        let mut map = self.lock();
        if let Some(old) = map.get(&session.id)
            && old.lock().running.is_some()
        {
            return Err(invalid_request(
                "the session has a prompt running: cancel it before loading the session again",
            ));
        }
        if !map.contains_key(&session.id) && map.len() >= MAX_SESSIONS {
            return Err(invalid_request(
                "too many sessions on this connection; start a new connection",
            ));
        }
        let session = Arc::new(session);
        map.insert(session.id.clone(), session.clone());
        Ok(session)
    }

    /// Cancel every turn in progress (the connection ends).
    pub(crate) fn cancel_all(&self) {
        for session in self.lock().values() {
            session.cancel();
        }
    }
}
