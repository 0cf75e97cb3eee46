//! Auth on, as `agent-adaptor serve` has it: every server the official
//! clients talk to sits behind a [`Guard`] that wants a bearer token (the
//! A2A card public), and the A2A card declares the scheme, so the clients
//! are proven to work with auth on — and to be refused without it.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use agent_adaptor_bridges::a2a::{AGENT_CARD_PATH, AgentCard};
use agent_adaptor_bridges::guard::{Guard, Token};

/// A fresh random server token.
pub fn token() -> Token {
    Token::generate()
}

/// The guard of `serve`: Host/Origin checks, `token` required, the A2A
/// card public.
pub fn guard(token: &Token) -> Guard {
    Guard::token(token.clone())
        .public_get(AGENT_CARD_PATH)
        .build()
}

/// The `Authorization` header value for `token`.
pub fn bearer(token: &Token) -> String {
    format!("Bearer {}", token.expose())
}

/// Declare the bearer scheme on an A2A card, as `serve` does.
pub fn declare_bearer(card: &mut AgentCard) {
    card.declare_bearer(None);
}
