//! The web chat's files, compiled into the binary: the page, its script
//! and style, the favicon, and the vendored markdown and highlighting
//! libraries (web/vendor/MANIFEST pins them; `scripts/vendor-web` checks
//! the copies). Nothing the page loads comes from anywhere else, which its
//! Content-Security-Policy enforces.

use axum::Router;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;

/// The web chat page.
pub const INDEX_HTML: &str = include_str!("web/index.html");

/// The page's policy: its own files only (no inline script), requests to
/// this server only, no framing.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

/// One file the page loads.
pub struct Asset {
    /// Its path on the server (a public `GET`).
    pub path: &'static str,
    content_type: &'static str,
    bytes: &'static [u8],
    /// The path names a pinned version: cached for a year.
    immutable: bool,
}

/// The page's files (the page itself is `/`).
pub const ASSETS: [Asset; 7] = [
    Asset {
        path: "/favicon.svg",
        content_type: "image/svg+xml",
        bytes: include_bytes!("web/favicon.svg"),
        immutable: false,
    },
    Asset {
        path: "/assets/app.js",
        content_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("web/app.js"),
        immutable: false,
    },
    Asset {
        path: "/assets/app.css",
        content_type: "text/css; charset=utf-8",
        bytes: include_bytes!("web/app.css"),
        immutable: false,
    },
    Asset {
        path: "/assets/vendor/marked-18.3.0.js",
        content_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("web/vendor/marked.umd.js"),
        immutable: true,
    },
    Asset {
        path: "/assets/vendor/marked-18.3.0.LICENSE.txt",
        content_type: "text/plain; charset=utf-8",
        bytes: include_bytes!("web/vendor/marked.LICENSE"),
        immutable: true,
    },
    Asset {
        path: "/assets/vendor/highlight-11.12.0.js",
        content_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("web/vendor/highlight.min.js"),
        immutable: true,
    },
    Asset {
        path: "/assets/vendor/highlight-11.12.0.LICENSE.txt",
        content_type: "text/plain; charset=utf-8",
        bytes: include_bytes!("web/vendor/highlight.LICENSE"),
        immutable: true,
    },
];

/// `GET /` and every [`ASSETS`] path.
pub(super) fn router<S: Clone + Send + Sync + 'static>() -> Router<S> {
    let mut router = Router::new().route("/", get(index));
    for asset in &ASSETS {
        router = router.route(asset.path, get(move || async move { file(asset) }));
    }
    router
}

async fn index() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
            (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::REFERRER_POLICY, "no-referrer"),
        ],
        INDEX_HTML,
    )
        .into_response()
}

fn file(asset: &'static Asset) -> Response {
    let cache = if asset.immutable {
        "public, max-age=31536000, immutable"
    } else {
        "no-cache"
    };
    (
        [
            (header::CONTENT_TYPE, asset.content_type),
            (header::CACHE_CONTROL, cache),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        asset.bytes,
    )
        .into_response()
}
