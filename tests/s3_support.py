"""A real S3 protocol server on 127.0.0.1 (moto's server mode) and the AWS environment that points at it.

pyarrow's S3 client is C++ and bypasses the Python network guard, so every test that touches s3:// URLs sets
AWS_ENDPOINT_URL to this server, fake credentials, and switches the instance-metadata lookup off.
"""

import logging
import uuid
from dataclasses import dataclass

from moto.server import ThreadedMotoServer

logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one access-log line per request otherwise


@dataclass
class S3Server:
    """A moto S3 server bound to 127.0.0.1 only; stop() and start() again keep its buckets (moto's state
    lives in the process), as a store that was down for a while would."""

    port: int = 0

    def start(self) -> "S3Server":
        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=self.port, verbose=False)
        self._server.start()
        host, self.port = self._server.get_host_and_port()
        assert host == "127.0.0.1"
        return self

    def stop(self) -> None:
        self._server.stop()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}

    def bucket(self) -> str:
        """A new, empty bucket: each test gets its own."""
        from pyarrow import fs

        name = f"test-{uuid.uuid4().hex[:12]}"
        fs.S3FileSystem(endpoint_override=self.endpoint, access_key="testing", secret_key="testing",
                        region="us-east-1", allow_bucket_creation=True).create_dir(name)
        return name


def point_at(monkeypatch, server: S3Server) -> None:
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3", "AWS_REGION"):
        monkeypatch.delenv(name, raising=False)
    for name, value in server.env().items():
        monkeypatch.setenv(name, value)
