//! Mapping backend failures to [`StoreError`] without leaking secrets.

use agent_adaptor_core::thread::StoreError;

/// A `Backend` error for operation `op`, described from `e`.
///
/// The description never includes a connection string: configuration
/// errors are reduced to their kind, and query errors only carry the
/// database's own message and SQLSTATE.
pub(crate) fn backend(op: &str, e: &sqlx::Error) -> StoreError {
    StoreError::Backend(format!("{op}: {}", describe(e)))
}

/// A `Backend` error for operation `op` with a message of our own.
pub(crate) fn backend_msg(op: &str, msg: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(format!("{op}: {msg}"))
}

/// What `e` comes down to, named once: the root cause when it is one a
/// user can act on (the server is not listening, the host name does not
/// resolve, the password is wrong, the database is missing, the SQLite
/// file cannot be opened), found by walking `e`'s source chain once.
pub(crate) fn describe(e: &sqlx::Error) -> String {
    root_cause(e).map_or_else(|| detail(e), str::to_owned)
}

fn root_cause(e: &sqlx::Error) -> Option<&'static str> {
    if let sqlx::Error::Database(db) = e {
        return match db.code().as_deref() {
            // PostgreSQL: invalid_password, invalid_authorization_specification.
            Some("28P01" | "28000") => Some("authentication failed (check the user and password)"),
            Some("3D000") => Some("the database does not exist (create it, or fix the URL)"),
            // SQLite: SQLITE_CANTOPEN, SQLITE_NOTADB, SQLITE_PERM, SQLITE_READONLY.
            Some("14") => Some("cannot open the SQLite file (bad path, or no permission)"),
            Some("26") => Some("the file is not a SQLite database"),
            Some("3" | "8") => Some("no permission to write the SQLite file"),
            _ => None,
        };
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind as K;
            match io.kind() {
                K::ConnectionRefused => {
                    return Some(
                        "connection refused (nothing listens there: is the server running?)",
                    );
                }
                K::TimedOut => return Some("connection timed out"),
                K::PermissionDenied => return Some("permission denied"),
                _ => {}
            }
            // The resolver's failure has no kind of its own.
            if io.to_string().contains("lookup address") {
                return Some("the host name does not resolve (DNS lookup failed)");
            }
        }
        source = err.source();
    }
    None
}

fn detail(e: &sqlx::Error) -> String {
    match e {
        sqlx::Error::Database(db) => match db.code() {
            Some(code) => format!("database error {code}: {}", db.message()),
            None => format!("database error: {}", db.message()),
        },
        // A configuration error may quote the URL it failed to parse.
        sqlx::Error::Configuration(_) => "invalid connection configuration".to_owned(),
        sqlx::Error::Tls(_) => "TLS error".to_owned(),
        sqlx::Error::PoolTimedOut => "timed out waiting for a pooled connection".to_owned(),
        sqlx::Error::PoolClosed => "the connection pool is closed".to_owned(),
        other => other.to_string(),
    }
}

#[cfg(feature = "postgres")]
/// The constraint a unique violation hit, if `e` is one.
pub(crate) fn unique_violation(e: &sqlx::Error) -> Option<&str> {
    match e {
        sqlx::Error::Database(db) if db.is_unique_violation() => {
            Some(db.constraint().unwrap_or(""))
        }
        _ => None,
    }
}

/// Commit `tx` when `outcome` is a success, roll it back (now, not
/// later on drop) when it is a failure.
pub(crate) async fn settle<DB: sqlx::Database, T>(
    tx: sqlx::Transaction<'static, DB>,
    op: &str,
    outcome: Result<T, StoreError>,
) -> Result<T, StoreError> {
    match outcome {
        Ok(value) => {
            tx.commit().await.map_err(|e| backend(op, &e))?;
            Ok(value)
        }
        Err(e) => {
            if let Err(rollback) = tx.rollback().await {
                tracing::warn!(op, error = %backend(op, &rollback), "rollback failed");
            }
            Err(e)
        }
    }
}

