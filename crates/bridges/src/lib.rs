//! Bridges from an agent-adaptor [`Runner`](agent_adaptor_core::Runner) to
//! the web.
//!
//! * [`agui`]: AG-UI 1.0 events over SSE (and a raw SSE mode).
//! * [`a2a`]: an A2A 1.0 JSON-RPC server and client.
//! * [`http`]: the hardened HTTP/1.1 serve loop the servers run on.

pub mod a2a;
pub mod agui;
pub mod http;
mod shutdown;

pub use shutdown::ShutdownReport;
