"""Fault injection for the replay server: a plan of fault items per path, and the edits they make to a response.

A plan is a comma-separated sequence consumed one item per request, then normal service; a trailing "*" repeats
the last item for ever: "429,429,200" is two 429s then the recording, "500*" a permanent 500. Items:

- an HTTP status: that status with a small JSON body (429 and 503 carry the server's Retry-After, if any);
  "200" or "ok" serves the recording;
- transport: "timeout" holds the request for hang_s, then closes without answering; "drop" closes at once
  without answering; "truncate" announces the whole body, sends half and closes; "trickle" sends the whole body
  in pieces spread over hang_s, at least TRICKLE_PIECES and one every TRICKLE_GAP_S at most (every read is quick
  however long the whole takes, so only a deadline on the whole response cuts it); "huge" sends the recording padded with whitespace to HUGE_BYTES,
  chunked without a Content-Length, so only the client's size cap stops it (the padding is never held in memory);
- payload, with the recording's status: "invalid" is the first half of the body (complete at the HTTP level);
  "html" an HTML error page; "empty" the recording without its records; "dup" every record twice; "deep" a
  body of DEEP_LEVELS nested arrays (XML: elements) instead of the recording; "missing:F" drops field F from
  the first record that has it; "null:F" sets it to null there; "absurd:F" sets it to ABSURD (a string where F
  was one); "bigint:F" sets a numeric F to BIGINT, an integer beyond 64 bits; "overflow:F" sets a numeric or text F
  to the text OVERFLOW, a number beyond a double (and a Decimal shifted six places); "control:F" wraps its text in terminal escapes, NUL and CR (CONTROL); "rename:F" renames it
  F_renamed in every record; "string:F" sends every numeric F as a string; "type:CT" labels the recording with
  content type CT;
- "echo": a 400 whose text/plain body quotes back what the request sent (its Authorization header and its body,
  credentials included), behind terminal escapes (CONTROL): a provider's error page echoing a credential;
- redirect: "redirect:CODE" answers CODE (301, 302, 303, 307, 308) with a Location at another origin (the
  server's `elsewhere`, by default itself named localhost instead of 127.0.0.1: a request that follows shows
  up in its log with that host); "redirect:CODE:same" with a Location at the same path of the same origin.

Records: in JSON, the objects of the outermost arrays of objects (vast `offers`, GraphQL `gpuTypes` and
`dataCenters`, Verda's bare arrays); a field edit reaches every object holding the field at any depth, so
Frankfurter's `rates` map is edited too. In XML, the childless elements with attributes (ECB's rate Cubes), their
attributes being the fields: XML has no null ("null:F" empties the attribute) and no numbers ("string:F" does
not apply). An edit that would change nothing raises ValueError, so a mistyped field never passes for a fault;
only a body whose record arrays are all empty (a search that found nothing) is served as it is.
"""

import json
import re
import threading
from collections.abc import Iterator

TRANSPORT = ("timeout", "drop", "truncate", "trickle", "huge")
PAYLOAD = ("invalid", "html", "empty", "dup", "deep")
ECHO = "echo"
FIELD_EDITS = ("missing", "null", "rename", "string", "absurd", "control", "bigint", "overflow")
REDIRECTS = (301, 302, 303, 307, 308)
DEEP_LEVELS = 100_000
ABSURD = 1e308
BIGINT = 2**64 + 1
OVERFLOW = "1e999999"
CONTROL = ("\x1b]0;gpuledger\x07\x1b[2J\x1b[31m", "\x00\r\x9b0m")  # set the title, clear, red; NUL, CR, C1 reset
TRICKLE_PIECES = 20
TRICKLE_GAP_S = 0.1
HUGE_BYTES = 128 * 2**20  # twice the client's default size cap
HTML_PAGE = (b"<!DOCTYPE html>\n<html><head><title>503 Service Temporarily Unavailable</title></head>\n"
             b"<body><h1>We'll be back soon</h1><p>Our API is under maintenance.</p></body></html>\n")
