"""Source settings, read from the environment in one place so the same code runs live and against a replay."""

import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

# Credentials are read from the environment or a secrets file only the owner can read, nowhere else.
SECRET_NAMES = ("RUNPOD_API_KEY", "VERDA_CLIENT_ID", "VERDA_CLIENT_SECRET", "DATACRUNCH_CLIENT_ID",
                "DATACRUNCH_CLIENT_SECRET", "HF_TOKEN")
# A Hugging Face repository, owner/name, by the Hub's rules (huggingface_hub's validate_repo_id): letters, digits,
# '_', '.' and '-', neither '--' nor '..' (an id `owner/..` made the request /resolve/main/config.json), no '.' or
# '-' first or last, an owner and a name of at most 96 characters each, no '.git' suffix.
REPO = re.compile(r"(?!.*(?:--|\.\.))(?!.*\.git$)[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,94}[A-Za-z0-9_])?"
                  r"/[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,94}[A-Za-z0-9_])?")


class SettingsError(ValueError):
    """Settings that cannot be used as given; the message says how to fix them (never a secret's value)."""


def secrets_file(env: Mapping[str, str]) -> Path:
    """$GPULEDGER_SECRETS_FILE, else secrets.env in $GPULEDGER_HOME."""
    explicit = env.get("GPULEDGER_SECRETS_FILE")
    return Path(explicit) if explicit else Path(env.get("GPULEDGER_HOME", "data")) / "secrets.env"


def read_secrets(path: Path) -> dict[str, str]:
    """NAME=value lines of the known credential names; refused unless the file is the owner's alone."""
    if not path.exists():
        return {}
    info = path.stat()
    if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO) or info.st_uid != os.getuid():
        raise SettingsError(f"secrets file {path} must belong to this user and be readable by it alone "
                            f"(mode {stat.S_IMODE(info.st_mode):04o}): chmod 600 {path}")
    found = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        name, sep, value = text.removeprefix("export ").partition("=")
        if not sep or name.strip() not in SECRET_NAMES:
            raise SettingsError(f"secrets file {path}:{number}: expected NAME=value with NAME one of "
                                f"{', '.join(SECRET_NAMES)}")
        found[name.strip()] = value.strip().strip("'\"")
    return found


@dataclass(frozen=True)
class HttpSettings:
    connect_timeout_s: float = 10.0
    read_timeout_s: float = 60.0
    attempts: int = 5  # per request, the first included
    backoff_s: float = 1.0  # first wait before a retry; doubles each time, with as much jitter again
    backoff_max_s: float = 60.0
    retry_after_max_s: float = 120.0  # a longer Retry-After fails the request instead of stalling the night
    # One attempt, from sending to the last body byte: the read timeout alone lets a slow trickle run for ever.
    deadline_s: float = 120.0
    max_bytes: int = 64 * 2**20


@dataclass(frozen=True)
class Pacing:
    """Politeness per source: the least time between two requests and the most requests in one fetch."""

    min_interval_s: float = 0.0
    max_requests: int = 40


# vast.ai documents about 10 searches a minute per IP; the others document no limit for these reads. Hugging Face
# limits requests per 5-minute window and answers 429 with Retry-After past it; a night asks a few hundred small
# config.json files, most of them answered 304 (unchanged).
DEFAULT_PACING = {
    "vastai": Pacing(min_interval_s=6.0, max_requests=30),
    "runpod": Pacing(min_interval_s=1.0, max_requests=10),
    "verda": Pacing(min_interval_s=0.5, max_requests=10),
    "fx": Pacing(min_interval_s=0.5, max_requests=10),
    "openrouter": Pacing(min_interval_s=0.5, max_requests=10),
    "huggingface": Pacing(min_interval_s=0.2, max_requests=500),
    "skypilot": Pacing(min_interval_s=0.2, max_requests=60),
}
# Every cloud of SkyPilot's catalog schema v8 that lists GPUs, less the markets read directly (vast, runpod, verda).
SKYPILOT_CLOUDS = ("aws", "azure", "cudo", "daytona", "gcp", "hyperbolic", "hyperstack", "jarvislabs", "lambda",
                   "lium", "mithril", "nebius", "oci", "primeintellect", "seeweb", "shadeform", "spheron", "yotta")


@dataclass(frozen=True)
class Settings:
    vastai_url: str = "https://console.vast.ai"
    runpod_url: str = "https://api.runpod.io"
    verda_url: str = "https://api.verda.com"
    verda_pricing_url: str = "https://datacrunch.io/products"  # keyless fallback page; layout in scrapers/verda.py
    ecb_url: str = "https://www.ecb.europa.eu"
    frankfurter_url: str = "https://api.frankfurter.dev"
    openrouter_url: str = "https://openrouter.ai"
    huggingface_url: str = "https://huggingface.co"
    skypilot_url: str = "https://raw.githubusercontent.com/skypilot-org/skypilot-catalog/master"
    skypilot_clouds: tuple[str, ...] = SKYPILOT_CLOUDS
    hf_models: tuple[str, ...] = ()  # repositories to follow beside the catalogue's and the API listings'
    vastai_limit: int = 3000  # offers per search; the API has no pagination
    runpod_api: str = "auto"  # auto (REST v2 when a key is set, else GraphQL) | graphql | rest
    runpod_api_key: str | None = field(default=None, repr=False)
    verda_client_id: str | None = field(default=None, repr=False)
    verda_client_secret: str | None = field(default=None, repr=False)
    hf_token: str | None = field(default=None, repr=False)  # for gated repositories; sent to huggingface_url only
    http: HttpSettings = HttpSettings()
    pacing: Mapping[str, Pacing] = field(default_factory=lambda: dict(DEFAULT_PACING))

    def pacing_for(self, source: str) -> Pacing:
        return self.pacing.get(source, Pacing())

    def secrets(self) -> set[str]:
        """Every credential value, so anything written can be scrubbed of them."""
        return {s for s in (self.runpod_api_key, self.verda_client_id, self.verda_client_secret, self.hf_token) if s}

    def with_pacing(self, **overrides: Pacing) -> "Settings":
        return replace(self, pacing={**self.pacing, **overrides})


