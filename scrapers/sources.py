"""The source registry: name -> module implementing scrapers.base.Source (FX first: others may need its rates)."""

from scrapers import fx, huggingface, openrouter, runpod, skypilot, vastai, verda
from scrapers.base import Source

SOURCES: dict[str, Source] = {"fx": fx, "vastai": vastai, "runpod": runpod, "verda": verda, "skypilot": skypilot,
                              "openrouter": openrouter, "huggingface": huggingface}
# Sources whose fetch reads what the others loaded: fetched once they are in the warehouse. Hugging Face follows
# the repositories the day's API listings name.
AFTER_LOAD = ("huggingface",)
# The sources that produce GPU offers; the quality gates judge a day by them. OpenRouter sells tokens, not GPUs:
# a day without it is not suspect, and the API comparison keeps the latest API prices before it.
PROVIDERS = ("vastai", "runpod", "verda", "skypilot")


def get(name: str) -> Source:
    try:
        return SOURCES[name]
    except KeyError:
        raise KeyError(f"unknown source {name!r}; known: {', '.join(SOURCES)}") from None
