import polars as pl
import pytest

from warehouse import csv_safe


@pytest.mark.parametrize(("text", "written"), [
    ('=HYPERLINK("https://evil.test/","x")', "'=HYPERLINK(\"https://evil.test/\",\"x\")"),
    ("+cmd|' /C calc'!A0", "'+cmd|' /C calc'!A0"), ("-2+3", "'-2+3"), ("@SUM(A1)", "'@SUM(A1)"),
    ("\t=1", "'\t=1"), ("\r=1", "'\r=1"),
    ("-5", "-5"), ("+1.5e3", "+1.5e3"), ("-.25", "-.25"),  # plain numbers cannot be formulas
    ("FIN-01", "FIN-01"), ("H100 = fast", "H100 = fast"), ("", ""), (None, None),
])
def test_a_text_cell_a_spreadsheet_would_run_gets_a_leading_apostrophe(text, written):
    frame = pl.DataFrame({"text": [text]}, schema={"text": pl.String})
    assert csv_safe.frame(frame)["text"].to_list() == [written]


def test_numbers_and_other_types_are_never_touched():
    frame = pl.DataFrame({"usd": [-1.5, 2.0], "count": [-3, 4], "ok": [True, False]})
    assert csv_safe.frame(frame).equals(frame)
