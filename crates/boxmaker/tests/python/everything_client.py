"""The official Python MCP SDK, over stdio, against `boxmaker mcp --config FILE` whose config
runs `@modelcontextprotocol/server-everything` inside the session's box as the downstream
tool `every` (issue 7): text, image, embedded resource, structured, error and long-running
results cross boxmaker in MCP form, labelled.

Environment (set by crates/boxmaker/tests/downstream.rs):
  BOXMAKER_BIN, BOXMAKER_CONFIG  as for every script here (common.py)
  EVERY_PREFIX     the exposed names' prefix, with its `_` ("every_")
  EVERY_LABEL      JSON of the label every result must carry in _meta.boxmaker
  EVERY_LEAK       a variable set in boxmaker's environment that the box must not see
  EVERY_DIRECT     optional: JSON [command, args...] of the server itself; the script then
                   talks to it directly (prefix "", no label): a check of the script alone
"""

import asyncio
import base64
import json
import os
import re
import time

from common import BIN, CONFIG, check, label_of, run, step

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

DIRECT = json.loads(os.environ["EVERY_DIRECT"]) if os.environ.get("EVERY_DIRECT") else None
PREFIX = "" if DIRECT else os.environ.get("EVERY_PREFIX", "every_")
LABEL = None if DIRECT else json.loads(os.environ["EVERY_LABEL"])
LEAK = os.environ.get("EVERY_LEAK", "")

NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def blocks(res, kind: str) -> list:
    return [b for b in res.content if getattr(b, "type", None) == kind]


def texts(res) -> str:
    return "\n".join(b.text for b in blocks(res, "text"))


def show(name: str, res) -> None:
    dump = res.model_dump(mode="json", by_alias=True, exclude_none=True)
    print(f"{name}:", json.dumps(dump)[:400], flush=True)


def labelled(res) -> None:
    if LABEL is None:
        return
    label = label_of(res)
    check(label == LABEL, f"label {label} is not {LABEL}")


async def call_ok(session, tool: str, args: dict, **kw):
    res = await session.call_tool(PREFIX + tool, args, **kw)
    show(PREFIX + tool, res)
    check(res.is_error is False, f"{PREFIX + tool} failed: {texts(res)!r}")
    labelled(res)
    return res


