"""Verda's pricing page (read without API credentials): parse time against lexbor's own parse and walk.

Pages: tables nested in each other's cells, 44 KB and 176 KB (a nested 44 KB page took the old parse 205 s:
every table's rows were selected with its nested ones, every cell's text with its nested tables'), and a flat
page of one table of 5,000 rows. Baseline: lexbor's parse of the same bytes plus a walk of every node
(`traverse(include_text=True)`), what any reader of the page pays. In process, best of ROUNDS.
Targets: each page within 15x the baseline (a walk in Python: measured 7-13x), and the 176 KB nested page
within 6x the 44 KB one (linear: 4x; measured 1.7x). Before (main at 407aa2a): 22 KB nested took 9.4 s, 90 KB
would take most of an hour.
"""

import time

from selectolax.lexbor import LexborHTMLParser

from bench._support import verdict
from scrapers import verda
from warehouse.records import RawResponse

ROUNDS = 5
MAX_VS_BASELINE, MAX_GROWTH = 15.0, 6.0  # a walk in Python against lexbor's in C; linear growth is 4x
ROW = ("<tr><th>Instance</th><th>GPU</th><th>Price</th></tr>"
       "<tr><td>{i}H100.80S</td><td>1x H100 SXM5 80GB</td><td>$2.29/h</td></tr>")


def nested(tables: int) -> bytes:
    opened = "".join("<table>" + ROW.format(i=i) + "<tr><td>" for i in range(tables))
    return f"<html><body>{opened}{'</td></tr></table>' * tables}</body></html>".encode()


def flat(rows: int) -> bytes:
    body = "".join(ROW.split("</tr>", 1)[1].format(i=i) for i in range(rows))
    return f"<html><body><table>{ROW.split('</tr>', 1)[0]}</tr>{body}</table></body></html>".encode()


def fastest(work) -> float:
    times = []
    for _ in range(ROUNDS):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    print("pricing_page: Verda's pricing page parse vs lexbor's parse and walk")
    pages = {"nested 44 KB": nested(300), "nested 176 KB": nested(1200), "flat 5,000 rows": flat(5000)}
    parsed = {}
    checks = []
    for name, body in pages.items():
        raw = RawResponse("verda", "GET", "http://bench.test/products", 200, {}, body, None, None)
        parsed[name] = fastest(lambda raw=raw: verda.parse_pricing_page(raw))
        baseline = fastest(lambda body=body: sum(1 for _ in LexborHTMLParser(body).root.traverse(include_text=True)))
        print(f"  {name} ({len(body) / 1024:.0f} KB): parse {parsed[name] * 1000:.1f} ms, "
              f"baseline {baseline * 1000:.1f} ms")
        checks.append((f"{name} vs baseline", parsed[name] / baseline, MAX_VS_BASELINE))
    checks.append(("nested 176 KB vs 44 KB", parsed["nested 176 KB"] / parsed["nested 44 KB"], MAX_GROWTH))
    verdict("pricing_page", checks)


if __name__ == "__main__":
    main()
