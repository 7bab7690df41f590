"""Live per-source progress (requests, records) for commands that fetch, drawn only on a terminal."""

from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn

DONE = {"loaded": "[green]loaded[/green]", "failed": "[red]failed[/red]"}


@contextmanager
def live_progress(console: Console | None = None) -> Iterator[None]:
    """While the block runs, one line per source: its stage, requests sent and records loaded.

    Drawn on stderr when it is a terminal; in a log or a pipe nothing is drawn (the run's own summary and
    logs say what happened), so cron output stays as it was.
    """
    console = console or Console(stderr=True)
    if not console.is_terminal:
        yield
        return
    from flows import fetch  # only when drawing: it brings the HTTP stack

    progress = Progress(SpinnerColumn(finished_text="•"), TextColumn("{task.description:<8}"),
                        TextColumn("{task.fields[stage]:<8}"), TextColumn("requests {task.fields[requests]:>3}"),
                        TextColumn("records {task.fields[records]:>6}"), TextColumn("listings {task.fields[listings]:>6}"),
                        console=console)
    tasks: dict[str, int] = {}

    def show(event: fetch.SourceProgress) -> None:
        if event.source not in tasks:
            tasks[event.source] = progress.add_task(event.source, total=None, stage="", requests=0, records="—",
                                                    listings="—")
        task = tasks[event.source]
        fields = {"stage": DONE.get(event.stage, event.stage), "requests": event.requests}
        if event.records is not None:
            fields |= {"records": event.records, "listings": event.listings}
        progress.update(task, **fields)
        if event.stage in DONE:
            progress.update(task, total=1, completed=1)

    with progress, fetch.progress_to(show):
        yield
