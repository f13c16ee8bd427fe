//! The console's page, script and styles, embedded in the binary and served with the headers
//! that confine them (see the [module docs](super)).

use std::sync::OnceLock;

use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

/// Only the page's own script and styles, requests to this origin, no framing, no forms
/// posted elsewhere, no plugins.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
                   img-src 'self' data:; base-uri 'none'; form-action 'none'; \
                   frame-ancestors 'none'";

/// One embedded file: its bytes, type and entity tag.
struct Asset {
    body: &'static str,
    content_type: &'static str,
    etag: OnceLock<HeaderValue>,
}

impl Asset {
    const fn new(body: &'static str, content_type: &'static str) -> Self {
        Asset {
            body,
            content_type,
            etag: OnceLock::new(),
        }
    }

    /// The first 16 bytes of the body's SHA-256, quoted: a page changes with the binary.
    fn etag(&self) -> &HeaderValue {
        self.etag.get_or_init(|| {
            let digest = Sha256::digest(self.body.as_bytes());
            let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
            HeaderValue::from_str(&format!("\"{hex}\"")).expect("hex is a valid header value")
        })
    }

    /// The asset, or 304 when the client has this version.
    fn serve(&self, headers: &HeaderMap) -> Response {
        let etag = self.etag().clone();
        let fresh = headers
            .get(header::IF_NONE_MATCH)
            .is_some_and(|tags| tags.as_bytes() == etag.as_bytes());
        let mut response = if fresh {
            StatusCode::NOT_MODIFIED.into_response()
        } else {
            self.body.into_response()
        };
        let out = response.headers_mut();
        out.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(self.content_type),
        );
        out.insert(header::ETAG, etag);
        // Checked every time (an upgraded binary serves a new page at once), sent again only
        // when it changed.
        out.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        out.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CSP),
        );
        out.insert(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        );
        out.insert(
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        );
        out.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
        response
    }
}

static PAGE: Asset = Asset::new(
    include_str!("../../console/index.html"),
    "text/html; charset=utf-8",
);

/// A script module of the page.
const fn script(body: &'static str) -> Asset {
    Asset::new(body, "text/javascript; charset=utf-8")
}

/// The page's script modules and styles, by the name they are served under.
static ASSETS: [(&str, Asset); 6] = [
    (
        "console.js",
        script(include_str!("../../console/console.js")),
    ),
    ("dom.js", script(include_str!("../../console/dom.js"))),
    ("api.js", script(include_str!("../../console/api.js"))),
    (
        "transcript.js",
        script(include_str!("../../console/transcript.js")),
    ),
    ("live.js", script(include_str!("../../console/live.js"))),
    (
        "console.css",
        Asset::new(
            include_str!("../../console/console.css"),
            "text/css; charset=utf-8",
        ),
    ),
];

/// `GET /console`.
pub(crate) async fn page(headers: HeaderMap) -> Response {
    PAGE.serve(&headers)
}

/// `GET /console/assets/{name}`.
pub(crate) async fn asset(Path(name): Path<String>, headers: HeaderMap) -> Response {
    match ASSETS.iter().find(|(served, _)| *served == name) {
        Some((_, asset)) => asset.serve(&headers),
        None => crate::ApiError::not_found("Not found").into_response(),
    }
}
