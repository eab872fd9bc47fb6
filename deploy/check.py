#!/usr/bin/env python3
"""Checks deploy/ without a cluster or a container engine (docs/deploy.md, "What was checked").

    python3 -m venv /tmp/kv && /tmp/kv/bin/pip install kubernetes-validate
    /tmp/kv/bin/python deploy/check.py [--compose-schema compose-spec.json] [-k 1.33.0]

- every Kubernetes manifest against the Kubernetes OpenAPI schemas of that version, strict
  (an unknown field fails), with the `kubernetes-validate` package's bundled schemas;
- compose.yaml against the Compose Specification's JSON schema (schema/compose-spec.json of
  the compose-spec project), its YAML anchors and merge keys resolved first, when a copy of
  the schema is given;
- the seccomp profile: JSON, the OCI runtime's fields, a syscall never both allowed and
  refused, and every call boxmaker's sandbox helper makes allowed;
- the few fields each manifest must have and agree on (names, labels, ports, volumes).

Exit 0 when all pass; each failure is printed.
"""
import argparse, glob, json, os, subprocess, sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
FAIL = []


def fail(msg):
    FAIL.append(msg)
    print("FAIL", msg)


def k8s(version):
    try:
        import kubernetes_validate  # noqa: F401
    except ImportError:
        fail("kubernetes-validate is not installed: the manifests were not checked against the schemas")
        return
    for f in sorted(glob.glob(os.path.join(HERE, "k8s", "*.yaml"))):
        r = subprocess.run([sys.executable, "-m", "kubernetes_validate", "-k", version,
                            "--strict", f], capture_output=True, text=True)
        out = (r.stdout + r.stderr).strip()
        print(out)
        if r.returncode != 0:
            fail(f"{f}: kubernetes-validate exited {r.returncode}")


def shape():
    docs = []
    for f in sorted(glob.glob(os.path.join(HERE, "k8s", "*.yaml"))):
        with open(f) as fh:
            docs += [(f, d) for d in yaml.safe_load_all(fh) if d]
    kinds = {(d["kind"], d["metadata"]["name"]): d for _, d in docs}
    for f, d in docs:
        for key in ("apiVersion", "kind", "metadata"):
            if key not in d:
                fail(f"{f}: a document has no {key}")
        if d["kind"] != "Namespace" and d["metadata"].get("namespace") != "boxmaker":
            fail(f"{f}: {d['kind']}/{d['metadata']['name']} is not in namespace boxmaker")
    dep = kinds.get(("StatefulSet", "boxmaker"))
    if not dep:
        fail("no StatefulSet boxmaker")
        return
    pod = dep["spec"]["template"]["spec"]
    if dep["spec"]["selector"]["matchLabels"].items() - dep["spec"]["template"]["metadata"]["labels"].items():
        fail("the StatefulSet's selector does not match its pods' labels")
    if ("Service", dep["spec"].get("serviceName")) not in kinds:
        fail(f"the StatefulSet's serviceName {dep['spec'].get('serviceName')} names no Service")
    # A replica's audit chain and its key live in its state directory: a volume that dies
    # with the pod loses the records.
    claims = {c["metadata"]["name"] for c in dep["spec"].get("volumeClaimTemplates", [])}
    if "state" not in claims:
        fail("the replicas' state is not a volume claim of each replica's own: a rescheduled pod loses its audit chain")
    if pod.get("hostUsers") is not False:
        fail("the replicas' pods do not run in a user namespace of their own (hostUsers: false)")
    if pod["securityContext"].get("seccompProfile", {}).get("type") != "Localhost":
        fail("the replicas' pods do not use the Localhost seccomp profile")
    volumes = {v["name"] for v in pod["volumes"]} | claims
    for c in pod.get("initContainers", []) + pod["containers"]:
        sc = c.get("securityContext", {})
        if sc.get("allowPrivilegeEscalation") is not False:
            fail(f"container {c['name']}: privilege escalation (no_new_privs) is not off")
        if sc.get("capabilities", {}).get("drop") != ["ALL"]:
            fail(f"container {c['name']}: capabilities are not all dropped")
        if sc.get("procMount") != "Unmasked":
            fail(f"container {c['name']}: /proc is masked, so a box cannot mount its own")
        for m in c.get("volumeMounts", []):
            if m["name"] not in volumes:
                fail(f"container {c['name']}: mounts a volume {m['name']} the pod does not have")
    svc = kinds.get(("Service", "boxmaker"))
    ports = {p["name"] for c in pod["containers"] for p in c.get("ports", [])}
    for p in svc["spec"]["ports"]:
        if p["targetPort"] not in ports:
            fail(f"Service boxmaker targets a port {p['targetPort']} no container names")
    if svc["spec"]["selector"].items() - dep["spec"]["template"]["metadata"]["labels"].items():
        fail("Service boxmaker selects no replica")
    secrets = {n for (k, n) in kinds if k == "Secret"}
    refs = set()
    for c in pod["containers"]:
        for e in c.get("env", []):
            ref = e.get("valueFrom", {}).get("secretKeyRef")
            if ref:
                refs.add(ref["name"])
    refs |= {v["secret"]["secretName"] for v in pod["volumes"] if "secret" in v}
    if refs - secrets:
        fail(f"secrets named but not in secrets.example.yaml: {refs - secrets}")