def _first(env: Mapping[str, str], *names: str) -> str | None:
    return next((env[n] for n in names if env.get(n)), None)


def repo_list(text: str, setting: str) -> tuple[str, ...]:
    """Repositories from a comma- or space-separated setting, each owner/name; SettingsError naming the setting."""
    repos = tuple(r for r in re.split(r"[\s,]+", text) if r)
    bad = [r for r in repos if not REPO.fullmatch(r)]
    if bad:
        raise SettingsError(f"{setting}: {', '.join(repr(r) for r in bad)} is not a Hugging Face repository (owner/name)")
    return repos


def cloud_list(text: str) -> tuple[str, ...]:
    """Catalog clouds from a comma- or space-separated setting, each a lower-case directory name."""
    clouds = tuple(dict.fromkeys(c.lower() for c in re.split(r"[\s,]+", text) if c))
    bad = [c for c in clouds if not re.fullmatch(r"[a-z0-9_-]+", c)]
    if bad:
        raise SettingsError(f"GPULEDGER_SKYPILOT_CLOUDS: {', '.join(repr(c) for c in bad)} is not a cloud name")
    return clouds


def from_env(env: Mapping[str, str] | None = None) -> Settings:
    """Settings from GPULEDGER_* (URLs, limits, HTTP knobs) and the providers' own credential variables.

    Credentials come from the environment, else from the secrets file (see read_secrets).
    """
    env = os.environ if env is None else env
    env = read_secrets(secrets_file(env)) | {k: v for k, v in env.items() if v}
    base = Settings()
    http = HttpSettings(
        connect_timeout_s=float(env.get("GPULEDGER_HTTP_CONNECT_TIMEOUT_S", base.http.connect_timeout_s)),
        read_timeout_s=float(env.get("GPULEDGER_HTTP_TIMEOUT_S", base.http.read_timeout_s)),
        attempts=int(env.get("GPULEDGER_HTTP_ATTEMPTS", base.http.attempts)),
        backoff_s=float(env.get("GPULEDGER_HTTP_BACKOFF_S", base.http.backoff_s)),
        deadline_s=float(env.get("GPULEDGER_HTTP_DEADLINE_S", base.http.deadline_s)),
        max_bytes=int(env.get("GPULEDGER_HTTP_MAX_BYTES", base.http.max_bytes)),
    )
    pacing = {
        name: replace(p, min_interval_s=float(env[f"GPULEDGER_{name.upper()}_MIN_INTERVAL_S"]))
        if env.get(f"GPULEDGER_{name.upper()}_MIN_INTERVAL_S") else p
        for name, p in DEFAULT_PACING.items()
    }
    return Settings(
        vastai_url=env.get("GPULEDGER_VASTAI_URL", base.vastai_url),
        runpod_url=env.get("GPULEDGER_RUNPOD_URL", base.runpod_url),
        verda_url=env.get("GPULEDGER_VERDA_URL", base.verda_url),
        verda_pricing_url=env.get("GPULEDGER_VERDA_PRICING_URL", base.verda_pricing_url),
        ecb_url=env.get("GPULEDGER_ECB_URL", base.ecb_url),
        frankfurter_url=env.get("GPULEDGER_FRANKFURTER_URL", base.frankfurter_url),
        openrouter_url=env.get("GPULEDGER_OPENROUTER_URL", base.openrouter_url),
        huggingface_url=env.get("GPULEDGER_HF_URL", base.huggingface_url),
        skypilot_url=env.get("GPULEDGER_SKYPILOT_URL", base.skypilot_url),
        skypilot_clouds=cloud_list(env.get("GPULEDGER_SKYPILOT_CLOUDS", ",".join(base.skypilot_clouds))),
        hf_models=repo_list(env.get("GPULEDGER_HF_MODELS", ""), "GPULEDGER_HF_MODELS"),
        vastai_limit=int(env.get("GPULEDGER_VASTAI_LIMIT", base.vastai_limit)),
        runpod_api=env.get("GPULEDGER_RUNPOD_API", base.runpod_api),
        runpod_api_key=_first(env, "RUNPOD_API_KEY"),
        verda_client_id=_first(env, "VERDA_CLIENT_ID", "DATACRUNCH_CLIENT_ID"),
        verda_client_secret=_first(env, "VERDA_CLIENT_SECRET", "DATACRUNCH_CLIENT_SECRET"),
        hf_token=_first(env, "HF_TOKEN"),
        http=http,
        pacing=pacing,
    )