#[cfg(feature = "postgres")]
/// `message` with every occurrence of the connection string `url`, its
/// password, and the password's percent-decoded form replaced by `***`.
pub(crate) fn scrub(message: &str, url: &str) -> String {
    let mut out = message.replace(url, "***");
    let query_password = url
        .split_once('?')
        .and_then(|(_, q)| q.split('&').find_map(|kv| kv.strip_prefix("password=")));
    for password in url_password(url).into_iter().chain(query_password) {
        for secret in [password.to_owned(), percent_decode(password)] {
            if !secret.is_empty() {
                out = out.replace(&secret, "***");
            }
        }
    }
    out
}

#[cfg(feature = "postgres")]
/// The password part of `scheme://user:password@host…`, as written.
fn url_password(url: &str) -> Option<&str> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?']).next().unwrap_or(rest);
    let (userinfo, _) = authority.rsplit_once('@')?;
    let (_, password) = userinfo.split_once(':')?;
    Some(password)
}

#[cfg(feature = "postgres")]
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                let v = hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0);
                out.push(u8::try_from(v).unwrap_or(b'?'));
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(all(test, feature = "postgres"))]
mod tests {
    use super::*;

    #[test]
    fn scrub_removes_the_url_and_the_password_in_both_forms() {
        let url = "postgres://app:s3cr%40t@db.internal:5432/threads";
        let msg = format!("failed to connect to {url}: password s3cr@t rejected (s3cr%40t)");
        let out = scrub(&msg, url);
        assert!(!out.contains("s3cr"), "{out}");
        assert!(!out.contains("db.internal"), "{out}");
        let url = "postgres://h/db?user=app&password=hunter2";
        assert!(!scrub("auth failed for hunter2", url).contains("hunter2"));
    }

    #[test]
    fn url_password_handles_urls_without_one() {
        assert_eq!(url_password("postgres://app@h/db"), None);
        assert_eq!(url_password("postgres://h/db"), None);
        assert_eq!(url_password("postgres://a:b@h/db?x=@"), Some("b"));
    }
}

#[cfg(test)]
mod cause_tests {
    use std::borrow::Cow;

    use super::*;

    /// A database error with a SQLSTATE (PostgreSQL) or result code (SQLite).
    #[derive(Debug)]
    struct Coded(&'static str);

    impl std::fmt::Display for Coded {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "code {}", self.0)
        }
    }

    impl std::error::Error for Coded {}

    impl sqlx::error::DatabaseError for Coded {
        fn message(&self) -> &str {
            "the server's own words"
        }
        fn code(&self) -> Option<Cow<'_, str>> {
            Some(Cow::Borrowed(self.0))
        }
        fn as_error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
            self
        }
        fn as_error_mut(&mut self) -> &mut (dyn std::error::Error + Send + Sync + 'static) {
            self
        }
        fn into_error(self: Box<Self>) -> Box<dyn std::error::Error + Send + Sync + 'static> {
            self
        }
        fn kind(&self) -> sqlx::error::ErrorKind {
            sqlx::error::ErrorKind::Other
        }
    }

    fn coded(code: &'static str) -> String {
        describe(&sqlx::Error::Database(Box::new(Coded(code))))
    }

    #[test]
    fn root_causes_are_named() {
        assert!(coded("28P01").starts_with("authentication failed"));
        assert!(coded("28000").starts_with("authentication failed"));
        assert!(coded("3D000").starts_with("the database does not exist"));
        assert!(coded("14").starts_with("cannot open the SQLite file"));
        assert!(coded("26").starts_with("the file is not a SQLite database"));
        // Anything else keeps the database's own message and code.
        assert_eq!(
            coded("23505"),
            "database error 23505: the server's own words"
        );
        let refused = sqlx::Error::Io(std::io::ErrorKind::ConnectionRefused.into());
        assert!(describe(&refused).starts_with("connection refused"));
        let dns = sqlx::Error::Io(std::io::Error::other(
            "failed to lookup address information: Name or service not known",
        ));
        assert!(describe(&dns).starts_with("the host name does not resolve"));
    }
}