def compose(schema_path):
    with open(os.path.join(HERE, "compose.yaml")) as fh:
        doc = yaml.safe_load(fh)  # resolves the anchors and the `<<` merge keys
    if schema_path:
        import jsonschema
        with open(schema_path) as fh:
            schema = json.load(fh)
        errors = sorted(jsonschema.Draft7Validator(schema).iter_errors(doc), key=str)
        for e in errors:
            fail(f"compose.yaml: {'/'.join(map(str, e.absolute_path))}: {e.message}")
        if not errors:
            print(f"compose.yaml passed against {os.path.basename(schema_path)}")
    else:
        print("compose.yaml: no Compose Specification schema given, only its shape is checked")
    for name in ("postgres", "replica-1", "replica-2"):
        if name not in doc["services"]:
            fail(f"compose.yaml: no service {name}")
    for name, s in doc["services"].items():
        for sec in s.get("secrets", []):
            src = sec if isinstance(sec, str) else sec["source"]
            if src not in doc.get("secrets", {}):
                fail(f"compose.yaml: {name} uses a secret {src} that is not defined")
        if name.startswith("replica-"):
            opts = s.get("security_opt", [])
            for want in ("no-new-privileges:true", "seccomp=./seccomp-boxmaker.json",
                         "systempaths=unconfined"):
                if want not in opts:
                    fail(f"compose.yaml: {name} lacks security_opt {want}")
            if s.get("cap_drop") != ["ALL"]:
                fail(f"compose.yaml: {name} does not drop every capability")
            # The state directory (audit chain, audit key) must outlive the container.
            mounts = [v.split(":") for v in s.get("volumes", []) if isinstance(v, str)]
            if not any(len(m) > 1 and m[1] == "/var/lib/boxmaker" and m[0] in doc.get("volumes", {})
                       for m in mounts):
                fail(f"compose.yaml: {name}'s /var/lib/boxmaker is not a named volume: a restart loses its audit chain")
            # A folded command line indented further than the others keeps its line break,
            # and the shell then runs it as a command of its own.
            for line in s.get("command", []):
                if "\n" in line:
                    fail(f"compose.yaml: {name}'s command has a line break inside: {line!r}")
            if s.get("configs"):
                fail(f"compose.yaml: {name} takes its config by `configs:`, which podman-compose does not implement (bind-mount it)")
            # Compose outside Swarm and podman-compose honour neither a file secret's uid
            # and mode nor `configs` the same way: the Compose file uses neither.
            for sec in s.get("secrets", []):
                if isinstance(sec, dict) and ({"uid", "gid", "mode"} & sec.keys()):
                    fail(f"compose.yaml: {name}'s secret {sec['source']} sets uid, gid or mode, which Compose ignores for a file")


def seccomp():
    with open(os.path.join(HERE, "seccomp-boxmaker.json")) as fh:
        p = json.load(fh)
    if p.get("defaultAction") not in ("SCMP_ACT_ALLOW", "SCMP_ACT_ERRNO"):
        fail("seccomp: defaultAction")
    allowed, refused = set(), set()
    for rule in p["syscalls"]:
        (allowed if rule["action"] == "SCMP_ACT_ALLOW" else refused).update(rule["names"])
    if allowed & refused:
        fail(f"seccomp: both allowed and refused: {sorted(allowed & refused)}")
    # What crates/sandbox calls to build a box (docs/spec.md §4).
    needed = {"unshare", "clone", "clone3", "setns", "mount", "umount2", "pivot_root",
              "open_tree", "move_mount", "mount_setattr", "sethostname", "capset", "prctl",
              "seccomp", "landlock_create_ruleset", "landlock_add_rule",
              "landlock_restrict_self", "pidfd_open", "close_range"}
    if needed & refused:
        fail(f"seccomp: refuses what the sandbox needs: {sorted(needed & refused)}")
    if p.get("defaultAction") != "SCMP_ACT_ALLOW" and needed - allowed:
        fail(f"seccomp: does not allow {sorted(needed - allowed)}")
    print(f"seccomp-boxmaker.json: {len(allowed)} allowed by name, {len(refused)} refused")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--compose-schema")
    ap.add_argument("-k", "--kubernetes-version", default="1.33.0")
    a = ap.parse_args()
    k8s(a.kubernetes_version)
    shape()
    compose(a.compose_schema)
    seccomp()
    print(f"{len(FAIL)} failed" if FAIL else "deploy: ok")
    sys.exit(1 if FAIL else 0)


main()
