"""`gpuledger report`: write the static report site for a date (the nightly flow writes it after the exports)."""

from pathlib import Path
from typing import Annotated

import duckdb
import typer

from flows.cli.common import fail, open_read_only, parse_day, resolve_name


def _folder(text: str | None) -> Path | None:
    """The --out folder (None: the default); a clear error for an empty name or a path that is not a folder."""
    if text is None:
        return None
    if not text.strip():
        raise fail("--out is empty: name the folder to write the report in")
    try:  # ~nosuchuser has no home; a name beyond the file system's limit cannot even be looked at
        path = Path(text).expanduser()
        misfit = path.exists() and not path.is_dir()
    except (RuntimeError, OSError) as exc:
        shown = text[:80] + ("..." if len(text) > 80 else "")
        raise fail(f"--out {shown}: {getattr(exc, 'strerror', None) or exc}") from None
    if misfit:
        raise fail(f"--out {text}: not a folder")
    return path


def report(
    day: Annotated[str | None, typer.Option("--date", help="The day to publish (YYYY-MM-DD); default the latest.")] = None,
    model: Annotated[list[str] | None, typer.Option(help="Only these models' pages (repeatable); default $GPULEDGER_REPORT_MODELS, else every model.")] = None,
    out: Annotated[str | None, typer.Option(metavar="FOLDER",
                                            help="The report's root folder; default $GPULEDGER_EXPORTS/report, or "
                                                 "$GPULEDGER_HOME/report when the exports are an object store.")] = None,
) -> None:
    """Write the day's market page and model pages as a static site that works offline; print its path."""
    from flows import report as site
    from flows import views

    when, root = parse_day(day, "--date"), _folder(out)
    con = open_read_only()
    try:
        ids = con.execute("select model_id from models").fetchall()
        models = [resolve_name(m, {i.lower(): i for (i,) in ids}, "model") for m in model or []]
        written = site.write_site(con, root, when, models or None)
    except (views.ViewError, duckdb.Error) as exc:
        raise fail(str(exc)) from None
    except OSError as exc:  # a folder that cannot be made or written: a path under a file, no permission, a full disk
        raise fail(f"cannot write the report in {root or site.report_root()}: {exc.strerror or exc}"
                   + (f" ({exc.filename})" if exc.filename else "")) from None
    finally:
        con.close()
    typer.echo(f"{len(written.pages)} pages for {written.day} in {written.index.parent}")
    typer.echo(str(written.index))
