#!/usr/bin/env python3
"""The MCP acceptance test: a real client (the official Python SDK, `mcp` on PyPI) against
`phiward mcp` over stdio.

    python3 tests/peers/mcp_client.py [PATH/TO/phiward]     # default: target/debug/phiward

It creates target/peers-venv and installs the pinned SDK there when `mcp` cannot be imported,
then runs itself again inside that venv (nothing is installed system-wide). Without a binary at
the given path it runs `cargo build` first.

What it checks, on one connection per server start:
- initialize; tools/list shows parse, validate, inspect, convert, redact, each with a title, a
  description, read-only/idempotent/closed-world annotations and input and output schemas;
- every tool on valid, invalid and unparseable inputs of every format this build supports (as
  the tool descriptions list them; the others must answer CLI_FORMAT_UNSUPPORTED), with the
  format given and omitted; every reply validates against the tool's output schema, its text
  content is the same object, `isError` is set exactly when failed, and `exit` and `data` equal
  what `phiward <tool> --json` gives for the same input;
- redact: every fixture of every format it supports gives the bytes and exit code of
  `phiward redact` (Safe Harbor, the default), as `content` or `content_base64`; marker fixtures,
  whole and broken, leave no marker anywhere in the reply;
- argument errors (unknown tool, missing, non-string or doubled content, bad format, bad base64)
  are failed/CLI_USAGE/exit 2 and echo nothing; undeclared properties are ignored;
- marker fixtures, whole and broken in many ways: no marker in any failed reply, in any
  validate or inspect reply, or on the server's stderr under RUST_LOG=trace;
- limits: an oversized request (in content, and as a line over the transport's limit) is failed
  with CLI_INPUT_TOO_LARGE and the server keeps serving;
- 1,000 sequential calls mixing good and bad inputs: every call answered, the server still up,
  resident memory flat (printed, and bounded).

Ends with the line `N passed, N failed`; exit status 1 when anything failed.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
import mcp_sdk  # noqa: E402

mcp_sdk.ensure(__file__, ['mcp', 'jsonschema'])

import anyio  # noqa: E402
import jsonschema  # noqa: E402
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

DEFAULT_MAX_BYTES = 14_000  # src/mcp/shape.rs
MARKER = "MKR"
TOOLS = ["parse", "validate", "inspect", "convert"]
REDACT = "redact"
TERMINOLOGY_TOOLS = ["find_equivalent", "map_codes"]
FORMATS = ["hl7", "fhir", "dicom", "x12", "ccda", "ncpdp", "ncpdp-script", "astm", "mllp"]
BINARY_FORMATS = {"dicom"}
# fixtures/<dir>/{valid,invalid}/ for each format, and which files belong to it.
FIXTURE_DIRS = {
    "hl7": ("hl7v2", lambda p: p.suffix != ".mllp" and p.suffix != ".bin"),
    "mllp": ("hl7v2", lambda p: p.suffix == ".mllp"),
    "fhir": ("fhir", lambda p: True),
    "dicom": ("dicom", lambda p: True),
    "x12": ("x12", lambda p: True),
    "ccda": ("ccda", lambda p: True),
    "ncpdp": ("ncpdp", lambda p: p.suffix == ".ncpdp"),
    "ncpdp-script": ("ncpdp-script", lambda p: True),
    "astm": ("astm", lambda p: True),
}
# Inputs that no parser of the format can read.
UNPARSEABLE = {
    "hl7": b"MSH",
    "mllp": b"\x0bnot a message\x1c\r",
    "fhir": b"{\"resourceType\": ",
    # A Part 10 file cut inside its first element's header (64 zeros alone read as a dataset of
    # empty elements under format dicom: see docs/dicom.md).
    "dicom": b"\x00" * 128 + b"DICM" + b"\x02\x00",
    "x12": b"ISA*00*",
    "ccda": b"<ClinicalDocument",
    # NCPDP Telecommunication D.0: a request header cut short; SCRIPT XML: an unclosed root.
    "ncpdp": b"610014D0B1",
    "ncpdp-script": b"<Message",
    "astm": b"H||^&",
}

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


class Client:
    """One server process and one MCP session."""

    def __init__(self, session: ClientSession, schemas: dict[str, dict]):
        self.session = session
        self.schemas = schemas

    async def call(self, tool: str, arguments: dict | None, label: str) -> dict | None:
        try:
            result = await self.session.call_tool(tool, arguments)
        except Exception as e:  # the SDK raises when a reply does not match the output schema
            check(False, f"{label}: call raised {type(e).__name__}")
            return None
        sc = result.structured_content
        if not check(isinstance(sc, dict), f"{label}: structured content is an object"):
            return None
        schema = self.schemas.get(tool)
        if schema is not None:
            errors = list(jsonschema.Draft202012Validator(schema).iter_errors(sc))
            check(not errors, f"{label}: reply validates against the output schema")
        texts = [c.text for c in result.content if getattr(c, "type", None) == "text"]
        check(len(texts) == 1 and json.loads(texts[0]) == sc, f"{label}: text content is the structured object")
        status = sc.get("status")
        check(bool(result.is_error) == (status == "failed"), f"{label}: isError exactly when failed")
        check(sc.get("ok") == (status == "success"), f"{label}: ok exactly when success")
        if status == "failed":
            check("data" not in sc and isinstance(sc.get("code"), str), f"{label}: failed has a code and no data")
            # Besides the code: its meaning, the name of the argument at fault (a usage error),
            # and for a format the tool does not take, the format and the ones it does. Never a
            # value: each is checked against its grammar.
            extra = set(sc) - {"ok", "status", "exit", "code", "message"}
            check(isinstance(sc.get("message"), str) and sc["message"] != "", f"{label}: failed says what its code means")
            if sc.get("code") == "CLI_USAGE":
                check(extra <= {"argument"}, f"{label}: a usage error carries only the argument's name")
                check(re.fullmatch(r"[a-z][a-z0-9_]*", str(sc.get("argument", "name"))) is not None, f"{label}: argument is a name")
            elif sc.get("code") == "CLI_FORMAT_UNSUPPORTED":
                check(extra == {"detected", "supported", "support"}, f"{label}: unsupported says what is supported")
                check(sc.get("support") in ("planned", "not_offered"), f"{label}: support is planned or not_offered")
                check(all(isinstance(f, str) for f in sc.get("supported", [None])), f"{label}: supported lists names")
            else:
                check(not extra, f"{label}: failed carries only the code and its meaning")
        else:
            check("data" in sc and "code" not in sc, f"{label}: {status} has data and no code")
        return sc


def cli_json(binary: Path, tool: str, data: bytes, fmt: str | None, ndjson: bool = False) -> tuple[int, object]:
    """What `phiward <tool> --json` exits with and prints (one object, or {records})."""
    args = [str(binary), tool, "--json", "-"]
    if tool == "parse":
        # The MCP default is the named model; the CLI's is the positional one.
        args += ["--model", "named"]
    if fmt:
        args += ["--format", fmt]
    if ndjson:
        args.append("--ndjson")
    p = subprocess.run(args, input=data, capture_output=True, env={**os.environ, "RUST_LOG": ""})
    lines = [json.loads(line) for line in p.stdout.decode("utf-8").splitlines() if line.strip()]
    if not lines:
        # convert of a batch with no message prints no line; the MCP reply says so explicitly.
        return p.returncode, ({"records": []} if tool == "convert" and p.returncode == 0 else None)
    if len(lines) == 1 and "record" not in lines[0]:
        return p.returncode, lines[0]
    return p.returncode, {"records": lines}


def content_args(data: bytes, fmt: str | None) -> dict:
    args: dict = {}
    text = None
    if fmt not in BINARY_FORMATS:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = None
    if text is not None:
        args["content"] = text
    else:
        args["content_base64"] = base64.b64encode(data).decode("ascii")
    if fmt:
        args["format"] = fmt
    return args


def supported(tools: dict[str, dict]) -> dict[str, set[str]]:
    out = {}
    for name, tool in tools.items():
        m = re.search(r"Formats this build supports for \w+: ([^.]*)\.", tool["description"])
        out[name] = set() if not m or m.group(1) == "none yet" else {f.strip() for f in m.group(1).split(",")}
    return out


def fixtures(fmt: str, kind: str) -> list[Path]:
    d, keep = FIXTURE_DIRS[fmt]
    base = ROOT / "fixtures" / d / kind
    if not base.is_dir():
        return []
    return sorted(p for p in base.rglob("*") if p.is_file() and keep(p))


def breakages(data: bytes) -> list[bytes]:
    """Ways to break a message so that it cannot be parsed or does not validate."""
    out = [
        data[: len(data) // 2],
        data[: len(data) // 3],
        data[3:],
        data.replace(b"MSH|^~\\&", b"MSH|^^^^", 1),
        data.replace(b"MSH|", b"XXX|", 1),
        data.replace(b"MSH", b"", 1),
        b"\x00" + data,
        data.replace(b"|", b"\x00", 3),
        data.replace(b"\r", b"\rZZ\x01|", 2),
        b"PID|" + data,
        data.replace(b"^", b"\\X0\\", 2),
        b"\x0b" + data,
        data + b"\x1c",
        data.replace(b"|", b"", 1),
    ]
    return out


def no_marker(obj, label: str) -> None:
    check(MARKER not in json.dumps(obj), f"{label}: no marker in the reply")


def secondary(tool: str, sc: dict) -> dict:
    """What of a reply must be value-free: all of it, except the data a successful convert
    returns by design (its Bundle, like parse's model); convert's findings stay checked."""
    if tool == "convert" and sc.get("status") != "failed":
        data = sc.get("data") or {}
        return {k: v for k, v in sc.items() if k != "data"} | {"findings": data.get("findings")}
    return sc


async def list_tools(session: ClientSession) -> dict[str, dict]:
    result = await session.list_tools()
    tools = {}
    for t in result.tools:
        tools[t.name] = t.model_dump(by_alias=True, mode="json", exclude_none=True)
    return tools


def server(binary: Path, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(command=str(binary), args=["mcp", *extra], env={"RUST_LOG": "trace"})


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def server_pid(binary: Path) -> int | None:
    """The pid of our phiward child (the SDK does not expose it)."""
    me = os.getpid()
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            exe = os.readlink(d / "exe")
        except (OSError, ValueError, IndexError):
            continue
        if ppid == me and Path(exe).resolve() == binary.resolve():
            return int(d.name)
    return None


async def main_session(binary: Path, errlog) -> None:
    async with stdio_client(server(binary), errlog=errlog) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=60) as session:
            init = await session.initialize()
            check(init.server_info.name == "phiward", "initialize: server name")
            check(init.capabilities.tools is not None, "initialize: tools capability")
            tools = await list_tools(session)
            check(sorted(tools) == sorted(TOOLS + [REDACT] + TERMINOLOGY_TOOLS), "tools/list: the message and terminology tools")
            for name, t in tools.items():
                ann = t.get("annotations", {})
                check(bool(t.get("title")) and len(t.get("description", "")) > 80, f"{name}: title and description")
                check(
                    ann.get("readOnlyHint") is True and ann.get("idempotentHint") is True and ann.get("openWorldHint") is False,
                    f"{name}: annotations read-only, idempotent, closed-world",
                )
                check(t["inputSchema"].get("additionalProperties") is False, f"{name}: input schema closed")
                check(t.get("outputSchema", {}).get("type") == "object", f"{name}: output schema")
                jsonschema.Draft202012Validator.check_schema(t["outputSchema"])
            schemas = {n: t["outputSchema"] for n, t in tools.items()}
            client = Client(session, schemas)
            matrix = supported(tools)
            print("support matrix:", {k: sorted(v) for k, v in matrix.items()}, file=sys.stderr)

            await formats_against_cli(client, binary, matrix)
            await redact_against_cli(client, binary, matrix)
            await terminology(client, session, binary)
            await argument_errors(client)
            await markers(client)
            await soak(client, binary)


GENDER_V2 = "http://hl7.org/fhir/ConceptMap/cm-administrative-gender-v2"
COMMON_TERMS = ["diabetes mellitus", "hypertension", "asthma", "aspirin", "metformin", "cholera", "influenza",
                "hemoglobin", "glucose", "pneumonia", "migraine", "hipertensão", "MKR00009X marker term"]


async def terminology(client: Client, session: ClientSession, binary: Path) -> None:
    """find_equivalent and map_codes: every reply validates against the declared output schema
    (Client.call), equals the CLI's --json, and the resources list and read."""
    for term in COMMON_TERMS:
        for args in ({"term": term}, {"term": term, "limit": 10, "source_terminology": "mesh"},
                     {"term": term, "target_terminologies": ["icd10cm", "rxnorm"], "include_deprecated": True}):
            sc = await client.call("find_equivalent", args, f"find_equivalent {args}")
            if sc and sc["status"] != "failed":
                data = sc["data"]
                check(data["term"] == term, "find_equivalent: term echoed in data")
                check(data["ranking"]["method"] == "lexical", "find_equivalent: lexical ranking")
                check(data["results"].get("rxnorm", {"found": False})["found"] is False, "find_equivalent: rxnorm not offline")
                no_marker({k: v for k, v in sc.items() if k != "data"}, "find_equivalent: marker outside data")
        cli = subprocess.run([str(binary), "find-equivalent", "--json", term], capture_output=True)
        sc = await client.call("find_equivalent", {"term": term}, f"find_equivalent {term} vs CLI")
        if sc and "data" in sc:
            check(json.loads(cli.stdout) == sc["data"], f"find_equivalent {term}: data equals the CLI --json")
            check(cli.returncode == sc["exit"], f"find_equivalent {term}: exit equals the CLI")
    for label, args in [("no term", {}), ("numeric term", {"term": 7}), ("limit 0", {"term": "x", "limit": 0}),
                        ("limit 11", {"term": "x", "limit": 11}), ("bad system", {"term": "x", "source_terminology": "MKR00010X"}),
                        ("bad targets", {"term": "x", "target_terminologies": "mesh"})]:
        sc = await client.call("find_equivalent", args, f"find_equivalent {label}")
        check(sc is not None and sc.get("code") == "CLI_USAGE", f"find_equivalent {label}: CLI_USAGE")
    codings = [{"system": "http://hl7.org/fhir/administrative-gender", "code": c} for c in ("female", "male", "MKR00011X")]
    sc = await client.call("map_codes", {"map": GENDER_V2, "codings": codings}, "map_codes bundled")
    check(sc is not None and sc["status"] == "verdict" and sc["data"]["unmapped"] == 1, "map_codes: one unmapped is a verdict")
    if sc:
        no_marker(sc["data"]["findings"], "map_codes: findings value-free")
    sc = await client.call("map_codes", {"map": GENDER_V2, "codings": codings[:2]}, "map_codes all mapped")
    check(sc is not None and sc["status"] == "success", "map_codes: all mapped is success")
    cm = {"resourceType": "ConceptMap", "url": "http://example.org/cm", "group": [
        {"source": "http://a", "target": "http://b", "element": [{"code": "1", "target": [{"code": "one", "equivalence": "equal"}]}]}]}
    sc = await client.call("map_codes", {"conceptmap": json.dumps(cm), "codings": [{"system": "http://a", "code": "1"}]},
                           "map_codes user map")
    check(sc is not None and sc["data"]["results"][0]["targets"][0]["code"] == "one", "map_codes: user map translates")
    msg = (ROOT / "fixtures" / "terminology" / "oru_r01.hl7").read_text()
    sc = await client.call("map_codes", {"map": GENDER_V2, "content": msg}, "map_codes scan")
    check(sc is not None and sc["status"] == "verdict" and any(r["location"] == "OBX[1]-3[1].1" for r in sc["data"]["results"]),
          "map_codes: content is scanned (HL7 v2 CE fields)")
    for label, args in [("unknown map", {"map": "http://example.org/MKR00012X", "codings": []}),
                        ("not a map", {"conceptmap": "MKR00013X", "codings": []}), ("no map", {"codings": []})]:
        sc = await client.call("map_codes", args, f"map_codes {label}")
        check(sc is not None and sc["status"] == "failed", f"map_codes {label}: failed")
        if sc:
            no_marker(sc, f"map_codes {label}")
    listed = await session.list_resources()
    uris = sorted(str(r.uri) for r in listed.resources)
    check(uris == ["info://licenses", "info://schema/inspect", "info://terminology"],
          "resources/list: info://licenses, info://schema/inspect and info://terminology")
    schema = json.loads((await session.read_resource("info://schema/inspect")).contents[0].text)
    check(len(schema.get("anyOf", [])) >= 7 and all(b["properties"]["format"].get("const") for b in schema["anyOf"]),
          "info://schema/inspect: one branch per format")
    try:
        import jsonschema  # a dependency of the official SDK
        for fmt in FORMATS:
            for sample in fixtures(fmt, "valid")[:2]:
                raw = sample.read_bytes()
                try:
                    args = {"content": raw.decode("utf-8")}
                except UnicodeDecodeError:
                    args = {"content_base64": base64.b64encode(raw).decode()}
                for detail in ["summary", "inventory"]:
                    sc = await client.call("inspect", {**args, "detail": detail, "max_bytes": 0}, f"inspect {fmt} {detail}")
                    data = (sc or {}).get("data") or {}
                    records = data.get("records")
                    # ASTM's summary has its own `records` (counts by record type), not a list.
                    for record in records if isinstance(records, list) else [data]:
                        if "error" in record:
                            continue
                        errors = list(jsonschema.Draft202012Validator(schema).iter_errors(record))
                        check(not errors, f"inspect {fmt} ({detail}) matches info://schema/inspect")
    except ImportError:
        check(False, "jsonschema (a dependency of the official MCP SDK) is importable")
    lic = await session.read_resource("info://licenses")
    text = lic.contents[0].text
    for needle in ["icd10cm", "mesh", "loinc", "conceptmaps", "ucum", "Regenstrief", "National Library of Medicine",
                   "Licence:", "Citation:"]:
        check(needle in text, f"info://licenses mentions {needle}")
    info = json.loads((await session.read_resource("info://terminology")).contents[0].text)
    check({d["dataset"] for d in info["datasets"]} >= {"icd10cm", "mesh", "loinc", "conceptmaps", "ucum"},
          "info://terminology lists every bundled dataset")
    check(all(d["license"] and d["citation"] for d in info["datasets"]), "info://terminology: licence and citation each")
    check(GENDER_V2 in info["conceptmaps"], "info://terminology lists the bundled ConceptMaps")


async def formats_against_cli(client: Client, binary: Path, matrix: dict[str, set[str]]) -> None:
    for tool in TOOLS:
        for fmt in FORMATS:
            label = f"{tool}/{fmt}"
            if fmt not in matrix[tool]:
                sample = (fixtures(fmt, "valid") or [None])[0]
                data = sample.read_bytes() if sample else UNPARSEABLE[fmt]
                args = content_args(data, fmt)
                sc = await client.call(tool, args, f"{label} unsupported")
                if sc:
                    check(
                        sc.get("code") in ("CLI_FORMAT_UNSUPPORTED", "CLI_PARSER_UNAVAILABLE"),
                        f"{label}: unsupported format is CLI_FORMAT_UNSUPPORTED",
                    )
                continue
            cases = [(p, "valid") for p in fixtures(fmt, "valid")] + [(p, "invalid") for p in fixtures(fmt, "invalid")]
            check(bool(cases), f"{label}: fixtures exist for a supported format")
            for path, kind in cases:
                data = path.read_bytes()
                ndjson = path.suffix == ".ndjson"
                for given in (fmt, None):
                    name = f"{label} {path.name} format={'given' if given else 'detected'}"
                    args = content_args(data, given)
                    if ndjson:
                        args["ndjson"] = True
                    # The whole data (max_bytes 0) is the CLI's; by default it is paged.
                    sc = await client.call(tool, {**args, "max_bytes": 0}, name)
                    if sc is None:
                        continue
                    exit_code, printed = cli_json(binary, tool, data, given, ndjson)
                    check(sc["exit"] == exit_code, f"{name}: exit {sc['exit']} equals the CLI's {exit_code}")
                    if sc["status"] != "failed":
                        check(sc["data"] == printed, f"{name}: data equals the CLI's --json")
                        whole = len(json.dumps(sc["data"], separators=(",", ":"), ensure_ascii=False).encode())
                        if whole > DEFAULT_MAX_BYTES:
                            paged = await client.call(tool, args, f"{name} default")
                            if paged:
                                size = len(json.dumps(paged["data"], separators=(",", ":"), ensure_ascii=False).encode())
                                # A page is over the limit only when one item alone is (a DICOM model).
                                check(paged.get("truncated") is True or "page" not in paged, f"{name}: default pages")
                                check(size <= DEFAULT_MAX_BYTES or "page" not in paged or paged["page"]["returned"] == 1,
                                      f"{name}: default page of {size} bytes")
                    # Whether a valid fixture validates clean is the fixture tests' business;
                    # here it must at least be read.
                    if kind == "valid":
                        want = ("success",) if tool in ("parse", "inspect") else ("success", "verdict")
                        check(sc["status"] in want, f"{name}: a valid fixture is read")
            sc = await client.call(tool, content_args(UNPARSEABLE[fmt], fmt), f"{label} unparseable")
            if sc:
                # A stream reports a record it cannot read as a failed record (a verdict, exit 65).
                records = (sc.get("data") or {}).get("records") or []
                stream_failure = sc["status"] == "verdict" and sc["exit"] == 65 and all("error" in r for r in records)
                check(sc["status"] == "failed" or stream_failure, f"{label}: unparseable input is failed")


async def redact_against_cli(client: Client, binary: Path, matrix: dict[str, set[str]]) -> None:
    """redact: the CLI's bytes and exit code (Safe Harbor); markers leave nothing in the reply."""
    check(bool(matrix.get(REDACT)), "redact: supports some format")
    for fmt in sorted(matrix.get(REDACT, ())):
        for path in fixtures(fmt, "valid"):
            data = path.read_bytes()
            ndjson = path.suffix == ".ndjson"
            args = content_args(data, fmt)
            if ndjson:
                args["ndjson"] = True
            name = f"redact/{fmt} {path.name}"
            sc = await client.call(REDACT, args, name)
            if sc is None:
                continue
            cli = [str(binary), "redact", "-", "--format", fmt] + (["--ndjson"] if ndjson else [])
            p = subprocess.run(cli, input=data, capture_output=True, env={**os.environ, "RUST_LOG": ""})
            check(sc["exit"] == p.returncode, f"{name}: exit {sc['exit']} equals the CLI's {p.returncode}")
            if sc["status"] == "failed":
                continue
            got = sc["data"].get("content")
            got = got.encode("utf-8") if got is not None else base64.b64decode(sc["data"].get("content_base64", ""))
            check(got == p.stdout, f"{name}: content equals the CLI's output")
            check(sc["data"].get("policy") == "safe-harbor", f"{name}: the policy is named")
    # The Safe Harbor marker fixtures (fixtures/redact/markers: a marker in every value the
    # policy must remove).
    for path in sorted((ROOT / "fixtures" / "redact" / "markers").iterdir()):
        data = path.read_bytes()
        for i, variant in enumerate([data] + breakages(data)):
            sc = await client.call(REDACT, content_args(variant, None), f"redact markers {path.name} #{i}")
            if sc:
                no_marker(sc, f"redact markers {path.name} #{i}")


async def argument_errors(client: Client) -> None:
    msg = (ROOT / "fixtures/hl7v2/markers/markers_adt_a01_v2.5.1.hl7").read_bytes().decode("utf-8")
    cases = [
        ("unknown tool", "MKR-tool-name", {"content": msg}, "name"),
        ("missing content", "validate", {"format": "hl7"}, "content"),
        ("no arguments", "validate", None, "content"),
        ("numeric content", "validate", {"content": 12345}, "content"),
        ("object content", "parse", {"content": {"v": "MKR00001X"}}, "content"),
        ("null content", "inspect", {"content": None}, "content"),
        ("content and base64", "parse", {"content": msg, "content_base64": "TUtS"}, "content"),
        ("bad base64", "parse", {"content_base64": "MKR00001X!!"}, "content_base64"),
        ("bad format", "validate", {"content": msg, "format": "MKR00002X"}, "format"),
        ("numeric format", "validate", {"content": msg, "format": 7}, "format"),
        ("convert to cda", "convert", {"content": msg, "to": "MKR00003X"}, "to"),
        ("convert missing content", "convert", {"to": "fhir"}, "content"),
        ("non-boolean ndjson", "validate", {"content": msg, "ndjson": "MKR00005X"}, "ndjson"),
    ]
    for label, tool, args, argument in cases:
        sc = await client.call(tool, args, f"usage: {label}")
        if sc:
            got = {k: v for k, v in sc.items() if k != "message"}
            want = {"ok": False, "status": "failed", "exit": 2, "code": "CLI_USAGE", "argument": argument}
            check(got == want, f"usage: {label}: CLI_USAGE, exit 2, argument {argument}")
            no_marker(sc, f"usage: {label}")
    plain = await client.call("validate", {"content": msg}, "undeclared property: reference")
    extra = await client.call("validate", {"content": msg, "strict": True, "MKR_extra": "MKR00004X"}, "undeclared property")
    check(plain is not None and plain == extra, "undeclared properties are ignored")


def declared_format(path: Path) -> str:
    """The format a fixture is in, from its folder (fixtures/<dir>/...) and extension."""
    d = path.relative_to(ROOT / "fixtures").parts[0]
    if d == "hl7v2":
        return "mllp" if path.suffix == ".mllp" else "hl7"
    return d


async def markers(client: Client) -> None:
    files = sorted(p for d in (ROOT / "fixtures").iterdir() if (d / "markers").is_dir() for p in (d / "markers").iterdir())
    check(len(files) >= 5, "marker fixtures exist")
    for path in files:
        data = path.read_bytes()
        for tool in ("validate", "inspect", "parse", "convert"):
            sc = await client.call(tool, content_args(data, None), f"markers {path.name} {tool}")
            if sc and (tool != "parse" or sc["status"] == "failed"):
                no_marker(secondary(tool, sc), f"markers {path.name} {tool}")
            for i, broken in enumerate(breakages(data)):
                for fmt in (None, declared_format(path)):
                    label = f"markers {path.name} broken#{i} {tool} format={fmt}"
                    args = content_args(broken, fmt)
                    sc = await client.call(tool, args, label)
                    if sc and (tool != "parse" or sc["status"] == "failed"):
                        no_marker(secondary(tool, sc), label)


async def soak(client: Client, binary: Path) -> None:
    good = (ROOT / "fixtures/hl7v2/valid").glob("*.hl7")
    good = [p.read_bytes() for p in sorted(good)][:10]
    bad = [b"MSH", b"\x00\x01\x02", b"", b"PID|1"]
    pid = server_pid(binary)
    check(pid is not None, "soak: server process found")
    answered = 0
    rss = {}
    started = time.perf_counter()
    for i in range(1000):
        tool = ("validate", "inspect", "parse", "convert")[i % 4]
        if i % 3 == 2:
            args: dict | None = {"content": bad[i % len(bad)].decode("latin-1")}
        elif i % 17 == 5:
            args = {"nope": 1}
        else:
            args = content_args(good[i % len(good)], None)
        try:
            result = await client.session.call_tool(tool, args)
            if isinstance(result.structured_content, dict) and "status" in result.structured_content:
                answered += 1
        except Exception:
            pass
        if pid and i + 1 in (100, 1000):
            rss[i + 1] = rss_kib(pid)
    elapsed = time.perf_counter() - started
    check(answered == 1000, f"soak: every call answered ({answered}/1000)")
    pong = await client.session.send_ping()
    check(pong is not None, "soak: server still up after 1,000 calls")
    if pid:
        growth = rss[1000] - rss[100]
        print(f"soak: 1000 calls in {elapsed:.2f} s; RSS after 100 calls {rss[100]} KiB, after 1000 {rss[1000]} KiB", file=sys.stderr)
        check(growth < 4096, f"soak: memory flat (RSS grew {growth} KiB from call 100 to call 1000)")


async def limits_session(binary: Path, errlog) -> None:
    params = server(binary, "--max-input-bytes", "4096")
    async with stdio_client(params, errlog=errlog) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=60) as session:
            await session.initialize()
            tools = await list_tools(session)
            client = Client(session, {n: t["outputSchema"] for n, t in tools.items()})
            msg = (ROOT / "fixtures/hl7v2/markers/markers_adt_a01_v2.5.1.hl7").read_bytes().decode("utf-8")
            big = (msg * (8192 // len(msg) + 1))[:8192]
            sc = await client.call("validate", {"content": big}, "limits: content over the limit")
            if sc:
                check(sc.get("code") == "CLI_INPUT_TOO_LARGE" and sc["exit"] == 65, "limits: CLI_INPUT_TOO_LARGE, exit 65")
                no_marker(sc, "limits: content over the limit")
            huge = msg * (3 * 1024 * 1024 // len(msg))
            sc = await client.call("parse", {"content": huge}, "limits: line over the transport limit")
            if sc:
                check(sc.get("code") == "CLI_INPUT_TOO_LARGE", "limits: a huge line is CLI_INPUT_TOO_LARGE")
                no_marker(sc, "limits: line over the transport limit")
            sc = await client.call("inspect", {"content": msg[:2000]}, "limits: a call after the oversized ones")
            check(sc is not None and sc["status"] != "failed", "limits: the server keeps serving")


def main() -> int:
    binary = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "target" / "debug" / "phiward"
    if not binary.exists():
        subprocess.run(["cargo", "build", "--quiet"], cwd=ROOT, check=True)
    with tempfile.TemporaryDirectory() as tmp:
        # A private copy: the server and the CLI it is compared with are the same build even if
        # the target directory is rebuilt meanwhile.
        copy = Path(tmp) / "phiward"
        shutil.copy2(binary, copy)
        binary = copy
        err_path = Path(tmp) / "stderr.log"
        with open(err_path, "w") as errlog:
            anyio.run(main_session, binary, errlog)
            anyio.run(limits_session, binary, errlog)
        stderr = err_path.read_text(errors="replace")
        check(MARKER not in stderr, "server stderr under RUST_LOG=trace carries no marker")
        check("tool call finished" in stderr, "server stderr shows the trace logs were on")
    for f in failures[:40]:
        print("  failed:", f, file=sys.stderr)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