async def main() -> None:
    if DIRECT:
        params = StdioServerParameters(command=DIRECT[0], args=DIRECT[1:])
    else:
        # The whole environment, so a variable the box must not see reaches boxmaker.
        params = StdioServerParameters(
            command=BIN, args=["mcp", "--config", CONFIG], env=dict(os.environ)
        )
    async with stdio_client(params) as (r, w):
        async with ClientSession(r, w) as session:
            step("initialize")
            init = await session.initialize()
            print("server:", init.server_info.name, init.protocol_version, flush=True)

            step("tools/list: the downstream tools, under the prefix, with their schemas")
            listed = await session.list_tools()
            tools = {t.name: t for t in listed.tools}
            print("tools:", sorted(tools), flush=True)
            for want in [
                "echo",
                "get-tiny-image",
                "get-resource-reference",
                "get-sum",
                "get-structured-content",
                "trigger-long-running-operation",
                "get-env",
                "get-resource-links",
                "get-annotated-message",
            ]:
                check(PREFIX + want in tools, f"{PREFIX + want} missing from tools/list")
            for name, t in tools.items():
                check(bool(NAME.match(name)), f"tool name {name!r} is not [A-Za-z0-9_-]{{1,64}}")
                check(t.input_schema.get("type") == "object", f"{name}: {t.input_schema}")
            echo = tools[PREFIX + "echo"]
            check(echo.description == "Echoes back the input string", f"echo: {echo.description!r}")
            check("message" in echo.input_schema.get("properties", {}), f"echo: {echo.input_schema}")
            if not DIRECT:
                for builtin in ["read_file", "write_file"]:
                    check(builtin in tools, f"builtin {builtin} missing beside the downstream tools")

            step("text: echo")
            res = await call_ok(session, "echo", {"message": "hello from the box"})
            check(texts(res) == "Echo: hello from the box", f"echo: {texts(res)!r}")

            step("image: get-tiny-image")
            res = await call_ok(session, "get-tiny-image", {})
            images = blocks(res, "image")
            check(len(images) == 1, f"no image block: {res.content}")
            check(images[0].mime_type == "image/png", f"mimeType {images[0].mime_type}")
            data = base64.b64decode(images[0].data)
            check(data.startswith(PNG_MAGIC), f"not a PNG: {data[:16]!r}")
            print("image bytes:", len(data), flush=True)

            step("embedded resource: get-resource-reference, text and blob")
            res = await call_ok(
                session, "get-resource-reference", {"resourceType": "Text", "resourceId": 1}
            )
            resources = blocks(res, "resource")
            check(len(resources) == 1, f"no resource block: {res.content}")
            inner = resources[0].resource
            check(str(inner.uri) == "demo://resource/dynamic/text/1", f"uri {inner.uri}")
            check("Resource 1" in inner.text, f"resource text {inner.text!r}")
            res = await call_ok(
                session, "get-resource-reference", {"resourceType": "Blob", "resourceId": 2}
            )
            inner = blocks(res, "resource")[0].resource
            check(str(inner.uri) == "demo://resource/dynamic/blob/2", f"uri {inner.uri}")
            check(b"Resource 2" in base64.b64decode(inner.blob), f"blob {inner.blob!r}")

            step("structured content: get-structured-content (the tool has an outputSchema)")
            res = await call_ok(session, "get-structured-content", {"location": "Chicago"})
            check(res.structured_content is not None, "no structuredContent")
            check("temperature" in res.structured_content, f"{res.structured_content}")

            step("resource links and annotations pass through")
            res = await call_ok(session, "get-resource-links", {"count": 2})
            links = blocks(res, "resource_link")
            check(len(links) == 2, f"resource links: {res.content}")
            check(all(str(l.uri).startswith("demo://resource/") for l in links), f"{links}")
            res = await call_ok(
                session, "get-annotated-message", {"messageType": "success", "includeImage": True}
            )
            first = res.content[0]
            check(first.annotations is not None, f"annotations lost: {first!r}")
            check(first.annotations.audience == ["user"], f"audience: {first.annotations!r}")
            check(abs(first.annotations.priority - 0.7) < 1e-6, f"priority: {first.annotations!r}")
            print("annotated priority:", first.annotations.priority, flush=True)
            check(len(blocks(res, "image")) == 1, f"annotated image: {res.content}")

            step("a sum, then an error result: get-sum with a string")
            res = await call_ok(session, "get-sum", {"a": 2, "b": 3})
            check("5" in texts(res), f"sum: {texts(res)!r}")
            res = await session.call_tool(PREFIX + "get-sum", {"a": "two", "b": 3})
            show(PREFIX + "get-sum (bad)", res)
            check(res.is_error is True, "a downstream isError result came back as a success")
            check("expected number" in texts(res), f"the server's reason is lost: {texts(res)!r}")
            print("error text:", texts(res), flush=True)

            step("long-running: trigger-long-running-operation, 3 s in 3 steps")
            progress = []

            async def on_progress(p, total, message):
                progress.append((p, total, message))

            start = time.monotonic()
            res = await call_ok(
                session,
                "trigger-long-running-operation",
                {"duration": 3, "steps": 3},
                progress_callback=on_progress,
            )
            took = time.monotonic() - start
            print(f"long-running took {took:.2f} s, progress seen: {progress}", flush=True)
            check(took >= 2.5, f"the long-running operation returned after {took:.2f} s")
            check("Long running operation completed" in texts(res), f"{texts(res)!r}")

            step("the box's environment is built from scratch")
            res = await call_ok(session, "get-env", {})
            env = json.loads(texts(res))
            print("box environment:", env, flush=True)
            if not DIRECT:
                check(LEAK != "" and LEAK not in env, f"{LEAK} reached the box: {env}")
                check(all("pyenv" not in v and "/root" not in v for v in env.values()), f"{env}")

            step("the same session keeps working after all that")
            res = await call_ok(session, "echo", {"message": "still here"})
            check(texts(res) == "Echo: still here", f"echo: {texts(res)!r}")
            step("done")


run(main)