_XML_RECORD = re.compile(r"""<[\w:.-]+(?:\s+[\w:.-]+\s*=\s*(?:'[^']*'|"[^"]*"))+\s*/>""")


class FaultPlan:
    """A sequence of fault items for one path, consumed one per request."""

    def __init__(self, spec: str):
        self.forever = spec.strip().endswith("*")
        self.items = [self._item(i) for i in spec.strip().rstrip("*").split(",") if i.strip()]
        if not self.items:
            raise ValueError(f"empty fault spec {spec!r}")
        self._lock = threading.Lock()

    @staticmethod
    def _item(text: str) -> str:
        kind, colon, arg = text.strip().partition(":")
        kind, arg = kind.lower(), arg.strip()
        if not colon and kind in ("ok", "200"):
            return "ok"
        if not colon and (kind in (*TRANSPORT, *PAYLOAD, ECHO) or kind.isdigit() and 100 <= int(kind) <= 599):
            return kind
        if arg and kind in FIELD_EDITS + ("type",):
            return f"{kind}:{arg}"  # field names are case-sensitive (securePrice)
        if kind == "redirect" and redirect(f"redirect:{arg}"):
            return f"redirect:{arg.lower()}"
        raise ValueError(f"fault item {text!r}: use an HTTP status, ok, {', '.join((*TRANSPORT, *PAYLOAD, ECHO))}, "
                         f"{':F, '.join(FIELD_EDITS)}:F, type:CONTENT-TYPE, redirect:CODE or redirect:CODE:same")

    def next(self) -> str:
        with self._lock:
            if len(self.items) > 1 or not self.forever:
                return self.items.pop(0) if self.items else "ok"
            return self.items[0]


def parse_faults(items: list[str]) -> dict[str, str]:
    """["/path=429,429,200", ...] -> {"/path": "429,429,200"}; ValueError names a malformed item."""
    faults = {}
    for item in items:
        path, eq, spec = item.partition("=")
        if not eq or not path.startswith("/"):
            raise ValueError(f"fault {item!r}: expected PATH=SPEC, e.g. /api/v0/bundles/=429,429,200")
        FaultPlan(spec)
        faults[path] = spec
    return faults


def redirect(item: str) -> tuple[int, bool] | None:
    """(status, within the same origin) of a redirect item; None for any other item."""
    kind, _, arg = item.partition(":")
    code, _, where = arg.partition(":")
    if kind != "redirect" or not code.isdigit() or int(code) not in REDIRECTS or where.lower() not in ("", "same"):
        return None
    return int(code), bool(where)


