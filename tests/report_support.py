"""What the report tests share: a warehouse with several published days, and price_index where it is missing.

price_index is built by the `trends` work (see its schema); until that lands in this branch, the tests build
the table here from the offers by the agreed schema, so the report reads exactly the columns it will read then.
"""

import duckdb

PRICE_INDEX_SQL = """
create table price_index as
with base as (
    select snapshot_date, gpu, provider, price_kind, usd_per_gpu_hr from offers where gpu is not null
    union all
    select snapshot_date, gpu, 'all', price_kind, usd_per_gpu_hr from offers where gpu is not null),
agg as (
    select snapshot_date, gpu, provider, price_kind, count(*)::integer as listings,
           min(usd_per_gpu_hr) as min_usd_per_gpu_hr, quantile_cont(usd_per_gpu_hr, 0.1) as p10_usd_per_gpu_hr,
           median(usd_per_gpu_hr) as median_usd_per_gpu_hr, max(usd_per_gpu_hr) as max_usd_per_gpu_hr
    from base group by all)
select a.*,
       a.min_usd_per_gpu_hr / d1.min_usd_per_gpu_hr - 1 as min_change_1d,
       a.min_usd_per_gpu_hr / d7.min_usd_per_gpu_hr - 1 as min_change_7d,
       a.min_usd_per_gpu_hr / d30.min_usd_per_gpu_hr - 1 as min_change_30d,
       a.median_usd_per_gpu_hr / d1.median_usd_per_gpu_hr - 1 as median_change_1d,
       a.median_usd_per_gpu_hr / d7.median_usd_per_gpu_hr - 1 as median_change_7d,
       a.median_usd_per_gpu_hr / d30.median_usd_per_gpu_hr - 1 as median_change_30d,
       min(a.snapshot_date) over (partition by a.gpu, a.provider, a.price_kind) as first_seen_date,
       (a.snapshot_date - first_seen_date)::integer as days_since_first_seen,
       'ok' as quality
from agg a
left join agg d1 on d1.gpu = a.gpu and d1.provider = a.provider and d1.price_kind = a.price_kind
    and d1.snapshot_date = a.snapshot_date - 1
left join agg d7 on d7.gpu = a.gpu and d7.provider = a.provider and d7.price_kind = a.price_kind
    and d7.snapshot_date = a.snapshot_date - 7
left join agg d30 on d30.gpu = a.gpu and d30.provider = a.provider and d30.price_kind = a.price_kind
    and d30.snapshot_date = a.snapshot_date - 30
"""


def ensure_price_index(con: duckdb.DuckDBPyConnection) -> None:
    """Build price_index from the offers when the warehouse has no such table yet."""
    exists = con.execute("select count(*) from information_schema.tables where table_name = 'price_index'").fetchall()
    if not exists[0][0]:
        con.execute(PRICE_INDEX_SQL)
