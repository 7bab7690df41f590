"""A real S3 protocol server on 127.0.0.1 (moto's server mode, in its own process) and the AWS environment that
points at it.

pyarrow's S3 client (C++) and delta-rs (Rust) bypass the Python network guard, so every test that touches s3://
URLs sets AWS_ENDPOINT_URL to this server, fake credentials, and switches the instance-metadata lookup off.

The server runs in a child process because delta-rs holds the GIL through some calls (opening a table's
history, measured with deltalake 1.6): a server thread in the test's own process would then never answer, and
the call would hang until its timeout.
"""

import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).parents[1]


@dataclass
class S3Server:
    """A moto S3 server bound to 127.0.0.1 only; stop() and start() again keep its buckets (moto's state lives in
    the child process, which only closes its listening socket), as a store that was down for a while would."""

    port: int = 0
    _child: subprocess.Popen | None = field(default=None, repr=False)

    def _say(self, command: str) -> str:
        self._child.stdin.write(command + "\n")
        self._child.stdin.flush()
        answer = self._child.stdout.readline().strip()
        if not answer:
            raise RuntimeError(f"the S3 server process ended: exit {self._child.wait(timeout=10)}")
        return answer

    def start(self) -> "S3Server":
        if self._child is None:
            self._child = subprocess.Popen([sys.executable, "-m", "tests.s3_support"], cwd=ROOT, text=True,
                                           stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.port = int(self._say(f"start {self.port}").removeprefix("port "))
        return self

    def stop(self) -> None:
        """Close the listening socket: connections are refused until start(), the buckets stay."""
        self._say("stop")

    def close(self) -> None:
        """End the server process (its buckets with it)."""
        if self._child is not None:
            self._child.stdin.close()
            self._child.wait(timeout=30)
            self._child = None

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


def serve() -> None:
    """The child process: `start PORT` (0: any free port) answers `port N`, `stop` answers `stopped`; it ends when
    its standard input closes, so it never outlives the tests."""
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one access-log line per request otherwise
    server, running = None, False
    for line in sys.stdin:
        command, *argument = line.split()
        if command == "start":
            server = ThreadedMotoServer(ip_address="127.0.0.1", port=int(argument[0]), verbose=False)
            server.start()
            running = True
            host, port = server.get_host_and_port()
            assert host == "127.0.0.1"
            print(f"port {port}", flush=True)
        elif command == "stop":
            server.stop()
            running = False
            print("stopped", flush=True)
    if running:
        server.stop()


if __name__ == "__main__":
    serve()
