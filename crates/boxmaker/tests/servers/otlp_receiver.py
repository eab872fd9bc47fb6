"""An OTLP/HTTP receiver for the telemetry tests (crates/boxmaker/tests/telemetry.rs).

    otlp_receiver.py PORT OUTDIR

Listens on 127.0.0.1:PORT and takes what an OTLP exporter POSTs to /v1/traces and
/v1/metrics (binary protobuf, as OTLP/HTTP sends it), decodes it with the official
`opentelemetry-proto` package (the protobuf classes the OpenTelemetry project generates from
its .proto files; no parser of ours) and answers as the specification says: 200 with an
empty Export*ServiceResponse. Into OUTDIR it writes, per request:

- NNNN.bin        the body as received (for tests that search every byte that came);
- traces.jsonl    one line per span: trace/span/parent ids in hex, name, kind, times,
                  attributes and events as plain values, status, and the resource's
                  attributes;
- metrics.jsonl   one line per metric: its name, and its data points' attributes and values;
- all.jsonl       every request, whole, as protobuf's own JSON mapping (MessageToDict).

Anything else gets 404; a body that does not decode gets 400.
"""

import gzip
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

PORT = int(sys.argv[1])
OUT = sys.argv[2]
LOCK = threading.Lock()
COUNT = [0]


def value(v):
    """An AnyValue as a plain Python value."""
    kind = v.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: value(kv.value) for kv in v.kvlist_value.values}
    if kind == "bytes_value":
        return v.bytes_value.hex()
    return getattr(v, kind)


def attrs(kvs):
    return {kv.key: value(kv.value) for kv in kvs}


def append(name, lines):
    with open(os.path.join(OUT, name), "a", encoding="utf-8") as f:
        for line in lines:
            f.write(json.dumps(line, sort_keys=True) + "\n")


def spans_of(req):
    for rs in req.resource_spans:
        resource = attrs(rs.resource.attributes)
        for ss in rs.scope_spans:
            for s in ss.spans:
                yield {
                    "resource": resource,
                    "scope": ss.scope.name,
                    "trace_id": s.trace_id.hex(),
                    "span_id": s.span_id.hex(),
                    "parent_span_id": s.parent_span_id.hex(),
                    "name": s.name,
                    "kind": s.kind,
                    "start": s.start_time_unix_nano,
                    "end": s.end_time_unix_nano,
                    "attributes": attrs(s.attributes),
                    "events": [
                        {"name": e.name, "time": e.time_unix_nano, "attributes": attrs(e.attributes)}
                        for e in s.events
                    ],
                    "status": {"code": s.status.code, "message": s.status.message},
                }


def points_of(metric):
    kind = metric.WhichOneof("data")
    data = getattr(metric, kind)
    out = []
    for p in data.data_points:
        point = {"attributes": attrs(p.attributes)}
        if kind == "histogram":
            point["count"] = p.count
            point["sum"] = p.sum
        else:
            point["value"] = getattr(p, p.WhichOneof("value"))
        out.append(point)
    return kind, out


def metrics_of(req):
    for rm in req.resource_metrics:
        resource = attrs(rm.resource.attributes)
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                kind, points = points_of(m)
                yield {"resource": resource, "name": m.name, "kind": kind, "points": points}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        if self.headers.get("Content-Encoding", "") == "gzip":
            body = gzip.decompress(body)
        if self.path == "/v1/traces":
            req_type, resp_type, name, lines = (
                ExportTraceServiceRequest, ExportTraceServiceResponse, "traces.jsonl", spans_of)
        elif self.path == "/v1/metrics":
            req_type, resp_type, name, lines = (
                ExportMetricsServiceRequest, ExportMetricsServiceResponse, "metrics.jsonl",
                metrics_of)
        else:
            self.send_error(404)
            return
        try:
            req = req_type.FromString(body)
        except Exception as e:  # noqa: BLE001 - the test wants to see any decode failure
            sys.stderr.write(f"cannot decode {self.path}: {e}\n")
            self.send_error(400)
            return
        with LOCK:
            COUNT[0] += 1
            with open(os.path.join(OUT, f"{COUNT[0]:04d}.bin"), "wb") as f:
                f.write(body)
            append(name, list(lines(req)))
            append("all.jsonl", [{"path": self.path, "request": MessageToDict(req)}])
        answer = resp_type().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)


os.makedirs(OUT, exist_ok=True)
ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
