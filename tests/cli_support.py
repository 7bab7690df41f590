"""The commands in-process, as a user types them: typer's runner on the app (no process start-up per call)."""

from click.testing import Result
from typer.testing import CliRunner

from flows.cli.app import app

runner = CliRunner()


def invoke(*args: str, code: int = 0) -> Result:
    """Run `gpuledger ARGS`; the exit code must be `code` (the output says why when it is not)."""
    result = runner.invoke(app, list(args))
    assert result.exit_code == code, result.output
    return result


def gpuledger(*args: str, code: int = 0) -> str:
    """What `gpuledger ARGS` prints; the exit code must be `code`."""
    return invoke(*args, code=code).output
