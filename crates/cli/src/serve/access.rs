//! Who may use `agent-adaptor serve`: the token, the guard in front of
//! every route, and the one URL that carries the token.

use std::net::SocketAddr;

use agent_adaptor_bridges::guard::{Guard, Token};

use crate::args::ServeArgs;
use crate::error::CliError;

/// The environment variable `serve` takes its token from.
pub const TOKEN_ENV: &str = "AGENT_ADAPTOR_TOKEN";

/// The paths that start runs (counted per client).
pub const RUN_PATHS: [&str; 3] = ["/agui", "/sse", "/a2a"];

/// The guard and the token it checks (`None` with `--no-auth`).
pub struct Access {
    /// The guard to put in front of every route.
    pub guard: Guard,
    /// The token, printed once in the start URL.
    pub token: Option<Token>,
}

impl Access {
    /// From the command line: `--token`, else `AGENT_ADAPTOR_TOKEN`, else a
    /// random token; `--no-auth` only on a loopback address.
    pub fn from_args(args: &ServeArgs, local: SocketAddr) -> Result<Self, CliError> {
        let builder = if args.no_auth {
            if !local.ip().is_loopback() {
                return Err(CliError::usage(format!(
                    "--no-auth is only allowed on a loopback address, not {local}: anyone who \
                     reaches {local} could run prompts as you"
                )));
            }
            eprintln!(
                "agent-adaptor serve: WARNING: --no-auth: every local user and process (and \
                 any web page that gets a request through) can run prompts and answer \
                 approvals on {local}"
            );
            Guard::open()
        } else {
            let given = args
                .token
                .clone()
                .or_else(|| std::env::var(TOKEN_ENV).ok().filter(|t| !t.is_empty()));
            let token = match given {
                Some(t) => Token::new(t).map_err(|e| CliError::usage(format!("--token: {e}")))?,
                None => Token::generate(),
            };
            return Ok(Access {
                guard: configure(Guard::token(token.clone()), args, local).build(),
                token: Some(token),
            });
        };
        Ok(Access {
            guard: configure(builder, args, local).build(),
            token: None,
        })
    }

    /// The URL to open: the page, with the token in its fragment (the page
    /// trades it for a session cookie; a fragment is never sent to a server).
    pub fn start_url(&self, local: SocketAddr) -> String {
        match &self.token {
            Some(t) => format!("http://{local}/#token={}", t.expose()),
            None => format!("http://{local}/"),
        }
    }
}

fn configure(
    mut b: agent_adaptor_bridges::guard::GuardBuilder,
    args: &ServeArgs,
    local: SocketAddr,
) -> agent_adaptor_bridges::guard::GuardBuilder {
    if !local.ip().is_unspecified() {
        b = b.allow_host(local.ip().to_string());
    }
    for h in &args.allowed_hosts {
        b = b.allow_host(h);
    }
    for o in &args.allowed_origins {
        b = b.allow_origin(o);
    }
    // The page and its static files carry nothing private: the page
    // loads them before it has traded the token for its session cookie.
    for asset in &super::assets::ASSETS {
        b = b.public_get(asset.path);
    }
    b.public_get("/")
        .public_get("/.well-known/agent-card.json")
        .limit_runs(RUN_PATHS, args.max_runs_per_client)
}
