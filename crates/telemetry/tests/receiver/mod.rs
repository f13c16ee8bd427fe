// Each test binary uses a part of the receiver.
#![allow(dead_code)]

//! A real OTLP/HTTP receiver for the tests: `POST /v1/traces` and `POST /v1/metrics`, the
//! protobuf bodies decoded with the official `opentelemetry-proto` types and kept.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::metrics::v1::Metric;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;

#[derive(Default)]
struct Received {
    traces: Vec<ExportTraceServiceRequest>,
    metrics: Vec<ExportMetricsServiceRequest>,
    /// Every body as it came, to look for text that must never be sent.
    raw: Vec<u8>,
    headers: Vec<HeaderMap>,
}

/// The receiver, listening until dropped with the test's runtime.
#[derive(Clone)]
pub struct Receiver {
    pub addr: SocketAddr,
    received: Arc<Mutex<Received>>,
}

impl Receiver {
    pub async fn start() -> Receiver {
        let received = Arc::new(Mutex::new(Received::default()));
        let app = Router::new()
            .route("/v1/traces", post(traces))
            .route("/v1/metrics", post(metrics))
            .with_state(received.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        Receiver { addr, received }
    }

    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every span received, with the service name of its resource.
    pub fn spans(&self) -> Vec<(String, Span)> {
        let received = self.received.lock().unwrap();
        let mut out = Vec::new();
        for request in &received.traces {
            for resource_spans in &request.resource_spans {
                let service = resource_spans
                    .resource
                    .as_ref()
                    .and_then(|r| string_attr(&r.attributes, "service.name"))
                    .unwrap_or_default();
                for scope in &resource_spans.scope_spans {
                    for span in &scope.spans {
                        out.push((service.clone(), span.clone()));
                    }
                }
            }
        }
        out
    }

    /// Every metric received.
    pub fn metrics(&self) -> Vec<Metric> {
        let received = self.received.lock().unwrap();
        received
            .metrics
            .iter()
            .flat_map(|r| &r.resource_metrics)
            .flat_map(|r| &r.scope_metrics)
            .flat_map(|s| s.metrics.clone())
            .collect()
    }

    pub fn raw(&self) -> Vec<u8> {
        self.received.lock().unwrap().raw.clone()
    }

    pub fn header(&self, name: &str) -> Option<String> {
        let received = self.received.lock().unwrap();
        received
            .headers
            .iter()
            .find_map(|h| h.get(name))
            .map(|v| v.to_str().unwrap().to_owned())
    }

    pub fn requests(&self) -> usize {
        let received = self.received.lock().unwrap();
        received.traces.len() + received.metrics.len()
    }
}

async fn traces(
    State(received): State<Arc<Mutex<Received>>>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let Ok(request) = ExportTraceServiceRequest::decode(body.clone()) else {
        return StatusCode::BAD_REQUEST;
    };
    let mut received = received.lock().unwrap();
    received.raw.extend_from_slice(&body);
    received.headers.push(headers);
    received.traces.push(request);
    StatusCode::OK
}

async fn metrics(
    State(received): State<Arc<Mutex<Received>>>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let Ok(request) = ExportMetricsServiceRequest::decode(body.clone()) else {
        return StatusCode::BAD_REQUEST;
    };
    let mut received = received.lock().unwrap();
    received.raw.extend_from_slice(&body);
    received.headers.push(headers);
    received.metrics.push(request);
    StatusCode::OK
}

pub fn attr<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a AnyValue> {
    attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
}

pub fn string_attr(attributes: &[KeyValue], key: &str) -> Option<String> {
    match attr(attributes, key)?.value.as_ref()? {
        any_value::Value::StringValue(s) => Some(s.clone()),
        _ => None,
    }
}

pub fn int_attr(attributes: &[KeyValue], key: &str) -> Option<i64> {
    match attr(attributes, key)?.value.as_ref()? {
        any_value::Value::IntValue(n) => Some(*n),
        _ => None,
    }
}
