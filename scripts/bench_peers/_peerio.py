"""Shared input splitting for the Python peer drivers (stdlib only).

iter_hl7_messages(path): yields each HL7 v2 message of FILE as str.
  - MLLP stream (first byte 0x0B): frames 0x0B ... 0x1C 0x0D, read in chunks.
  - plain ER7 file: one message, or a batch split at each "MSH|" segment.
iter_fhir_resources(path): yields (resourceType hint or None, raw JSON text).
  - *.ndjson: one resource per non-empty line, streamed.
  - otherwise the whole file is one resource (e.g. a Bundle).
"""
import re

CHUNK = 1 << 22
VT, FS_CR = b"\x0b", b"\x1c\x0d"


def iter_hl7_messages(path):
    with open(path, "rb") as f:
        head = f.read(1)
        f.seek(0)
        if head == VT:
            yield from _iter_mllp(f)
            return
        data = f.read()
    text = data.decode("utf-8")
    text = text.replace("\r\n", "\r").replace("\n", "\r")
    # batch: a new message starts at every MSH segment
    starts = [m.start() for m in re.finditer(r"(?:^|\r)MSH\|", text)]
    if not starts:
        return
    bounds = [s if s == 0 else s + 1 for s in starts] + [len(text)]
    for a, b in zip(bounds, bounds[1:]):
        msg = text[a:b].strip("\r")
        if msg:
            yield msg


def _iter_mllp(f):
    buf = b""
    while True:
        chunk = f.read(CHUNK)
        if not chunk:
            break
        buf += chunk
        start = 0
        while True:
            end = buf.find(FS_CR, start)
            if end < 0:
                break
            frame = buf[start:end]
            start = end + 2
            vt = frame.find(VT)
            if vt >= 0:
                frame = frame[vt + 1:]
            if frame:
                yield frame.decode("utf-8")
        buf = buf[start:]
    if buf.strip(b"\x0b\x1c\r\n"):
        raise ValueError("trailing bytes after last MLLP frame")


def iter_fhir_resources(path):
    if path.endswith(".ndjson"):
        with open(path, "rb") as f:
            for line in f:
                if line.strip():
                    yield line
    else:
        with open(path, "rb") as f:
            yield f.read()
