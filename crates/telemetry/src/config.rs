//! The export's settings, read from the standard OpenTelemetry variables.
//!
//! Export is on when `OTEL_EXPORTER_OTLP_ENDPOINT` or a signal's own endpoint
//! (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`) is set, and
//! `OTEL_SDK_DISABLED` is not `true`. The base endpoint gets the signal's path (`v1/traces`,
//! `v1/metrics`) appended; a signal's own endpoint is used as it is. `OTEL_TRACES_EXPORTER` or
//! `OTEL_METRICS_EXPORTER` set to `none` turns that signal off.

use std::collections::HashMap;
use std::time::Duration;

use opentelemetry::KeyValue;

/// The default `service.name`, when neither `OTEL_SERVICE_NAME` nor `OTEL_RESOURCE_ATTRIBUTES`
/// names the service.
pub const DEFAULT_SERVICE_NAME: &str = "toolsmith";

/// Why the variables do not describe an export toolsmith can make.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A protocol other than `http/protobuf` (`grpc`, `http/json`).
    #[error(
        "{variable}={value} is not supported: toolsmith exports OTLP over http/protobuf only; set it to http/protobuf or unset it"
    )]
    UnsupportedProtocol {
        /// The variable that names it.
        variable: &'static str,
        /// Its value.
        value: String,
    },
    /// A header that is not `key=value`.
    #[error("{variable} has an entry that is not key=value (entry {index})")]
    BadHeader {
        /// The variable.
        variable: &'static str,
        /// The entry's position, from 1 (its text may be a secret: not repeated).
        index: usize,
    },
    /// A number that is not one.
    #[error("{variable}={value} is not a whole number of milliseconds")]
    BadNumber {
        /// The variable.
        variable: &'static str,
        /// Its value.
        value: String,
    },
}

/// Where and how to export, when the variables turn export on.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportConfig {
    /// The traces' URL, unless traces are off.
    pub traces_endpoint: Option<String>,
    /// The metrics' URL, unless metrics are off.
    pub metrics_endpoint: Option<String>,
    /// Headers sent with every export (`OTEL_EXPORTER_OTLP_HEADERS`, then the signal's own).
    pub traces_headers: HashMap<String, String>,
    /// Headers of the metrics' exports.
    pub metrics_headers: HashMap<String, String>,
    /// How long one export may take (`OTEL_EXPORTER_OTLP_TIMEOUT`, default 10 s).
    pub timeout: Duration,
    /// How often metrics are exported (`OTEL_METRIC_EXPORT_INTERVAL`, default 60 s).
    pub metrics_interval: Duration,
    /// The resource: `service.name` and `OTEL_RESOURCE_ATTRIBUTES`.
    pub resource: Vec<KeyValue>,
    /// Whether tool calls' arguments and results are recorded, secrets masked
    /// (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`; off by default).
    pub capture_content: bool,
}

