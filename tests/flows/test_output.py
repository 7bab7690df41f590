"""Rendering for the terminal and for other programs: a table written to a pipe is the table rich would draw."""

import io
import json
import re

from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console
from rich.table import Table
from rich.text import Text

from flows.cli import output
from flows.cli.output import Format, Rows, render

# printable text of one line, wide characters included (rich counts them as two cells)
CELL = st.text(st.characters(blacklist_categories=["Cc", "Cs", "Zl", "Zp"]), max_size=12).filter(str.isprintable)


def _rich(columns: list[str], numeric: list[bool], cells: list[list[str]]) -> str:
    buffer = io.StringIO()
    table = Table()
    for name, right in zip(columns, numeric, strict=True):
        table.add_column(Text(name), justify="right" if right else "left", overflow="fold")
    for row in cells:
        table.add_row(*map(Text, row))
    Console(file=buffer, width=output.PIPE_WIDTH).print(table)
    return buffer.getvalue()


@st.composite
def tables(draw):
    width = draw(st.integers(1, 5))
    columns = draw(st.lists(CELL, min_size=width, max_size=width))
    numeric = draw(st.lists(st.booleans(), min_size=width, max_size=width))
    cells = draw(st.lists(st.lists(CELL, min_size=width, max_size=width), max_size=6))
    return columns, numeric, cells


@given(tables())
def test_a_table_for_a_pipe_is_drawn_as_rich_draws_it(table):
    columns, numeric, cells = table
    drawn = output._boxed(columns, numeric, cells)
    assert drawn is None or drawn + "\n" == _rich(columns, numeric, cells)


def test_what_the_commands_print_is_drawn_directly():
    cells = [["H100 SXM5 80GB", "2.5 "], ["中文 ×8", "—"], [" leading", ""]]
    drawn = output._boxed(["gpu", "usd_per_gpu_hr"], [False, True], cells)
    assert drawn is not None
    assert drawn + "\n" == _rich(["gpu", "usd_per_gpu_hr"], [False, True], cells)


def test_cells_rich_must_lay_out_are_left_to_rich():
    assert output._boxed(["a"], [False], [["two\nlines"]]) is None
    assert output._boxed(["a"], [False], [["tab\there"]]) is None
    assert output._boxed(["a"], [False], [["e\u0301"]]) is None  # a combining accent joins the letter before it
    assert output._boxed(["a"], [False], [["👍🏻"]]) is None  # so does an emoji's skin tone
    assert output._boxed(["a"], [False], [["x" * output.PIPE_WIDTH]]) is None
    assert output._boxed([], [], []) is None


def test_render_writes_title_table_and_caption_to_a_pipe(capsys):
    rows = Rows(["gpu", "usd_per_gpu_hr"], [False, True], [("H100 [SXM]", 2.5), ("B200", None)])
    render(rows, Format.table, title="Prices [today]", caption="—: no offer")
    written = capsys.readouterr().out
    # a bracket is data, not rich markup: it reaches the pipe as it came
    assert written == "Prices [today]\n" + _rich(["gpu", "usd_per_gpu_hr"], [False, True],
                                                 [["H100 [SXM]", "2.5"], ["B200", "—"]]) + "—: no offer\n"


def test_a_multiline_cell_is_still_written_whole(capsys):
    render(Rows(["note"], [False], [("first\nsecond",)]), Format.table)
    written = capsys.readouterr().out
    assert "│ first  │\n│ second │" in written


HOSTILE = "\x1b]0;owned\x07\x1b[2J\x00\r\u202egpu\x9b0m\tx"  # title, clear, NUL, CR, right-to-left, C1 CSI, tab


def test_characters_a_terminal_would_act_on_are_written_escaped_in_every_format(capsys):
    assert output.terminal_text(HOSTILE) == "\\x1b]0;owned\\x07\\x1b[2J\\x00\\r\\u202egpu\\x9b0m\\tx"
    assert output.terminal_text("line\nbreak, café, 中文") == "line\nbreak, café, 中文"
    for fmt in Format:
        render(Rows([HOSTILE], [False], [(HOSTILE,)]), fmt, title=HOSTILE, caption=HOSTILE)
        written = capsys.readouterr().out
        assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202e]", written), fmt
        assert "\\x1b]0;owned" in written or json.loads(written) == [{HOSTILE: HOSTILE}], fmt


def test_csv_is_spreadsheet_safe_and_numbers_stay_numbers(capsys):
    render(Rows(["offer_id", "usd_per_hr"], [False, True], [('=HYPERLINK("https://evil.test/")', -1.5), ("-5", 2.0)]),
           Format.csv)
    assert capsys.readouterr().out == 'offer_id,usd_per_hr\n"\'=HYPERLINK(""https://evil.test/"")",-1.5\n-5,2.0\n'


REASON = "TP 16 across separately rented hosts, which form no tensor-parallel group; needs 16 GPUs on one host"


def test_a_table_too_wide_for_the_terminal_moves_its_prose_to_numbered_notes(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    rows = Rows(["gpu", "usd_per_mtok", "not deployable because"], [False, True, False],
                [("H100 SXM5 80GB", 6.76, None), ("A100 80GB", 9.1, REASON), ("L40S 48GB", 12.0, REASON)])
    render(rows, Format.table)
    written = capsys.readouterr().out
    assert max(map(len, written.splitlines())) <= 80
    # one note per distinct text, its mark in each row that said it
    assert written.count("│ [1]") == 2 and "[2]" not in written
    note = written[written.index("[1] not deployable because:"):]
    assert " ".join(note.split()) == f"[1] not deployable because: {REASON}"


def test_a_table_that_fits_is_drawn_whole_and_csv_and_json_keep_every_column(capsys, monkeypatch):
    rows = Rows(["gpu", "method", "not deployable because"], [False, False, False],
                [("A100 80GB", "measured", REASON), ("L40S 48GB", "measured", REASON)])
    render(rows, Format.table)  # a pipe without $COLUMNS: as wide as it takes
    assert REASON in capsys.readouterr().out
    monkeypatch.setenv("COLUMNS", "40")
    render(rows, Format.table)
    narrow = capsys.readouterr().out
    assert max(map(len, narrow.splitlines())) <= 40
    assert "every row: method measured" in narrow  # a column of one value is said once
    render(rows, Format.json)
    assert json.loads(capsys.readouterr().out)[0]["not deployable because"] == REASON
    render(rows, Format.csv)
    assert capsys.readouterr().out.splitlines()[0] == "gpu,method,not deployable because"


def _refuse(name: str) -> None:
    raise ValueError(f"json wrote {name}, which strict parsers refuse")


def test_json_has_no_infinity_or_nan_a_parser_would_refuse(capsys):
    """An unbounded p99 wait (inf) or a NaN is null in json, nested or not; finite numbers and text pass as they are."""
    render(Rows(["gpu", "ttft_p99_s", "ratio"], [False, True, True], [("B200", float("inf"), float("nan")),
                                                                       ("H200", 1.5, -0.0)]), Format.json)
    text = capsys.readouterr().out
    parsed = json.loads(text, parse_constant=_refuse)
    assert parsed == [{"gpu": "B200", "ttft_p99_s": None, "ratio": None}, {"gpu": "H200", "ttft_p99_s": 1.5, "ratio": 0.0}]
    assert json.loads(output.printed_json({"rows": [[float("-inf"), 2.0]], "note": "inf"})) == {"rows": [[None, 2.0]],
                                                                                              "note": "inf"}
