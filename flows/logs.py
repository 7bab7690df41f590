"""Log lines made terminal-safe as they are made: the one filter the commands' output passes (terminal_text)
applied to every log record, so a provider's text quoted in an error (an error body behind an escape sequence)
reaches a terminal, Prefect's console or its server escaped, never acted on."""

import contextlib
import logging

from flows.cli.output import terminal_text

_factory = logging.getLogRecordFactory()


def _safe_record(*args, **kwargs) -> logging.LogRecord:
    record = _factory(*args, **kwargs)
    with contextlib.suppress(TypeError, ValueError):  # arguments that do not fit: logging reports it when emitted
        record.msg, record.args = terminal_text(record.getMessage()), ()
    if record.exc_info and record.exc_info[1] is not None:  # a traceback quotes its exception's message
        record.exc_text = terminal_text(logging.Formatter().formatException(record.exc_info))
    return record


def terminal_safe() -> None:
    """Make every log record terminal-safe from now on (idempotent)."""
    if logging.getLogRecordFactory() is not _safe_record:
        logging.setLogRecordFactory(_safe_record)
