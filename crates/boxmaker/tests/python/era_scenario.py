"""The scenario every SDK client test plays (common.scenario: an allowed call, the taint's
denial, a call that waits for `boxmaker approve`), with the official Python SDK's `Client` in
either protocol era (issue 31): ERA_MODE legacy or 2026-07-28, over ERA_TRANSPORT stdio or
http. On 2026-07-28 the client opts in to logging (`log_level`), which is how it hears the
approval notice there.
"""

from common import Notes, check, run, scenario, step
from era import MODE, MODERN, TRANSPORT, Conn, start_http, stop


async def main() -> None:
    proc, url, credential = (None, None, None)
    if TRANSPORT == "http":
        proc, url, credential = start_http()
    try:
        notes = Notes()
        opts = {"logging_callback": notes.on_log}
        if MODERN:
            opts["log_level"] = "warning"
        async with Conn(url, credential, **opts) as c:
            step(f"{MODE} over {TRANSPORT}: tools/list")
            tools = (await c.list_tools()).tools
            names = [t.name for t in tools]
            for want in ["read_file", "list_dir", "write_file", "run", "share"]:
                check(want in names, f"{want} missing from tools/list: {names}")
            for t in tools:
                check(bool(t.description), f"{t.name} has no description")
            await scenario(c, notes)
            step("done")
    finally:
        stop(proc)


run(main, 80)
