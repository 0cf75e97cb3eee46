//! Bridges from an agent-adaptor [`Runner`](agent_adaptor_core::Runner) to
//! the web.
//!
//! * [`agui`]: AG-UI 1.0 events over SSE (and a raw SSE mode).
//! * [`a2a`]: an A2A 1.0 JSON-RPC server and client.
//! * [`acp`]: an Agent Client Protocol (v1) server on any byte stream
//!   (`agent-adaptor acp` serves it on stdio).
//! * [`guard`]: authentication, Host/Origin checks and per-client run
//!   limits in front of them; [`Principal`]: who a request comes from.
//! * [`http`]: the hardened HTTP/1.1 serve loop the servers run on.

pub mod a2a;
pub mod acp;
pub mod agui;
pub mod desk;
pub mod guard;
pub mod http;
mod observation_json;
mod principal;
mod public_error;
mod secret;
mod shutdown;

pub use principal::Principal;
pub use shutdown::ShutdownReport;
