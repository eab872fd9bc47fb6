//! `telemetry` — boxmaker's OpenTelemetry exporter (docs/spec.md §8): the process
//! `boxmaker __telemetry`, which the gate's host starts when the standard `OTEL_*` variables
//! ask for an export, reads the gate's call records ([`proto::telemetry`]) from its stdin and
//! sends them as spans and metrics over OTLP/HTTP (protobuf), with the `opentelemetry` SDK.
//!
//! **Owns:** the SDK's providers (the resource, the sampler, the batch span processor, the
//! periodic metric reader, all configured from `OTEL_*` by the SDK's own rules), the
//! instruments, and one HTTP client ([`http`]) on the hyper and rustls the rest of boxmaker
//! uses.
//!
//! **Must never:** send anything but what a record holds — labels, decisions, names the
//! operator's config gave, times (the record types have no field for an argument, a
//! result, a secret or a file); open anything but the OTLP endpoints; hold up the gate (it
//! reads a pipe the gate writes without waiting); run when nothing asks for an export
//! ([`wanted`]).
//!
//! Reading order: [`wanted`], [`serve`], [`spans`] (a record as spans), [`http`].
#![forbid(unsafe_code)]

pub mod http;
pub mod spans;

use std::io::Read;
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;
use proto::FrameError;
use proto::telemetry::read_record;

/// The variables that name an OTLP endpoint: without one of them nothing is exported and no
/// exporter runs.
pub const ENDPOINT_VARS: [&str; 3] = [
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
];

/// Why the exporter could not start.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    #[error("cannot start the telemetry exporter's runtime: {0}")]
    Runtime(#[source] std::io::Error),
    #[error(
        "cannot build the OTLP {signal} exporter: {detail} (check the OTEL_EXPORTER_OTLP_* variables)"
    )]
    Exporter {
        signal: &'static str,
        detail: String,
    },
    #[error("the gate sent a record the exporter cannot read: {0}")]
    Record(#[source] FrameError),
}

/// What the environment asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Wanted {
    pub traces: bool,
    pub metrics: bool,
}

impl Wanted {
    /// Anything at all.
    pub fn any(self) -> bool {
        self.traces || self.metrics
    }
}

/// What the standard variables in `env` ask for: traces where `OTEL_EXPORTER_OTLP_ENDPOINT`
/// or `…_TRACES_ENDPOINT` is set (and `OTEL_TRACES_EXPORTER` is not `none`), metrics likewise;
/// nothing with `OTEL_SDK_DISABLED=true`. Off by default.
pub fn wanted_in(env: &dyn Fn(&str) -> Option<String>) -> Wanted {
    let set = |k: &str| env(k).is_some_and(|v| !v.trim().is_empty());
    let not_none = |k: &str| env(k).is_none_or(|v| !v.trim().eq_ignore_ascii_case("none"));
    if env("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
        return Wanted::default();
    }
    let base = set("OTEL_EXPORTER_OTLP_ENDPOINT");
    Wanted {
        traces: (base || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
            && not_none("OTEL_TRACES_EXPORTER"),
        metrics: (base || set("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"))
            && not_none("OTEL_METRICS_EXPORTER"),
    }
}

/// [`wanted_in`] this process's environment.
pub fn wanted() -> Wanted {
    wanted_in(&|k| std::env::var(k).ok())
}

/// The resource every span and metric carries: what the SDK reads (`OTEL_SERVICE_NAME`,
/// `OTEL_RESOURCE_ATTRIBUTES`), `service.name` = `boxmaker` when neither names one,
/// `service.version`, and a `service.instance.id` of this exporter's own (random) when
/// `OTEL_RESOURCE_ATTRIBUTES` gives none, so the replicas behind one load balancer are
/// told apart.
pub fn resource() -> Resource {
    let attrs = std::env::var("OTEL_RESOURCE_ATTRIBUTES").unwrap_or_default();
    let names = |key: &str| {
        attrs
            .split(',')
            .any(|kv| kv.split('=').next().is_some_and(|k| k.trim() == key))
    };
    let mut b = Resource::builder();
    if std::env::var_os("OTEL_SERVICE_NAME").is_none() && !names("service.name") {
        b = b.with_service_name("boxmaker");
    }
    if !names("service.instance.id") {
        b = b.with_attribute(KeyValue::new("service.instance.id", instance_id()));
    }
    if !names("service.version") {
        b = b.with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")));
    }
    b.build()
}

/// 128 random bits as hex (the process id if the system has no randomness to give).
fn instance_id() -> String {
    let mut b = [0u8; 16];
    if getrandom::fill(&mut b).is_err() {
        return format!("pid-{}", std::process::id());
    }
    proto::telemetry::hex(&b)
}

/// The SDK's providers, built from the environment.
pub struct Exporter {
    traces: Option<SdkTracerProvider>,
    metrics: Option<SdkMeterProvider>,
    spans: spans::Spans,
    // Drives the HTTP client; dropped last.
    _runtime: tokio::runtime::Runtime,
}

impl std::fmt::Debug for Exporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exporter")
            .field("traces", &self.traces.is_some())
            .field("metrics", &self.metrics.is_some())
            .finish_non_exhaustive()
    }
}