def edit(item: str, body: bytes, content_type: str) -> tuple[bytes, str]:
    """The body and content type a payload item serves instead of the recording's (others leave both alone)."""
    kind, _, arg = item.partition(":")
    if kind == "type":
        return body, arg
    if kind == "html":
        return HTML_PAGE, "text/html; charset=utf-8"
    if kind == "invalid":
        return body[: len(body) // 2], content_type
    if kind not in PAYLOAD + FIELD_EDITS:
        return body, content_type
    try:
        data = json.loads(body)
    except ValueError:
        if kind == "deep":
            return b"<a>" * DEEP_LEVELS + b"</a>" * DEEP_LEVELS, content_type
        return _edit_xml(kind, arg, body.decode()).encode(), content_type
    if kind == "deep":
        return b"[" * DEEP_LEVELS + b"]" * DEEP_LEVELS, content_type
    _edit_json(kind, arg, data)
    return json.dumps(data).encode(), content_type


def echoed(authorization: str | None, body: bytes) -> bytes:
    """The body of an "echo" answer: what the request sent, quoted back behind terminal escapes."""
    return (f"{CONTROL[0]}bad request{CONTROL[1]}: Authorization: {authorization or '-'}; body: ".encode()
            + (body or b"-"))


def padded(body: bytes, chunk: int = 2**16) -> Iterator[bytes]:
    """The body, then whitespace (still valid JSON or XML) until HUGE_BYTES have been produced."""
    yield body
    for _ in range(max(0, HUGE_BYTES - len(body)) // chunk):
        yield b" " * chunk


def _objects(node) -> Iterator[dict]:
    """Every JSON object, depth first in document order."""
    if isinstance(node, dict):
        yield node
    for child in node.values() if isinstance(node, dict) else node if isinstance(node, list) else ():
        yield from _objects(child)


def _record_lists(node) -> Iterator[list]:
    if isinstance(node, list) and all(isinstance(x, dict) for x in node):  # [] too: a search may find nothing
        yield node
        return
    for child in node.values() if isinstance(node, dict) else node if isinstance(node, list) else ():
        yield from _record_lists(child)


def _edit_json(kind: str, field: str, data) -> None:
    if kind in ("empty", "dup"):
        lists = list(_record_lists(data))
        if not lists:
            raise ValueError(f"{kind}: no array of records in the body")
        for records in lists:
            if kind == "dup":
                records.extend(records)
            else:
                records.clear()
        return
    holders = [o for o in _objects(data) if field in o]
    if kind in ("string", "absurd", "bigint", "overflow"):
        holders = [o for o in holders if isinstance(o[field], int | float) and not isinstance(o[field], bool)
                   or kind in ("absurd", "overflow") and isinstance(o[field], str)]
    if kind == "control":
        holders = [o for o in holders if isinstance(o[field], str)]
    lists = list(_record_lists(data))
    if not holders and lists and not any(lists):
        return  # only empty record arrays (a search that found nothing): nothing to edit, nothing mistyped
    if not holders:
        typed = {"string": "a numeric ", "bigint": "a numeric ", "absurd": "a numeric or text ",
                 "overflow": "a numeric or text ", "control": "a text "}.get(kind, "")
        raise ValueError(f"{kind}:{field}: no record has {typed}field {field!r}")
    if kind == "missing":
        del holders[0][field]
    elif kind == "null":
        holders[0][field] = None
    elif kind == "absurd":
        holders[0][field] = str(ABSURD) if isinstance(holders[0][field], str) else ABSURD
    elif kind == "bigint":
        holders[0][field] = BIGINT
    elif kind == "overflow":
        holders[0][field] = OVERFLOW
    elif kind == "control":
        holders[0][field] = CONTROL[0] + holders[0][field] + CONTROL[1]
    elif kind == "rename":
        for holder in holders:
            holder[f"{field}_renamed"] = holder.pop(field)
    else:
        for holder in holders:
            holder[field] = json.dumps(holder[field])


def _edit_xml(kind: str, field: str, text: str) -> str:
    if kind == "string":
        raise ValueError("string:F does not apply to XML: its attributes are strings already")
    records = list(_XML_RECORD.finditer(text))
    attribute = re.compile(rf"""(\s){re.escape(field)}(\s*=\s*)('[^']*'|"[^"]*")""")
    if kind in FIELD_EDITS:
        records = [m for m in records if attribute.search(m[0])]
        records = records if kind == "rename" else records[:1]
    if not records:
        raise ValueError(f"{kind}{':' + field if field else ''}: no XML record"
                         f"{' with attribute ' + repr(field) if field else ''} in the body")
    replacement = {"missing": "", "null": rf"\g<1>{field}\g<2>''", "rename": rf"\g<1>{field}_renamed\g<2>\g<3>",
                   "absurd": rf"\g<1>{field}\g<2>'{ABSURD}'", "bigint": rf"\g<1>{field}\g<2>'{BIGINT}'",
                   "overflow": rf"\g<1>{field}\g<2>'{OVERFLOW}'",
                   "control": lambda a: f"{a[1]}{field}{a[2]}{a[3][0]}{CONTROL[0]}{a[3][1:-1]}{CONTROL[1]}{a[3][-1]}"}
    chosen = {m.start() for m in records}

    def change(m: re.Match) -> str:
        if m.start() not in chosen:
            return m[0]
        if kind in replacement:
            return attribute.sub(replacement[kind], m[0], count=1)
        return m[0] * 2 if kind == "dup" else ""

    return _XML_RECORD.sub(change, text)
