"""What every Python SDK client test shares: the environment the Rust test gives, checks,
and the scenario SPEC §5 promises (allowed call, taint denial, a call that waits for a
person's approval), run over whichever transport the caller opened.

Environment (set by crates/boxmaker/tests/mcp_clients.rs):
  BOXMAKER_BIN     the boxmaker binary under test
  BOXMAKER_CONFIG  a boxmaker.toml made by `boxmaker init`, plus a confidential mount at
                   /data/notes holding plan.txt and a public-only tool `share`
"""

import asyncio
import json
import os
import re
import subprocess
import sys
from typing import Any

BIN = os.environ["BOXMAKER_BIN"]
CONFIG = os.environ["BOXMAKER_CONFIG"]
# The text of notes/plan.txt, written by the Rust test.
PLAN = os.environ.get("BOXMAKER_PLAN", "the plan\n")

APPROVAL_ID = re.compile(r"\bap-[A-Za-z0-9_-]+")


def step(what: str) -> None:
    print(f"-- {what}", flush=True)


def check(cond: bool, what: str) -> None:
    if not cond:
        raise AssertionError(what)


def text_of(res: Any) -> str:
    check(len(res.content) >= 1, f"no content in {res!r}")
    block = res.content[0]
    check(getattr(block, "type", None) == "text", f"first block is not text: {block!r}")
    return block.text


def label_of(res: Any) -> dict:
    meta = res.meta or {}
    check("boxmaker" in meta, f"no _meta.boxmaker in {res!r}")
    label = meta["boxmaker"]
    check(set(label) >= {"class", "untrusted", "truncated"}, f"label keys: {label!r}")
    return label


def boxmaker(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [BIN, *args, "--config", CONFIG], capture_output=True, text=True, timeout=30
    )


async def initialize_and_list(session: Any) -> list[str]:
    step("initialize")
    init = await session.initialize()
    check(init.server_info.name == "boxmaker", f"server_info: {init.server_info!r}")
    print("server:", init.server_info.name, init.server_info.version, init.protocol_version)
    step("tools/list")
    tools = await session.list_tools()
    names = [t.name for t in tools.tools]
    print("tools:", names)
    for want in ["read_file", "list_dir", "write_file", "run", "share"]:
        check(want in names, f"{want} missing from tools/list: {names}")
    for t in tools.tools:
        check(bool(t.description), f"{t.name} has no description")
        check(t.input_schema.get("type") == "object", f"{t.name} schema: {t.input_schema!r}")
    return names


class Notes:
    """Logging and progress notifications that name an approval id."""

    def __init__(self) -> None:
        self.logged: list[Any] = []
        self.progress: list[tuple[float, Any, Any]] = []
        self.ids: list[str] = []
        self.seen = asyncio.Event()

    def _note(self, text: str) -> None:
        for m in APPROVAL_ID.findall(text):
            if m not in self.ids:
                self.ids.append(m)
            self.seen.set()

    async def on_log(self, params: Any) -> None:
        print("log notification:", params.level, params.logger, json.dumps(params.data), flush=True)
        self.logged.append(params)
        self._note(json.dumps(params.data))

    async def on_progress(self, progress: float, total: Any, message: Any) -> None:
        print("progress notification:", progress, total, message, flush=True)
        self.progress.append((progress, total, message))
        self._note(message or "")


def pending_ids() -> list[str]:
    out = boxmaker("approvals", "--json")
    check(out.returncode == 0, f"boxmaker approvals failed: {out.stderr}")
    return APPROVAL_ID.findall(out.stdout)