impl ExportConfig {
    /// Reads the variables through `var` (`std::env::var` in the binary); `Ok(None)` when
    /// export is off.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] when export is on but a variable cannot be used.
    ///
    /// # Examples
    ///
    /// ```
    /// use toolsmith_telemetry::ExportConfig;
    ///
    /// let vars = [("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318")];
    /// let get = |name: &str| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string());
    /// let config = ExportConfig::from_vars(get).unwrap().unwrap();
    /// assert_eq!(config.traces_endpoint.as_deref(), Some("http://collector:4318/v1/traces"));
    /// assert!(ExportConfig::from_vars(|_| None).unwrap().is_none());
    /// ```
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Option<Self>, ConfigError> {
        let var = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        if var("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
            return Ok(None);
        }
        let base = var("OTEL_EXPORTER_OTLP_ENDPOINT");
        let signal = |own: &str, off: &str, path: &str| -> Option<String> {
            if var(off).is_some_and(|v| v.trim().eq_ignore_ascii_case("none")) {
                return None;
            }
            var(own).or_else(|| {
                base.as_deref()
                    .map(|b| format!("{}/{path}", b.trim_end_matches('/')))
            })
        };
        let traces_endpoint = signal(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "OTEL_TRACES_EXPORTER",
            "v1/traces",
        );
        let metrics_endpoint = signal(
            "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
            "OTEL_METRICS_EXPORTER",
            "v1/metrics",
        );
        if traces_endpoint.is_none() && metrics_endpoint.is_none() {
            return Ok(None);
        }
        for variable in [
            "OTEL_EXPORTER_OTLP_PROTOCOL",
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
            "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
        ] {
            if let Some(value) = var(variable)
                && value.trim() != "http/protobuf"
            {
                return Err(ConfigError::UnsupportedProtocol { variable, value });
            }
        }
        let mut traces_headers = headers(&var, "OTEL_EXPORTER_OTLP_HEADERS")?;
        let mut metrics_headers = traces_headers.clone();
        traces_headers.extend(headers(&var, "OTEL_EXPORTER_OTLP_TRACES_HEADERS")?);
        metrics_headers.extend(headers(&var, "OTEL_EXPORTER_OTLP_METRICS_HEADERS")?);
        Ok(Some(ExportConfig {
            traces_endpoint,
            metrics_endpoint,
            traces_headers,
            metrics_headers,
            timeout: millis(&var, "OTEL_EXPORTER_OTLP_TIMEOUT", 10_000)?,
            metrics_interval: millis(&var, "OTEL_METRIC_EXPORT_INTERVAL", 60_000)?,
            resource: resource(&var),
            capture_content: var("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
                .is_some_and(|v| v.trim().eq_ignore_ascii_case("true")),
        }))
    }
}

/// `key=value` pairs separated by commas, percent-decoded (the W3C Baggage format the
/// specification names).
fn headers(
    var: &impl Fn(&str) -> Option<String>,
    variable: &'static str,
) -> Result<HashMap<String, String>, ConfigError> {
    let mut out = HashMap::new();
    let Some(text) = var(variable) else {
        return Ok(out);
    };
    for (index, entry) in text.split(',').enumerate() {
        if entry.trim().is_empty() {
            continue;
        }
        let (key, value) = entry
            .split_once('=')
            .filter(|(k, _)| !k.trim().is_empty())
            .ok_or(ConfigError::BadHeader {
                variable,
                index: index + 1,
            })?;
        out.insert(percent_decode(key.trim()), percent_decode(value.trim()));
    }
    Ok(out)
}

fn millis(
    var: &impl Fn(&str) -> Option<String>,
    variable: &'static str,
    default: u64,
) -> Result<Duration, ConfigError> {
    match var(variable) {
        None => Ok(Duration::from_millis(default)),
        Some(value) => value
            .trim()
            .parse()
            .map(Duration::from_millis)
            .map_err(|_| ConfigError::BadNumber { variable, value }),
    }
}

/// `OTEL_RESOURCE_ATTRIBUTES`, with `service.name` from `OTEL_SERVICE_NAME` first, then from
/// the attributes, then [`DEFAULT_SERVICE_NAME`].
fn resource(var: &impl Fn(&str) -> Option<String>) -> Vec<KeyValue> {
    let mut attributes: Vec<(String, String)> = var("OTEL_RESOURCE_ATTRIBUTES")
        .map(|text| {
            text.split(',')
                .filter_map(|entry| entry.split_once('='))
                .filter(|(k, _)| !k.trim().is_empty())
                .map(|(k, v)| (percent_decode(k.trim()), percent_decode(v.trim())))
                .collect()
        })
        .unwrap_or_default();
    let named = var("OTEL_SERVICE_NAME").or_else(|| {
        attributes
            .iter()
            .find(|(k, _)| k == "service.name")
            .map(|(_, v)| v.clone())
    });
    attributes.retain(|(k, _)| k != "service.name");
    let mut out = vec![KeyValue::new(
        "service.name",
        named.unwrap_or_else(|| DEFAULT_SERVICE_NAME.to_owned()),
    )];
    out.extend(attributes.into_iter().map(|(k, v)| KeyValue::new(k, v)));
    out
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(vars: &[(&str, &str)]) -> Result<Option<ExportConfig>, ConfigError> {
        ExportConfig::from_vars(|name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn signal_endpoints_win_over_the_base_and_none_turns_a_signal_off() {
        let c = config(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/"),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t:1/custom"),
            ("OTEL_METRICS_EXPORTER", "none"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(c.traces_endpoint.as_deref(), Some("http://t:1/custom"));
        assert_eq!(c.metrics_endpoint, None);
        let c = config(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/")])
            .unwrap()
            .unwrap();
        assert_eq!(
            c.metrics_endpoint.as_deref(),
            Some("http://c:4318/v1/metrics")
        );
    }

    #[test]
    fn disabled_sdk_or_no_endpoint_is_off() {
        assert_eq!(config(&[]).unwrap(), None);
        assert_eq!(
            config(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
                ("OTEL_SDK_DISABLED", "TRUE"),
            ])
            .unwrap(),
            None
        );
    }

    #[test]
    fn grpc_is_refused_with_the_variable_named() {
        let e = config(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ])
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported: toolsmith exports OTLP over http/protobuf only; set it to http/protobuf or unset it"
        );
    }

    #[test]
    fn headers_and_resource_are_decoded_and_the_service_named() {
        let c = config(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "authorization=Bearer%20abc, x-a = 1",
            ),
            ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-a=2"),
            (
                "OTEL_RESOURCE_ATTRIBUTES",
                "service.name=ignored,deployment.environment=prod",
            ),
            ("OTEL_SERVICE_NAME", "agents"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(c.traces_headers["authorization"], "Bearer abc");
        assert_eq!(c.traces_headers["x-a"], "2");
        assert_eq!(c.metrics_headers["x-a"], "1");
        assert_eq!(
            c.resource,
            vec![
                KeyValue::new("service.name", "agents"),
                KeyValue::new("deployment.environment", "prod"),
            ]
        );
        let bad = config(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "a=1,secret-without-equals"),
        ])
        .unwrap_err();
        assert_eq!(
            bad.to_string(),
            "OTEL_EXPORTER_OTLP_HEADERS has an entry that is not key=value (entry 2)"
        );
    }
}
