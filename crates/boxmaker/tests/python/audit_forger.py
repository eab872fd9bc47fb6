"""The forger of issue 19 item 7: someone who can write boxmaker's audit log and has read
docs/spec.md §6. It edits the log and recomputes every seq, prev and hash after the change,
so the hash chain holds again: written from the documented canonical form alone, not from
boxmaker's code.

    python3 audit_forger.py LOG cut N                 drop the last N records
    python3 audit_forger.py LOG rewrite SEQ KEY VALUE set a string field of record SEQ
    python3 audit_forger.py LOG swap I J              swap the events of records I and J
    python3 audit_forger.py LOG splice OTHER AT       records 1..AT of LOG, then OTHER's after AT
    python3 audit_forger.py LOG strip                 drop every `checkpoint` record
    python3 audit_forger.py LOG forge-checkpoint FILE rewrite FILE's last checkpoint to
                                                      match LOG (the signature cannot follow)

Every command but `cut` rechains the whole log. `--strip` after any command also drops the
log's own `checkpoint` records, which would otherwise betray the change.
"""

import hashlib
import json
import sys


def read(path):
    with open(path, "rb") as f:
        return [json.loads(line) for line in f.read().split(b"\n") if line]


def encode(record):
    # docs/spec.md §6: compact JSON, keys in their order, non-ASCII as raw UTF-8; the same
    # escapes as serde_json (", \\, the short control escapes, \u00xx for the others).
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def rechain(records):
    prev = "0" * 64
    lines = []
    for i, record in enumerate(records):
        record.pop("hash", None)
        record["seq"] = i + 1
        record["prev"] = prev
        body = encode(record)
        digest = hashlib.sha256(bytes.fromhex(prev) + body).hexdigest()
        lines.append(body[:-1] + b',"hash":"' + digest.encode() + b'"}\n')
        record["hash"] = digest
        prev = digest
    return b"".join(lines)


def leaf(line):
    return hashlib.sha256(b"\x00" + line).digest()


def root(leaves):
    # RFC 6962 §2.1: split at the largest power of two below n.
    if not leaves:
        return hashlib.sha256(b"").digest()
    if len(leaves) == 1:
        return leaves[0]
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    return hashlib.sha256(b"\x01" + root(leaves[:k]) + root(leaves[k:])).digest()


def forge_checkpoint(log, witness):
    with open(log, "rb") as f:
        lines = [line for line in f.read().split(b"\n") if line]
    with open(witness) as f:
        kept = [line for line in f.read().split("\n") if line]
    checkpoint = json.loads(kept[-1])
    checkpoint["tree_size"] = checkpoint["last_seq"] = len(lines)
    checkpoint["root"] = root([leaf(line) for line in lines]).hex()
    checkpoint["last_hash"] = json.loads(lines[-1])["hash"]
    kept[-1] = json.dumps(checkpoint, separators=(",", ":"))
    with open(witness, "w") as f:
        f.write("".join(line + "\n" for line in kept))


def event_of(record):
    return {k: v for k, v in record.items() if k not in ("seq", "time", "prev", "hash")}


def swap(records, i, j):
    a, b = records[i - 1], records[j - 1]
    ea, eb = event_of(a), event_of(b)
    for record, event in ((a, eb), (b, ea)):
        keep = {k: record[k] for k in ("seq", "time")}
        record.clear()
        record.update(keep)
        record.update(event)
        record["prev"] = ""


def main(argv):
    strip = "--strip" in argv
    argv = [a for a in argv if a != "--strip"]
    path, command, args = argv[1], argv[2], argv[3:]
    if command == "forge-checkpoint":
        forge_checkpoint(path, args[0])
        return
    records = read(path)
    if command == "cut":
        with open(path, "rb") as f:
            lines = f.read().split(b"\n")[:-1]
        keep = lines[: len(lines) - int(args[0])]
        with open(path, "wb") as f:
            f.write(b"".join(line + b"\n" for line in keep))
        return
    if command == "rewrite":
        records[int(args[0]) - 1][args[1]] = args[2]
    elif command == "swap":
        swap(records, int(args[0]), int(args[1]))
    elif command == "splice":
        at = int(args[1])
        records = records[:at] + read(args[0])[at:]
    elif command != "strip":
        raise SystemExit(f"unknown command {command}")
    if strip or command == "strip":
        records = [r for r in records if r.get("event") != "checkpoint"]
    with open(path, "wb") as f:
        f.write(rechain(records))


if __name__ == "__main__":
    main(sys.argv)
