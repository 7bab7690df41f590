import pytest

from transforms.display import compact_label, integer_label, kw_label, pct_label, round_half, usd_label


@pytest.mark.parametrize(("value", "shown"), [
    (4712.0, "4.7k"), (410930.5, "411k"), (153060.3, "153k"), (614.2, "614"), (26.24, "26.2"), (5.99, "6.0"),
    (99.96, "100"), (999.6, "1.0k"), (None, "—"),
])
def test_compact_labels_follow_page_001(value, shown):
    assert compact_label(value) == shown


def test_the_tilde_marks_an_estimated_fp4_figure():
    assert compact_label(1401.0, approx=True) == "~1.4k"


@pytest.mark.parametrize(("value", "shown"), [(32142.5, "32,142"), (4660.5, "4,660"), (1827.84, "1,828"), (2000.0, "2,000")])
def test_integer_labels_round_half_to_even_like_page_000(value, shown):
    assert integer_label(value) == shown


def test_float_noise_never_decides_a_tie():
    assert integer_label(32142.500000000004) == "32,142"
    assert round_half(0.125, 2) == 0.12 and round_half(0.125, 2, "half_up") == 0.13


def test_money_power_and_percent():
    assert (usd_label(2480.0), usd_label(12.42), usd_label(1.0), usd_label(None)) == ("$2,480", "$12.42", "$1.00", "—")
    assert (kw_label(700.0), kw_label(1.4), kw_label(None)) == ("700 kW", "1.4 kW", "—")
    assert (pct_label(59.07), pct_label(57.5), pct_label(58.5)) == ("59%", "58%", "58%")