impl Exporter {
    /// The exporters `wanted` asks for, configured by the SDK from `OTEL_*` (endpoint,
    /// headers, timeout, sampler, batch and export intervals).
    pub fn start(wanted: Wanted) -> Result<Exporter, TelemetryError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("otlp-http")
            .enable_all()
            .build()
            .map_err(TelemetryError::Runtime)?;
        let client = http::Client::new(runtime.handle().clone());
        let resource = resource();
        let traces = if wanted.traces {
            let exporter = opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
                .with_http_client(client.clone())
                .build()
                .map_err(|e| TelemetryError::Exporter {
                    signal: "traces",
                    detail: e.to_string(),
                })?;
            Some(
                SdkTracerProvider::builder()
                    .with_batch_exporter(exporter)
                    .with_resource(resource.clone())
                    .build(),
            )
        } else {
            None
        };
        let metrics = if wanted.metrics {
            let exporter = opentelemetry_otlp::MetricExporter::builder()
                .with_http()
                .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
                .with_http_client(client)
                .build()
                .map_err(|e| TelemetryError::Exporter {
                    signal: "metrics",
                    detail: e.to_string(),
                })?;
            Some(
                SdkMeterProvider::builder()
                    .with_periodic_exporter(exporter)
                    .with_resource(resource)
                    .build(),
            )
        } else {
            None
        };
        let tracer = traces.as_ref().map(|p| p.tracer("boxmaker"));
        let meter = metrics.as_ref().map(|p| {
            use opentelemetry::metrics::MeterProvider as _;
            p.meter("boxmaker")
        });
        Ok(Exporter {
            traces,
            metrics,
            spans: spans::Spans::new(tracer, meter),
            _runtime: runtime,
        })
    }

    /// Takes one record.
    pub fn record(&self, item: proto::telemetry::Item) {
        self.spans.record(item);
    }

    /// Sends what is waiting and stops, within `wait` per provider.
    pub fn shutdown(self, wait: Duration) {
        if let Some(p) = &self.traces {
            let _ = p.force_flush();
            let _ = p.shutdown_with_timeout(wait);
        }
        if let Some(p) = &self.metrics {
            let _ = p.force_flush();
            let _ = p.shutdown_with_timeout(wait);
        }
    }
}

/// The exporter process: records from `input` (the gate's pipe) until it closes, then a
/// last flush. A record it cannot read ends it (the gate sends only well-formed ones).
pub fn serve<R: Read>(mut input: R) -> Result<(), TelemetryError> {
    let wanted = wanted();
    if !wanted.any() {
        // Started by mistake: read nothing, export nothing.
        return Ok(());
    }
    let exporter = Exporter::start(wanted)?;
    let result = loop {
        match read_record(&mut input) {
            Ok(rec) => exporter.record(rec.item),
            Err(FrameError::Closed) => break Ok(()),
            Err(e) => break Err(TelemetryError::Record(e)),
        }
    };
    exporter.shutdown(Duration::from_secs(5));
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn nothing_is_wanted_without_an_endpoint() {
        assert!(!wanted_in(&env(&[])).any());
        assert!(!wanted_in(&env(&[("OTEL_SERVICE_NAME", "x")])).any());
        assert!(!wanted_in(&env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "  ")])).any());
    }

    #[test]
    fn an_endpoint_turns_on_what_it_names_and_none_or_disabled_turns_it_off() {
        let both = wanted_in(&env(&[(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "http://127.0.0.1:4318",
        )]));
        assert_eq!(
            both,
            Wanted {
                traces: true,
                metrics: true
            }
        );
        let traces = wanted_in(&env(&[(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "http://127.0.0.1:4318/v1/traces",
        )]));
        assert_eq!(
            traces,
            Wanted {
                traces: true,
                metrics: false
            }
        );
        let no_metrics = wanted_in(&env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
            ("OTEL_METRICS_EXPORTER", "none"),
        ]));
        assert!(no_metrics.traces && !no_metrics.metrics);
        let off = wanted_in(&env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
            ("OTEL_SDK_DISABLED", "true"),
        ]));
        assert!(!off.any());
    }
}
