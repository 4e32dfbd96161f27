#!/usr/bin/env python3
"""The MCP protocol features, shown with a real client (the official Python SDK, `mcp` on PyPI)
against `phiward mcp` over stdio: progress, cancellation, concurrent calls, resource templates,
completions and prompts.

    python3 tests/peers/mcp_protocol.py [PATH/TO/phiward]    # default: target/release/phiward

Like tests/peers/mcp_client.py, it creates target/peers-venv with the pinned SDK when `mcp`
cannot be imported and runs itself again inside it; without a binary at the given path it runs
`cargo build --release` first. Every line the server writes and every line the client sends are
also read off the streams between them (the `Tap`), so that what the SDK hides (a result for a
request it has abandoned, the text of a notification) is checked on the wire.

What it checks:
- progress: `parse` of a large NDJSON input (synthetic Patients whose names are markers) with a
  progress callback gets at least one `notifications/progress` before its result; progress
  strictly increases, never passes the input's records, and has no total and no message; no
  notification carries a marker;
- concurrency: while that large `parse` runs (it has reported progress and has no result yet), a
  small `validate` is sent and completes first, with the reply it gives alone;
- cancellation: a large `parse` abandoned by the client once it has reported progress (the SDK
  sends `notifications/cancelled`) gets no result on the wire, its work stops (the audit log
  records the call ended with CLI_OUTPUT_FAILED rather than a result), and the server keeps
  serving;
- resource templates, completions and prompts: the two templates are listed and read,
  completions come from the catalog, a prompt names its tool and an unknown format is refused
  without being echoed;
- large results as resources: `parse` of an input whose data is over the default page with
  `deliver: link` returns a `resource_link` block and no data; `resources/read` of its URI gives
  exactly the data `max_bytes: 0` returns inline; `deliver: resource` embeds the same text; an
  unknown result URI is refused without being echoed; no marker outside the resource.

Ends with the line `N passed, N failed`; exit status 1 when anything failed. Python 3.11.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
import mcp_sdk  # noqa: E402

mcp_sdk.ensure(__file__, ['mcp'])

import anyio  # noqa: E402
from mcp import ClientSession, StdioServerParameters, types  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

MARKER = "MKR"
# Records of the large input: long enough that a parse runs well past the server's first
# progress notification (200 ms) on a slow machine, short enough to take a few seconds.
LARGE = 150_000
SMALL_HL7 = "MSH|^~\\&|A|B|C|D|20240101||ADT^A01^ADT_A01|1|P|2.5.1\rEVN|A01|20240101\rPID|1||1\rPV1|1|I\r"

passed = 0
failed = 0
failures: list[str] = []


def check(ok: bool, what: str) -> bool:
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        failures.append(what)
        print("FAIL:", what, file=sys.stderr, flush=True)
    return ok


def patients(n: int) -> str:
    """`n` synthetic FHIR Patients as NDJSON; every family name is a marker."""
    return "".join(
        '{"resourceType":"Patient","id":"p%d","name":[{"family":"MKR%05dX","given":["Odessa"]}],'
        '"birthDate":"1980-01-01"}\n' % (i, i % 100_000)
        for i in range(n)
    )


class Tap:
    """The JSON-RPC messages between the SDK and the server, as dicts, in order."""

    def __init__(self) -> None:
        self.incoming: list[dict] = []
        self.outgoing: list[dict] = []

    async def pump_in(self, source, sink) -> None:
        async with sink:
            async for m in source:
                if not isinstance(m, Exception):
                    self.incoming.append(m.message.model_dump(by_alias=True, exclude_none=True, mode="json"))
                await sink.send(m)

    async def pump_out(self, source, sink) -> None:
        async with source:
            async for m in source:
                self.outgoing.append(m.message.model_dump(by_alias=True, exclude_none=True, mode="json"))
                await sink.send(m)

    def results_for(self, request_id) -> list[dict]:
        return [m for m in self.incoming if m.get("id") == request_id and "method" not in m]

    def call_ids(self, content_len: int) -> list:
        """The ids of the `tools/call` requests whose content is `content_len` characters long."""
        out = []
        for m in self.outgoing:
            if m.get("method") == "tools/call":
                content = ((m.get("params") or {}).get("arguments") or {}).get("content")
                if isinstance(content, str) and len(content) == content_len:
                    out.append(m.get("id"))
        return out


def audit_calls(log: Path) -> list[dict]:
    if not log.exists():
        return []
    return [e for e in (json.loads(l) for l in log.read_text().splitlines() if l.strip()) if e.get("op") == "mcp tool"]


async def session(binary: Path, audit_log: Path, body) -> None:
    params = StdioServerParameters(command=str(binary), args=["mcp", "--audit-log", str(audit_log)], env={})
    tap = Tap()
    async with stdio_client(params) as (read, write):
        in_tx, in_rx = anyio.create_memory_object_stream(0)
        out_tx, out_rx = anyio.create_memory_object_stream(0)
        async with anyio.create_task_group() as tg:
            tg.start_soon(tap.pump_in, read, in_tx)
            tg.start_soon(tap.pump_out, out_rx, write)
            async with ClientSession(in_rx, out_tx, read_timeout_seconds=300) as s:
                init = await s.initialize()
                caps = init.capabilities
                check(all(c is not None for c in (caps.tools, caps.resources, caps.prompts, caps.completions)),
                      "initialize: tools, resources, prompts and completions capabilities")
                await body(s, tap, audit_log)
            tg.cancel_scope.cancel()


async def progress_and_concurrency(s: ClientSession, tap: Tap, audit_log: Path) -> None:
    large = patients(LARGE)
    progress: list[tuple[float, float | None, str | None]] = []
    first_progress = anyio.Event()
    large_done = anyio.Event()
    large_result: dict = {}

    async def on_progress(p: float, total: float | None, message: str | None) -> None:
        progress.append((p, total, message))
        if p > 0:
            first_progress.set()

    async def run_large() -> None:
        r = await s.call_tool("parse", {"content": large, "ndjson": True}, progress_callback=on_progress)
        large_result["sc"] = r.structured_content
        large_done.set()
        first_progress.set()  # nothing more to wait for

    small_alone = (await s.call_tool("validate", {"content": SMALL_HL7})).structured_content
    async with anyio.create_task_group() as tg:
        tg.start_soon(run_large)
        with anyio.fail_after(300):
            await first_progress.wait()
        # The large call is running (records are being done) and has no result yet.
        check(not large_done.is_set(), "concurrency: the large parse reported progress while running")
        small = (await s.call_tool("validate", {"content": SMALL_HL7})).structured_content
        check(not large_done.is_set(), "concurrency: a small validate completes while a large parse is still running")
        check(small == small_alone, "concurrency: the small call's reply is the one it gives alone")
        with anyio.fail_after(300):
            await large_done.wait()
    check(large_result.get("sc", {}).get("status") == "success", "progress: the large parse completes")
    values = [p for p, _, _ in progress]
    check(len(values) >= 1, f"progress: at least one notification ({len(values)})")
    check(all(b > a for a, b in zip(values, values[1:])), "progress: strictly increasing")
    check(all(0 <= v <= LARGE for v in values), "progress: never more than the input's records")
    check(values[-1] > 0 if values else False, "progress: records counted")
    check(all(t is None and m is None for _, t, m in progress), "progress: no total and no message")
    notes = [m for m in tap.incoming if m.get("method") == "notifications/progress"]
    check(len(notes) == len(values), "progress: every notification on the wire reached the callback")
    check(all(set(n.get("params", {})) == {"progressToken", "progress"} for n in notes),
          "progress: a notification carries the token and a count only")
    check(all(MARKER not in json.dumps(n) for n in tap.incoming if "method" in n),
          "progress: no notification carries a marker")


async def cancellation(s: ClientSession, tap: Tap, audit_log: Path) -> None:
    large = patients(LARGE)
    seen_progress = anyio.Event()
    progress: list[float] = []

    async def on_progress(p: float, total: float | None, message: str | None) -> None:
        progress.append(p)
        if p > 0:
            seen_progress.set()

    ended = {"result": False}

    async def run_large(scope: anyio.CancelScope) -> None:
        with scope:
            await s.call_tool("parse", {"content": large, "ndjson": True}, progress_callback=on_progress)
            ended["result"] = True
            seen_progress.set()  # nothing more to wait for

    scope = anyio.CancelScope()
    async with anyio.create_task_group() as tg:
        tg.start_soon(run_large, scope)
        with anyio.fail_after(300):
            await seen_progress.wait()
        # The work has started: cancel it (the SDK sends notifications/cancelled).
        scope.cancel()
    check(not ended["result"], "cancellation: the call was abandoned before its result")
    ids = tap.call_ids(len(large))
    check(len(ids) == 1, "cancellation: one large call was sent")
    cancelled_id = ids[0] if ids else None
    cancels = [m for m in tap.outgoing if m.get("method") == "notifications/cancelled"]
    check(any((m.get("params") or {}).get("requestId") == cancelled_id for m in cancels),
          "cancellation: the SDK sent notifications/cancelled for the call")
    # The server keeps serving.
    r = await s.call_tool("validate", {"content": SMALL_HL7})
    check(r.structured_content.get("status") != "failed", "cancellation: the server keeps serving")
    # The work stops: its audit line appears (the call has returned) with CLI_OUTPUT_FAILED.
    with anyio.fail_after(300):
        while not any(c.get("tool") == "parse" for c in audit_calls(audit_log)):
            await anyio.sleep(0.05)
    parse_lines = [c for c in audit_calls(audit_log) if c.get("tool") == "parse"]
    check(parse_lines and parse_lines[-1].get("codes") == ["CLI_OUTPUT_FAILED"],
          f"cancellation: the work stopped before its end ({parse_lines[-1:] if parse_lines else 'no line'})")
    # One more round trip after the work has stopped: a result, if one were sent, is in by now.
    await s.send_ping()
    await s.list_tools()
    check(tap.results_for(cancelled_id) == [], "cancellation: no result for the cancelled call on the wire")


async def templates_and_prompts(s: ClientSession, tap: Tap, audit_log: Path) -> None:
    templates = await s.list_resource_templates()
    uris = [t.uri_template for t in templates.resource_templates]
    check(uris == ["info://terminology/codesystem/{system}", "info://terminology/conceptmap/{id}"],
          f"templates: code systems and ConceptMaps ({uris})")
    loinc = await s.read_resource("info://terminology/codesystem/loinc")
    body = json.loads(loinc.contents[0].text)
    check(body.get("system") == "http://loinc.org" and body.get("origin") == "bundled", "templates: read a code system")
    done = await s.complete(types.ResourceTemplateReference(uri="info://terminology/conceptmap/{id}"),
                            {"name": "id", "value": "cm-name"})
    check(done.completion.values == ["cm-name-use-v2", "cm-name-use-v3"],
          f"completions: ConceptMap ids from the catalog ({done.completion.values})")
    cm = await s.read_resource("info://terminology/conceptmap/" + done.completion.values[0])
    body = json.loads(cm.contents[0].text)
    check(body.get("resourceType") == "ConceptMap" and body.get("group"), "templates: a completed id reads")
    prompts = [p.name for p in (await s.list_prompts()).prompts]
    check(prompts == ["validate_and_explain", "deidentify_then_summarize"], f"prompts: listed ({prompts})")
    fmt = await s.complete(types.PromptReference(name="validate_and_explain"), {"name": "format", "value": "fh"})
    check(fmt.completion.values == ["fhir"], "completions: a prompt's format")
    got = await s.get_prompt("deidentify_then_summarize", {"format": "fhir"})
    text = got.messages[0].content.text
    check("`redact`" in text and '"fhir"' in text, "prompts: the prompt names its tool and the format")
    try:
        await s.get_prompt("validate_and_explain", {"format": "MKR00001X"})
        check(False, "prompts: an unknown format is refused")
    except Exception as e:  # the SDK raises on a JSON-RPC error
        check(MARKER not in str(e), "prompts: an unknown format is refused without being echoed")


async def result_resources(s: ClientSession, tap: Tap, audit_log: Path) -> None:
    content = patients(300)
    whole = await s.call_tool("parse", {"content": content, "ndjson": True, "max_bytes": 0})
    data = json.dumps(whole.structured_content["data"], separators=(",", ":"), sort_keys=True)
    check(len(data) > 14_000, f"resources: the input's data is over the default page ({len(data)} bytes)")
    linked = await s.call_tool("parse", {"content": content, "ndjson": True, "deliver": "link"})
    sc = linked.structured_content
    check("data" not in sc and sc.get("status") == "success", "resources: a linked reply carries no data")
    links = [b for b in linked.content if isinstance(b, types.ResourceLink)]
    check(len(links) == 1 and str(links[0].uri) == sc["resource"]["uri"], "resources: one resource_link block")
    check(links[0].mime_type == "application/json" and links[0].size == len(data), "resources: its type and size")
    read = await s.read_resource(links[0].uri)
    text = read.contents[0].text
    check(json.loads(text) == whole.structured_content["data"], "resources: the link reads as the whole data")
    check(len(text) == len(data), "resources: compact JSON, as inline")
    embedded = await s.call_tool("parse", {"content": content, "ndjson": True, "deliver": "resource"})
    blocks = [b for b in embedded.content if isinstance(b, types.EmbeddedResource)]
    check(len(blocks) == 1 and blocks[0].resource.text == text, "resources: an embedded resource holds the same text")
    outside = json.dumps(sc) + "".join(json.dumps(b.model_dump(mode="json")) for b in linked.content)
    check(MARKER not in outside, "resources: no marker beside the resource")
    try:
        await s.read_resource("phiward://result/MKR00001X")
        check(False, "resources: an unknown result is refused")
    except Exception as e:  # the SDK raises on a JSON-RPC error
        check(MARKER not in str(e), "resources: an unknown result is refused without being echoed")


def main() -> int:
    binary = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "target" / "release" / "phiward"
    if not binary.exists():
        subprocess.run(["cargo", "build", "--release", "--quiet", "--bins"], cwd=ROOT, check=True)
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "phiward"
        shutil.copy2(binary, copy)
        for name, body in [
            ("progress", progress_and_concurrency),
            ("cancel", cancellation),
            ("templates", templates_and_prompts),
            ("resources", result_resources),
        ]:
            started = time.monotonic()
            try:
                anyio.run(session, copy, Path(tmp) / f"{name}.audit", body)
            except Exception as e:  # an error reply the SDK raises, a timeout: the session's checks stop
                check(False, f"{name}: the session raised {type(e).__name__}")
            print(f"{name}: {time.monotonic() - started:.1f} s", flush=True)
    for f in failures[:40]:
        print("  failed:", f, file=sys.stderr)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
