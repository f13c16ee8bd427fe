//! OpenTelemetry export for toolsmith: turns the `tracing` spans its libraries emit into OTLP
//! traces and GenAI metrics, when the standard `OTEL_*` variables ask for it, and nothing else.
//!
//! The libraries emit plain `tracing` spans named per the OpenTelemetry GenAI semantic
//! conventions (`invoke_agent`, `chat`, `execute_tool`, with the dynamic name in `otel.name`).
//! The binary builds a [`Telemetry`] from the environment and adds its [`layer`](Telemetry::layer)
//! to its subscriber:
//!
//! - **Off** unless `OTEL_EXPORTER_OTLP_ENDPOINT` or a signal's own endpoint is set (and
//!   `OTEL_SDK_DISABLED` is not `true`): then the layer is `None` and the spans, disabled by the
//!   log filter, cost what they cost before.
//! - **On**, spans of the `toolsmith*` targets at `INFO` and above are exported in batches from
//!   a background thread over OTLP HTTP/protobuf, with the workspace's `reqwest`; the metrics
//!   of [`metrics`](crate#metrics) are derived from the same spans and exported periodically.
//!   A dead or slow collector never fails nor slows a run: exports happen off the run's path, a
//!   failure is logged once (see the client's contract) and the batch dropped.
//! - [`shutdown`](Telemetry::shutdown) exports what is left: call it on exit, SIGTERM included,
//!   from outside the runtime's workers while the runtime still runs.
//!
//! # Metrics
//!
//! `gen_ai.client.operation.duration` and `gen_ai.client.token.usage` by model (from `chat`
//! spans), `toolsmith.tool.duration` and `toolsmith.tool.errors` by tool (from `execute_tool`),
//! `toolsmith.runs` by outcome, paused runs included, and `toolsmith.tool.pending`, the async
//! tool calls paused runs left running (from `invoke_agent`).
//!
//! # Examples
//!
//! ```
//! use tracing_subscriber::layer::SubscriberExt;
//!
//! let runtime = tokio::runtime::Runtime::new().unwrap();
//! // No OTEL_* variable: export is off and the layer is `None`.
//! let telemetry = toolsmith_telemetry::Telemetry::from_vars(|_| None, runtime.handle()).unwrap();
//! assert!(!telemetry.is_enabled());
//! let subscriber = tracing_subscriber::registry().with(telemetry.layer());
//! tracing::subscriber::with_default(subscriber, || tracing::info!("not exported"));
//! telemetry.shutdown();
//! ```

mod client;
mod config;
mod metrics;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, RetryPolicy, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Subscriber;
use tracing::level_filters::LevelFilter;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::registry::LookupSpan;

pub use config::{ConfigError, DEFAULT_SERVICE_NAME, ExportConfig};

use client::ExportClient;

/// Why export could not start.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// The variables cannot be used.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The HTTP client or an exporter could not be built (an endpoint that is not a URL).
    #[error("OpenTelemetry export could not start: {0}")]
    Exporter(String),
}

/// The export's providers, or none when export is off.
#[derive(Debug, Default)]
pub struct Telemetry {
    traces: Option<SdkTracerProvider>,
    metrics: Option<SdkMeterProvider>,
}

impl Telemetry {
    /// Export off: no layer, nothing to shut down.
    pub fn off() -> Self {
        Telemetry::default()
    }

    /// Reads the standard variables from the process's environment
    /// ([`from_vars`](Self::from_vars)).
    ///
    /// # Errors
    ///
    /// As [`from_vars`](Self::from_vars).
    pub fn from_env(runtime: &tokio::runtime::Handle) -> Result<Self, TelemetryError> {
        Self::from_vars(|name| std::env::var(name).ok(), runtime)
    }

    /// Reads the variables through `var` ([`ExportConfig::from_vars`]) and starts the
    /// exporters, whose requests run on `runtime`.
    ///
    /// # Errors
    ///
    /// A [`TelemetryError`] when the variables ask for an export that cannot be made.
    pub fn from_vars(
        var: impl Fn(&str) -> Option<String>,
        runtime: &tokio::runtime::Handle,
    ) -> Result<Self, TelemetryError> {
        match ExportConfig::from_vars(var)? {
            None => Ok(Telemetry::off()),
            Some(config) => Self::from_config(&config, runtime),
        }
    }