async def scenario(session: Any, notes: Notes) -> None:
    """Run on an initialized session whose logging callback is `notes.on_log`."""
    step("an allowed call: share (public-only) on a clean session")
    res = await session.call_tool("share", {"path": "a.txt", "content": "hello"})
    text = text_of(res)
    print("share:", res.is_error, text, res.meta)
    check(not res.is_error, f"share was refused: {text}")
    check("5 bytes" in text, f"share answer: {text}")
    label = label_of(res)
    check(label["class"] == "public", f"share label: {label}")
    check(label["untrusted"] is False and label["truncated"] is False, f"share label: {label}")

    step("a confidential read taints the session")
    res = await session.call_tool("read_file", {"path": "/data/notes/plan.txt"})
    text = text_of(res)
    print("read_file:", res.is_error, repr(text), res.meta)
    check(not res.is_error, f"read_file failed: {text}")
    check(text == PLAN, f"read_file returned {text!r}, not {PLAN!r}")
    check(label_of(res)["class"] == "confidential", f"read label: {res.meta}")

    step("the same public-only tool is now denied taint_too_high")
    res = await session.call_tool("share", {"path": "b.txt", "content": "leak"})
    text = text_of(res)
    print("share after read:", res.is_error, text)
    check(res.is_error is True, f"share after a confidential read was not an error: {text}")
    check(text.startswith("denied: taint_too_high"), f"denial text: {text!r}")

    step("run (grant: ask) waits until `boxmaker approve` is run")
    call = asyncio.create_task(
        session.call_tool(
            "run",
            {"argv": ["/bin/echo", "approved-run"]},
            progress_callback=notes.on_progress,
        )
    )
    approval = None
    try:
        await asyncio.wait_for(notes.seen.wait(), timeout=15)
        approval = notes.ids[0]
    except asyncio.TimeoutError:
        # Keep going so the failure below names what did arrive, instead of hanging.
        print("no notification named an approval within 15 s; asking `boxmaker approvals`")
        ids = pending_ids()
        check(len(ids) >= 1, "no notification and no pending approval")
        approval = ids[0]
    check(not call.done(), "the run call finished before it was approved")
    pend = pending_ids()
    print("pending approvals:", pend)
    check(approval in pend, f"{approval} is not pending: {pend}")
    out = boxmaker("approve", approval)
    print("boxmaker approve:", out.returncode, out.stdout.strip(), out.stderr.strip())
    check(out.returncode == 0, f"boxmaker approve {approval} failed: {out.stderr}")
    res = await asyncio.wait_for(call, timeout=30)
    text = text_of(res)
    print("run:", res.is_error, text, res.meta)
    check(not res.is_error, f"the approved run failed: {text}")
    answer = json.loads(text)
    check(answer.get("exit") == 0, f"run answer: {answer}")
    check(answer.get("stdout") == "approved-run\n", f"run answer: {answer}")
    label_of(res)
    # SPEC §5: pending_approval becomes a log notification naming the approval id and its
    # expiry, and a progress notification when the client sent a progress token (the SDK
    # sends one because a progress callback was given).
    check(
        any(approval in json.dumps(p.data) for p in notes.logged),
        f"no logging notification named {approval}: {[p.data for p in notes.logged]}",
    )
    check(
        any("expires" in json.dumps(p.data) for p in notes.logged),
        f"no logging notification gave the expiry: {[p.data for p in notes.logged]}",
    )
    check(
        any(approval in (m or "") for _, _, m in notes.progress),
        f"no progress notification named {approval}: {notes.progress}",
    )
    check(pending_ids() == [], "an approval is still pending after the call finished")


def leaves(e: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups, which the SDK's task groups raise."""
    if isinstance(e, BaseExceptionGroup):
        return [leaf for inner in e.exceptions for leaf in leaves(inner)]
    return [e]


def run(main: Any, timeout: float = 50) -> None:
    try:
        asyncio.run(asyncio.wait_for(main(), timeout=timeout))
    except BaseException as e:  # noqa: BLE001 - the Rust test shows this output
        import traceback

        traceback.print_exc()
        for leaf in leaves(e):
            print(f"FAILED: {type(leaf).__name__}: {leaf}", flush=True)
        sys.exit(1)
    print("ok", flush=True)
