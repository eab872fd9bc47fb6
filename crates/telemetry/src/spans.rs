//! A call record as spans and metrics (docs/spec.md §8).
//!
//! ```text
//! client's span (its traceparent, when it sent one)
//! └─ tools/call TOOL              the call, request to final answer (kind: server); TOOL
//!                                 only for a tool the gate knows (docs/spec.md §8)
//!    ├─ approval wait             while a person decided (when the call asked)
//!    ├─ tool run                  the runner, from the call sent to its answer
//!    │  └─ box start              each box started for the call (run, file, server)
//!    └─ events: egress            each connection a box asked for (host only if allowed)
//! ```
//!
//! Every attribute is taken from a field of [`CallTrace`], by name, here: nothing else
//! reaches the SDK.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use opentelemetry::metrics::{Counter, Gauge, Histogram, Meter};
use opentelemetry::trace::{
    Span as _, SpanContext, SpanId, SpanKind, Status, TraceContextExt, TraceFlags, TraceId,
    TraceState, Tracer as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::SdkTracer;
use proto::DataClass;
use proto::telemetry::{CallStatus, CallTrace, Item, Taint, TraceParent};

/// The tracer and instruments records go to (either may be off).
pub struct Spans {
    tracer: Option<SdkTracer>,
    meters: Option<Instruments>,
}

impl std::fmt::Debug for Spans {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spans")
            .field("tracer", &self.tracer.is_some())
            .field("meters", &self.meters.is_some())
            .finish()
    }
}

struct Instruments {
    calls: Counter<u64>,
    call_duration: Histogram<f64>,
    pending: Gauge<u64>,
    approval_wait: Histogram<f64>,
    taint_raises: Counter<u64>,
    box_starts: Counter<u64>,
    box_start_duration: Histogram<f64>,
}

impl Instruments {
    fn new(m: &Meter) -> Instruments {
        Instruments {
            calls: m
                .u64_counter("boxmaker.calls")
                .with_description("Tool calls answered, by the gate's decision and the answer")
                .with_unit("{call}")
                .build(),
            call_duration: m
                .f64_histogram("boxmaker.call.duration")
                .with_description("From a call's request to its final answer")
                .with_unit("s")
                .build(),
            pending: m
                .u64_gauge("boxmaker.approvals.pending")
                .with_description("Calls of this gate waiting for a person")
                .with_unit("{call}")
                .build(),
            approval_wait: m
                .f64_histogram("boxmaker.approval.duration")
                .with_description("How long a call waited for a person, by how it ended")
                .with_unit("s")
                .build(),
            taint_raises: m
                .u64_counter("boxmaker.taint.raises")
                .with_description(
                    "A session's taint rose: by a call's answer, or a box's floated label",
                )
                .with_unit("{raise}")
                .build(),
            box_starts: m
                .u64_counter("boxmaker.box.starts")
                .with_description("Boxes started, by kind")
                .with_unit("{box}")
                .build(),
            box_start_duration: m
                .f64_histogram("boxmaker.box.start.duration")
                .with_description("From asking for a box to its command running, by kind")
                .with_unit("s")
                .build(),
        }
    }
}

/// A time from nanoseconds since the Unix epoch.
fn at(ns: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_nanos(ns)
}

fn seconds(start: u64, end: u64) -> f64 {
    Duration::from_nanos(end.saturating_sub(start)).as_secs_f64()
}

/// The session's taint after the call: what it was decided at, raised by its answer.
fn joined(before: Option<Taint>, label: Option<Taint>) -> Option<Taint> {
    match (before, label) {
        (Some(b), Some(l)) => Some(Taint {
            class: b.class.max(l.class),
            untrusted: b.untrusted || l.untrusted,
        }),
        (b, l) => l.or(b),
    }
}

/// The taint after the call, when the call raised it (its class, its untrusted bit).
fn raised(before: Option<Taint>, after: Option<Taint>) -> Option<(DataClass, bool)> {
    match (before, after) {
        (Some(b), Some(a)) if a.class > b.class || (a.untrusted && !b.untrusted) => {
            Some((a.class, a.untrusted))
        }
        (None, Some(a)) if a.class > DataClass::Public || a.untrusted => {
            Some((a.class, a.untrusted))
        }
        _ => None,
    }
}

/// The attributes of a call's span: labels, names and decisions, nothing else.
pub fn call_attributes(t: &CallTrace) -> Vec<KeyValue> {
    let mut a = vec![
        KeyValue::new("mcp.method.name", "tools/call"),
        KeyValue::new("gen_ai.operation.name", "execute_tool"),
        KeyValue::new("mcp.session.id", t.session.as_str().to_string()),
        KeyValue::new("boxmaker.call", i64::try_from(t.call.0).unwrap_or(i64::MAX)),
        KeyValue::new(
            "boxmaker.decision",
            t.decision.map_or("none", |d| d.as_str()),
        ),
        KeyValue::new("boxmaker.status", t.status.as_str()),
    ];
    if let Some(tool) = &t.tool {
        a.push(KeyValue::new("gen_ai.tool.name", tool.clone()));
    }
    if let Some(r) = t.reason {
        a.push(KeyValue::new("boxmaker.deny_reason", r.as_str()));
    }
    if let Some(g) = &t.grant {
        a.push(KeyValue::new("boxmaker.grant", g.clone()));
    }
    if let Some(r) = t.reach {
        a.push(KeyValue::new("boxmaker.reach", r.as_str()));
    }
    if let Some(c) = &t.cap {
        a.push(KeyValue::new("boxmaker.cap", c.clone()));
    }
    if let Some(b) = t.before {
        a.push(KeyValue::new(
            "boxmaker.taint.before.class",
            b.class.as_str(),
        ));
        a.push(KeyValue::new(
            "boxmaker.taint.before.untrusted",
            b.untrusted,
        ));
    }
    if let Some(l) = t.after {
        a.push(KeyValue::new("boxmaker.label.class", l.class.as_str()));
        a.push(KeyValue::new("boxmaker.label.untrusted", l.untrusted));
    }
    if let Some(after) = joined(t.before, t.after) {
        a.push(KeyValue::new(
            "boxmaker.taint.after.class",
            after.class.as_str(),
        ));
        a.push(KeyValue::new(
            "boxmaker.taint.after.untrusted",
            after.untrusted,
        ));
    }
    a
}