    /// Starts the exporters `config` describes, and turns the recording of tool calls'
    /// arguments and results on or off as it says ([`toolsmith_core::layer::capture_content`]).
    ///
    /// # Errors
    ///
    /// [`TelemetryError::Exporter`] when an endpoint is not a URL.
    pub fn from_config(
        config: &ExportConfig,
        runtime: &tokio::runtime::Handle,
    ) -> Result<Self, TelemetryError> {
        let failed = |e: &dyn std::fmt::Display| TelemetryError::Exporter(e.to_string());
        let client = ExportClient::new(runtime.clone(), config.timeout).map_err(|e| failed(&e))?;
        let resource = Resource::builder_empty()
            .with_attributes(config.resource.clone())
            .build();
        let traces = match &config.traces_endpoint {
            None => None,
            Some(endpoint) => {
                let exporter = opentelemetry_otlp::SpanExporter::builder()
                    .with_http()
                    .with_protocol(Protocol::HttpBinary)
                    .with_endpoint(endpoint)
                    .with_timeout(config.timeout)
                    .with_headers(config.traces_headers.clone())
                    .with_retry_policy(RetryPolicy::disabled())
                    .with_http_client(client.clone())
                    .build()
                    .map_err(|e| failed(&e))?;
                Some(
                    SdkTracerProvider::builder()
                        .with_batch_exporter(exporter)
                        .with_resource(resource.clone())
                        .build(),
                )
            }
        };
        let metrics = match &config.metrics_endpoint {
            None => None,
            Some(endpoint) => {
                let exporter = opentelemetry_otlp::MetricExporter::builder()
                    .with_http()
                    .with_protocol(Protocol::HttpBinary)
                    .with_endpoint(endpoint)
                    .with_timeout(config.timeout)
                    .with_headers(config.metrics_headers.clone())
                    .with_retry_policy(RetryPolicy::disabled())
                    .with_http_client(client)
                    .build()
                    .map_err(|e| failed(&e))?;
                let reader = PeriodicReader::builder(exporter)
                    .with_interval(config.metrics_interval)
                    .build();
                Some(
                    SdkMeterProvider::builder()
                        .with_reader(reader)
                        .with_resource(resource)
                        .build(),
                )
            }
        };
        // The switch is the tracing layer's, process-wide: the spans it records are the ones
        // this export sends.
        toolsmith_core::layer::capture_content(config.capture_content && traces.is_some());
        Ok(Telemetry { traces, metrics })
    }

    /// Whether anything is exported.
    pub fn is_enabled(&self) -> bool {
        self.traces.is_some() || self.metrics.is_some()
    }

    /// The layer that exports toolsmith's spans and derives its metrics; `None` when export is
    /// off. It sees the `toolsmith*` targets at `INFO` and above, whatever the log filter, and
    /// never this crate's own warnings (an export failure must not feed the export).
    pub fn layer<S>(&self) -> Option<Box<dyn Layer<S> + Send + Sync + 'static>>
    where
        S: Subscriber + for<'a> LookupSpan<'a> + Send + Sync,
    {
        if !self.is_enabled() {
            return None;
        }
        let targets = || {
            Targets::new()
                .with_target("toolsmith", LevelFilter::INFO)
                .with_target("toolsmith_telemetry", LevelFilter::OFF)
        };
        // A vector, not `Option`s: an absent layer must not count as one that wants nothing
        // (a `None` layer's level hint is `OFF`, which would silence the other).
        let mut layers: Vec<Box<dyn Layer<S> + Send + Sync + 'static>> = Vec::new();
        if let Some(provider) = &self.traces {
            layers.push(
                tracing_opentelemetry::layer()
                    .with_tracer(provider.tracer("toolsmith"))
                    .with_filter(targets())
                    .boxed(),
            );
        }
        if let Some(provider) = &self.metrics {
            let meter = opentelemetry::metrics::MeterProvider::meter(provider, "toolsmith");
            layers.push(
                metrics::SpanMetrics::new(&meter)
                    .with_filter(targets())
                    .boxed(),
            );
        }
        Some(layers.boxed())
    }

    /// Exports what is left and stops the exporters. Blocks until done (each export within the
    /// timeout): call it from outside the runtime's worker threads, while the runtime runs.
    pub fn shutdown(self) {
        // Errors are the client's, already logged once; nothing is left to do with them.
        if let Some(traces) = self.traces {
            let _ = traces.shutdown();
        }
        if let Some(metrics) = self.metrics {
            let _ = metrics.shutdown();
        }
    }
}
