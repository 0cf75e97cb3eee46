//! Requests as the mock server received them, and the routing shared by the
//! server and [`RecordedRequest::protocol`].

use bytes::Bytes;

use super::Protocol;
use super::conversation::{Conversation, conversation};

/// One HTTP request the mock server received (every request is recorded,
/// unknown paths and malformed bodies included).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedRequest {
    /// The HTTP method, e.g. `POST`.
    pub method: String,
    /// The path without the query, e.g. `/v1/messages`.
    pub path: String,
    /// The raw query string without `?`, e.g. `beta=true`.
    pub query: Option<String>,
    /// Headers in the order received; names are lowercase, values decoded
    /// lossily as UTF-8.
    pub headers: Vec<(String, String)>,
    /// The request body exactly as received.
    pub body: Bytes,
}

impl RecordedRequest {
    /// The body parsed as JSON; `None` when it is empty or not JSON.
    pub fn json(&self) -> Option<serde_json::Value> {
        serde_json::from_slice(&self.body).ok()
    }

    /// Which model protocol the request's path belongs to; `None` for other
    /// paths (model listings, unknown paths).
    pub fn protocol(&self) -> Option<Protocol> {
        match route(&self.method, &self.path) {
            Route::Model(protocol, _) => Some(protocol),
            Route::CountTokens(protocol) => Some(protocol),
            Route::GeminiModel(_) | Route::ListModels | Route::NotFound => None,
        }
    }

    /// The first header with this (case-insensitive) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// The conversation of a model request (first user text and assistant
    /// turns), as the script sees it.
    pub fn conversation(&self) -> Option<Conversation> {
        let protocol = self.protocol()?;
        conversation(protocol, &self.json()?)
    }
}

/// How a Gemini model method was called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Streaming {
    /// Decided by the request body's `stream` field.
    ByBody,
    /// Gemini `:streamGenerateContent`.
    Stream,
    /// Gemini `:generateContent`.
    NoStream,
}

/// What the server does with a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Route {
    /// A model call.
    Model(Protocol, Streaming),
    /// A token count.
    CountTokens(Protocol),
    /// `GET /v1beta/models/{model}`: model metadata.
    GeminiModel(String),
    /// `GET /v1/models`, `/models`, `/v1beta/models`: a model listing.
    ListModels,
    /// Anything else.
    NotFound,
}

/// The Gemini model name and method in `/v1beta/models/{model}:{method}`.
pub(crate) fn gemini_model_and_method(path: &str) -> Option<(&str, Option<&str>)> {
    let rest = path
        .strip_prefix("/v1beta/models/")
        .or_else(|| path.strip_prefix("/v1/models/"))
        .or_else(|| path.strip_prefix("/v1alpha/models/"))?;
    match rest.split_once(':') {
        Some((model, method)) => Some((model, Some(method))),
        None => Some((rest, None)),
    }
}

pub(crate) fn route(method: &str, path: &str) -> Route {
    let path = if path.len() > 1 {
        path.trim_end_matches('/')
    } else {
        path
    };
    let post = method.eq_ignore_ascii_case("POST");
    let get = method.eq_ignore_ascii_case("GET");
    match path {
        "/v1/responses" | "/responses" if post => {
            return Route::Model(Protocol::Responses, Streaming::ByBody);
        }
        "/v1/chat/completions" | "/chat/completions" if post => {
            return Route::Model(Protocol::ChatCompletions, Streaming::ByBody);
        }
        "/v1/messages" if post => {
            return Route::Model(Protocol::AnthropicMessages, Streaming::ByBody);
        }
        "/v1/messages/count_tokens" if post => {
            return Route::CountTokens(Protocol::AnthropicMessages);
        }
        "/v1/models" | "/models" | "/v1beta/models" if get => return Route::ListModels,
        _ => {}
    }
    match gemini_model_and_method(path) {
        Some((model, Some(method_name))) if post && !model.is_empty() => match method_name {
            "streamGenerateContent" => Route::Model(Protocol::Gemini, Streaming::Stream),
            "generateContent" => Route::Model(Protocol::Gemini, Streaming::NoStream),
            "countTokens" => Route::CountTokens(Protocol::Gemini),
            _ => Route::NotFound,
        },
        Some((model, None)) if get && !model.is_empty() => Route::GeminiModel(model.to_owned()),
        _ => Route::NotFound,
    }
}