impl Spans {
    /// Records go to `tracer` and `meter` (either may be off).
    pub fn new(tracer: Option<SdkTracer>, meter: Option<Meter>) -> Spans {
        Spans {
            tracer,
            meters: meter.as_ref().map(Instruments::new),
        }
    }

    /// Takes one record.
    pub fn record(&self, item: Item) {
        match item {
            Item::Call { trace } => {
                self.measure(&trace);
                self.trace(&trace);
            }
            Item::Pending { count } => {
                if let Some(m) = &self.meters {
                    m.pending.record(count, &[]);
                }
            }
            Item::Floated { class, untrusted } => {
                if let Some(m) = &self.meters {
                    m.taint_raises.add(
                        1,
                        &[
                            KeyValue::new("boxmaker.cause", "floated"),
                            KeyValue::new("boxmaker.class", class.as_str()),
                            KeyValue::new("boxmaker.untrusted", untrusted),
                        ],
                    );
                }
            }
        }
    }

    fn measure(&self, t: &CallTrace) {
        let Some(m) = &self.meters else { return };
        let decision = KeyValue::new(
            "boxmaker.decision",
            t.decision.map_or("none", |d| d.as_str()),
        );
        m.calls.add(
            1,
            &[
                decision.clone(),
                KeyValue::new("boxmaker.status", t.status.as_str()),
            ],
        );
        m.call_duration
            .record(seconds(t.start_ns, t.end_ns), &[decision]);
        if let Some(a) = &t.approval {
            m.approval_wait.record(
                seconds(a.start_ns, a.end_ns),
                &[KeyValue::new(
                    "boxmaker.approval.outcome",
                    a.outcome.as_str(),
                )],
            );
        }
        if let Some((class, untrusted)) = raised(t.before, joined(t.before, t.after)) {
            m.taint_raises.add(
                1,
                &[
                    KeyValue::new("boxmaker.cause", "result"),
                    KeyValue::new("boxmaker.class", class.as_str()),
                    KeyValue::new("boxmaker.untrusted", untrusted),
                ],
            );
        }
        for b in &t.boxes {
            let kind = [KeyValue::new("boxmaker.box.kind", b.kind.as_str())];
            m.box_starts.add(1, &kind);
            m.box_start_duration
                .record(seconds(b.start_ns, b.end_ns), &kind);
        }
    }

    fn trace(&self, t: &CallTrace) {
        let Some(tracer) = &self.tracer else { return };
        let parent = match t.traceparent.as_deref().and_then(TraceParent::parse) {
            Some(p) => Context::new().with_remote_span_context(SpanContext::new(
                TraceId::from_bytes(p.trace_id),
                SpanId::from_bytes(p.parent_id),
                TraceFlags::new(p.flags),
                true,
                TraceState::default(),
            )),
            None => Context::new(),
        };
        let mut span = tracer
            .span_builder(match &t.tool {
                Some(tool) => format!("tools/call {tool}"),
                None => "tools/call".to_string(),
            })
            .with_kind(SpanKind::Server)
            .with_start_time(at(t.start_ns))
            .with_attributes(call_attributes(t))
            .start_with_context(tracer, &parent);
        for e in &t.egress {
            let mut attrs = vec![
                KeyValue::new("boxmaker.egress.outcome", e.outcome.as_str()),
                KeyValue::new("server.port", i64::from(e.port)),
            ];
            if let Some(h) = &e.host {
                attrs.push(KeyValue::new("server.address", h.clone()));
            }
            span.add_event_with_timestamp("egress", at(e.time_ns), attrs);
        }
        if t.status == CallStatus::Failed {
            span.set_status(Status::error("failed"));
        }
        let cx = parent.with_span(span);
        if let Some(a) = &t.approval {
            let mut attrs = vec![
                KeyValue::new("boxmaker.approval.outcome", a.outcome.as_str()),
                KeyValue::new(
                    "boxmaker.approval.wait_ms",
                    i64::try_from(a.end_ns.saturating_sub(a.start_ns) / 1_000_000)
                        .unwrap_or(i64::MAX),
                ),
            ];
            if let Some(v) = &a.via {
                attrs.push(KeyValue::new("boxmaker.approval.via", v.clone()));
            }
            tracer
                .span_builder("approval wait")
                .with_start_time(at(a.start_ns))
                .with_attributes(attrs)
                .start_with_context(tracer, &cx)
                .end_with_timestamp(at(a.end_ns));
        }
        if let Some(r) = &t.runner {
            let run = tracer
                .span_builder("tool run")
                .with_kind(SpanKind::Client)
                .with_start_time(at(r.start_ns))
                .start_with_context(tracer, &cx);
            let run_cx = cx.with_span(run);
            for b in &t.boxes {
                tracer
                    .span_builder("box start")
                    .with_start_time(at(b.start_ns))
                    .with_attributes([KeyValue::new("boxmaker.box.kind", b.kind.as_str())])
                    .start_with_context(tracer, &run_cx)
                    .end_with_timestamp(at(b.end_ns));
            }
            run_cx.span().end_with_timestamp(at(r.end_ns));
        }
        cx.span().end_with_timestamp(at(t.end_ns));
    }
}
