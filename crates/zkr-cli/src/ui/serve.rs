//! The web side of `zkr ui`: the page and its assets (built into the binary), the current
//! view as JSON, and the view then its patches as server-sent events. GET only: nothing here writes to
//! ZooKeeper. Without a token only loopback host names are answered (so that a web page
//! elsewhere cannot read it through DNS rebinding); with one, every data request carries it.

use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use futures::{Stream, StreamExt as _};
use subtle::ConstantTimeEq as _;
use tokio::sync::broadcast::error::RecvError;

use super::live::Live;

const PAGE: &str = include_str!("assets/index.html");
const SCRIPT: &str = include_str!("assets/app.js");
const STYLE: &str = include_str!("assets/app.css");
/// The tab's icon (without one, browsers ask for `/favicon.ico` and log its 404).
const ICON: &str = include_str!("assets/icon.svg");

/// What every request sees.
#[derive(Debug, Clone)]
pub(crate) struct Shared {
    live: Arc<Live>,
    token: Option<Arc<str>>,
}

impl Shared {
    pub(crate) fn new(live: Arc<Live>, token: Option<String>) -> Self {
        Shared { live, token: token.map(Into::into) }
    }
}

/// The routes, each behind the guard.
pub(crate) fn router(shared: Shared) -> Router {
    Router::new()
        .route("/", get(|| asset(PAGE, "text/html; charset=utf-8")))
        .route("/app.js", get(|| asset(SCRIPT, "text/javascript; charset=utf-8")))
        .route("/app.css", get(|| asset(STYLE, "text/css; charset=utf-8")))
        .route("/icon.svg", get(|| asset(ICON, "image/svg+xml")))
        .route("/api/view", get(current))
        .route("/events", get(events))
        .layer(middleware::from_fn_with_state(shared.clone(), guard))
        .with_state(shared)
}

/// A built-in asset, never cached (the binary may change under the same URL).
async fn asset(body: &'static str, content_type: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type), (header::CACHE_CONTROL, "no-store")], body).into_response()
}

/// The view now, as JSON.
async fn current(State(shared): State<Shared>) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json"), (header::CACHE_CONTROL, "no-store")],
        shared.live.view_json(),
    )
        .into_response()
}

/// The view now, then each change as a patch, until `zkr ui` stops. A page that falls too far
/// behind the patches gets the whole view again.
async fn events(State(shared): State<Shared>) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let (view, receiver) = shared.live.subscribe();
    let first = Event::default().event("view").data(view);
    let rest = futures::stream::unfold((receiver, shared.live), |(mut receiver, live)| async move {
        let event = match receiver.recv().await {
            Ok(message) => Event::default().event(message.event).data(&message.data),
            Err(RecvError::Lagged(_)) => {
                let (view, fresh) = live.subscribe();
                receiver = fresh;
                Event::default().event("view").data(view)
            }
            Err(RecvError::Closed) => return None,
        };
        Some((Ok(event), (receiver, live)))
    });
    Sse::new(futures::stream::once(async { Ok(first) }).chain(rest)).keep_alive(KeepAlive::default())
}

/// Refuses foreign host names when there is no token, and data requests without the token
/// when there is one; adds the security headers to every answer.
async fn guard(State(shared): State<Shared>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let refused = match &shared.token {
        None => (!loopback_host(headers))
            .then_some((StatusCode::FORBIDDEN, "zkr ui answers loopback host names only")),
        Some(token) => {
            let asset = matches!(request.uri().path(), "/" | "/app.js" | "/app.css" | "/icon.svg");
            let given = bearer(headers).map(str::to_owned).or_else(|| query_token(request.uri().query()));
            let good = given.is_some_and(|t| bool::from(t.as_bytes().ct_eq(token.as_bytes())));
            (!asset && !good).then_some((StatusCode::UNAUTHORIZED, "zkr ui needs its token"))
        }
    };
    let mut response = match refused {
        Some(refusal) => refusal.into_response(),
        None => next.run(request).await,
    };
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'self'; img-src 'self' data:; frame-ancestors 'none'"),
    );
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    response
}

/// Is the `Host` a loopback name (`localhost`, `127.x.x.x`, `[::1]`)?
fn loopback_host(headers: &HeaderMap) -> bool {
    let Some(host) = headers.get(header::HOST).and_then(|h| h.to_str().ok()) else { return false };
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    name.eq_ignore_ascii_case("localhost")
        || name.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// `Authorization: Bearer <token>`.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers.get(header::AUTHORIZATION)?.to_str().ok()?.strip_prefix("Bearer ")
}

/// `?token=<token>` (an `EventSource` cannot send headers).
fn query_token(query: Option<&str>) -> Option<String> {
    form_urlencoded::parse(query?.as_bytes()).find(|(k, _)| k == "token").map(|(_, v)| v.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, HeaderValue::from_str(value).unwrap());
        headers
    }

    #[test]
    fn only_loopback_host_names_pass() {
        for good in ["localhost:7070", "127.0.0.1:7070", "127.0.0.1", "[::1]:7070", "LOCALHOST"] {
            assert!(loopback_host(&host(good)), "{good}");
        }
        for bad in ["evil.example:7070", "10.0.0.1:7070", "localhost.evil.example", "[::2]:7070"] {
            assert!(!loopback_host(&host(bad)), "{bad}");
        }
        assert!(!loopback_host(&HeaderMap::new()));
    }

    #[test]
    fn the_token_comes_from_the_header_or_the_query() {
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer s3cret"));
        assert_eq!(bearer(&headers), Some("s3cret"));
        assert_eq!(query_token(Some("a=1&token=s%203")).as_deref(), Some("s 3"));
        assert_eq!(query_token(Some("a=1")), None);
    }
}
