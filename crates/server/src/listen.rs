//! The accept loop: each connection served by hyper's HTTP/1, with TCP_NODELAY and a bound on
//! how long a client may take to send a request's head (axum's own loop has none, so a client
//! that trickles a header a byte at a time would hold its connection for ever).
//!
//! A service holds a descriptor per client connection and, while a run streams, one per model
//! connection too: 1 000 concurrent streamed runs need over 2 000. Many systems start a process
//! with a soft open-files limit of 1 024 under a hard limit far above it, so [`serve`](crate::serve)
//! raises the soft limit to the hard one first ([`raise_open_files_limit`]), as Go's runtime does
//! for every program; past the hard limit an accept fails with `EMFILE`, which the loop below
//! logs and waits out rather than spinning.

use std::convert::Infallible;
use std::future::Future;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;

/// Serves `app` on every connection `listener` accepts until `stop` completes, each client
/// given `head_timeout` to send each request's head (its request line and headers); then stops
/// accepting and returns the connections still open, for the caller to shut down.
pub(crate) async fn accept(
    listener: TcpListener,
    app: Router,
    head_timeout: Duration,
    stop: impl Future<Output = ()>,
) -> GracefulShutdown {
    let connections = GracefulShutdown::new();
    tokio::pin!(stop);
    loop {
        let tcp = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((tcp, _)) => tcp,
                // The client gave up before it was accepted: nothing to do.
                Err(e) if is_connection_error(&e) => continue,
                // Out of file descriptors, or the like: accepting again at once would spin.
                Err(e) => {
                    tracing::error!(target: "toolsmith::server", %e, "accepting a connection");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            },
            () = &mut stop => break,
        };
        // Streams are written in small pieces: without TCP_NODELAY, Nagle's algorithm holds a
        // piece until the client's delayed ACK (~40 ms), which measured 44 ms a run against
        // 7 ms.
        let _ = tcp.set_nodelay(true);
        let app = app.clone();
        let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
            let mut app = app.clone();
            async move {
                let response: Result<_, Infallible> =
                    tower::Service::call(&mut app, request.map(Body::new)).await;
                response
            }
        });
        let connection = http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(head_timeout)
            .serve_connection(TokioIo::new(tcp), service);
        let connection = connections.watch(connection);
        tokio::spawn(async move {
            // A client that went away, or sent what is not HTTP: its connection ends.
            let _ = connection.await;
        });
    }
    connections
}

/// Raises this process's soft limit on open files (`RLIMIT_NOFILE`) to its hard limit. Returns
/// the soft limit before and after (`None`: unlimited). Errors only when the limit cannot be
/// read or set, which leaves it as it was.
pub(crate) fn raise_open_files_limit() -> std::io::Result<(Option<u64>, Option<u64>)> {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    let before = limit.current;
    if limit.current == limit.maximum {
        return Ok((before, before));
    }
    let raised = rustix::process::Rlimit {
        current: limit.maximum,
        maximum: limit.maximum,
    };
    setrlimit(Resource::Nofile, raised)?;
    Ok((before, limit.maximum))
}

/// Whether an accept error is the client's, not the listener's.
fn is_connection_error(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::ConnectionRefused
            | std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::ConnectionReset
    )
}
