"""The source registry: name -> module implementing scrapers.base.Source (FX first: others may need its rates)."""

from scrapers import fx, runpod, vastai, verda
from scrapers.base import Source

SOURCES: dict[str, Source] = {"fx": fx, "vastai": vastai, "runpod": runpod, "verda": verda}
PROVIDERS = ("vastai", "runpod", "verda")  # the sources that produce offers


def get(name: str) -> Source:
    try:
        return SOURCES[name]
    except KeyError:
        raise KeyError(f"unknown source {name!r}; known: {', '.join(SOURCES)}") from None
