"""Record types that more than one layer holds: what a source's fetch hands to the raw archive.

They live here, in the lowest layer, so the archive can store and give back a response without importing the
scrapers (imports run flows -> transforms -> scrapers -> warehouse only).
"""

from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlsplit


@dataclass(frozen=True)
class RawResponse:
    """One HTTP response as received (secrets removed from URL, request body and, where flagged, body)."""

    source: str
    method: str
    url: str
    status: int
    headers: dict[str, str]
    body: bytes
    fetched_at: datetime
    request_body: str | None = None
    redacted: bool = False  # the stored body or request body had credentials replaced

    @property
    def path(self) -> str:
        return urlsplit(self.url).path or "/"

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300
