"""The lake's Delta tables: a day is one commit, versions read back as published, two writers never corrupt the log."""

import threading
from datetime import date, datetime, timedelta

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from deltalake import write_deltalake

from warehouse import delta

DAY = date(2026, 11, 27)


def generation(n: int, day: date = DAY) -> pa.Table:
    """Generation n of a day: n + 1 rows, every value n, so a mix of two generations or a torn one shows."""
    rows = n + 1
    return pa.table({"snapshot_date": pa.array([day] * rows, pa.date32()), "gen": pa.array([n] * rows, pa.int64())})


def publish(uri: str, n: int, day: date = DAY, run_id: str | None = None) -> delta.Commit:
    return delta.publish_day(uri, "t", "snapshot_date", day, generation(n, day), {"run_id": run_id or f"run-{n}"}, 30)


def generations(table: pa.Table) -> list[int]:
    return pc.unique(table["gen"]).to_pylist()


@pytest.fixture(params=["folder", "s3"])
def uri(request, tmp_path) -> str:
    """The same tests on a folder and on an S3 bucket."""
    if request.param == "folder":
        return str(tmp_path / "lake" / "t")
    return request.getfixturevalue("s3") + "/lake/t"


def test_a_day_published_again_is_a_new_version_and_the_first_still_reads_the_first_rows(uri):
    first = publish(uri, 1)
    second = publish(uri, 2)
    assert (first.version, first.rows, first.replaced_rows) == (1, 2, 0)  # version 0 created the table
    assert (second.version, second.rows, second.replaced_rows) == (2, 3, 2)
    assert delta.read(delta.open_table(uri)).to_pydict() == generation(2).to_pydict()
    assert delta.read(delta.open_table(uri, first.version)).to_pydict() == generation(1).to_pydict()
    history = delta.history(delta.open_table(uri))
    assert [(h["version"], h["operation"], h["run_id"]) for h in history] == [
        (2, "WRITE", "run-2"), (1, "WRITE", "run-1"), (0, "CREATE TABLE", None)]


def test_a_days_commit_leaves_the_other_dates_alone(tmp_path):
    uri = str(tmp_path / "t")
    publish(uri, 1, DAY)
    publish(uri, 4, DAY + timedelta(days=1))
    publish(uri, 2, DAY)
    table = delta.open_table(uri)
    assert delta.read(table, [DAY])["gen"].to_pylist() == [2] * 3
    assert delta.read(table, [DAY + timedelta(days=1)])["gen"].to_pylist() == [4] * 5
    assert delta.published_dates(table) == {DAY, DAY + timedelta(days=1)}


def test_a_day_that_became_empty_is_emptied_by_its_commit(tmp_path):
    uri = str(tmp_path / "t")
    publish(uri, 2)
    emptied = delta.publish_day(uri, "t", "snapshot_date", DAY, generation(0).slice(0, 0), {"run_id": "rebuild"}, 30)
    assert (emptied.version, emptied.rows, emptied.replaced_rows) == (2, 0, 3)
    assert delta.read(delta.open_table(uri)).num_rows == 0
    assert DAY in delta.published_dates(delta.open_table(uri))  # published, as empty


def test_as_of_a_time_reads_the_last_version_committed_by_then(tmp_path):
    uri = str(tmp_path / "t")
    publish(uri, 1)
    between = datetime.now().astimezone()
    publish(uri, 2)
    assert generations(delta.read(delta.open_table(uri, between))) == [1]
    assert delta.parse_as_of("7") == 7
    assert delta.parse_as_of("2026-11-27T03:00:00").tzinfo is not None  # naive means UTC
    with pytest.raises(delta.NotPublished, match="version"):
        delta.open_table(uri, 99)
    with pytest.raises(delta.NotPublished, match="no lake table"):
        delta.open_table(str(tmp_path / "never"))


def test_a_reader_during_publishes_only_ever_sees_a_whole_version(s3):
    uri = f"{s3}/lake/t"
    publish(uri, 0)
    seen, torn, stop = set(), [], threading.Event()

    def reader():
        while not stop.is_set():
            rows = delta.read(delta.open_table(uri))  # a new reader each time, as another machine
            gens = generations(rows)
            if len(gens) != 1 or rows.num_rows != gens[0] + 1:
                torn.append((gens, rows.num_rows))
            seen.update(gens)

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for n in range(1, 9):
            publish(uri, n)
    finally:
        stop.set()
        thread.join()
    assert torn == []
    assert len(seen) >= 3  # the reader really overlapped the commits


def test_a_commit_lost_to_another_writer_of_the_same_date_is_written_again(uri, monkeypatch):
    publish(uri, 1)
    real_open, raced = delta._open, []

    def open_then_lose_the_race(at):
        table = real_open(at)  # this writer's snapshot ...
        if not raced:  # ... then another machine commits the same date before this writer does
            raced.append(at)
            publish(uri, 7, run_id="other-machine")
        return table

    monkeypatch.setattr(delta, "_open", open_then_lose_the_race)
    mine = publish(uri, 2, run_id="this-machine")
    assert mine.attempts == 2 and mine.version == 3
    assert [(h["version"], h["run_id"]) for h in delta.history(delta.open_table(uri))][:2] == [
        (3, "this-machine"), (2, "other-machine")]
    assert generations(delta.read(delta.open_table(uri))) == [2]
    assert generations(delta.read(delta.open_table(uri, 2))) == [7]


def test_two_publishers_racing_on_one_bucket_leave_a_whole_log_with_every_commit(s3):
    uri = f"{s3}/lake/t"
    start, commits, errors = threading.Barrier(2), [], []

    def publisher(first: int):
        start.wait()
        try:
            for n in range(first, first + 4):
                commits.append((n, publish(uri, n, DAY + timedelta(days=n % 2))))
        except Exception as exc:  # noqa: BLE001 - any failure is the finding
            errors.append(exc)

    threads = [threading.Thread(target=publisher, args=(first,)) for first in (10, 20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    table = delta.open_table(uri)
    history = delta.history(table)
    writes = sorted(h["run_id"] for h in history if h["operation"] == "WRITE")
    assert writes == sorted(f"run-{n}" for n in (*range(10, 14), *range(20, 24)))  # no commit overwritten
    assert [h["version"] for h in history] == list(range(table.version(), -1, -1))  # one log, no gap
    assert len({c.version for _, c in commits}) == 8
    # Both may create the table at once: the later CREATE TABLE is then rebased to a version of its own.
    assert {h["operation"] for h in history} == {"CREATE TABLE", "WRITE"}
    for day in (DAY, DAY + timedelta(days=1)):  # each date holds one whole generation: its last commit's
        n, _ = max(((n, c) for n, c in commits if c.day == day), key=lambda nc: nc[1].version)
        assert delta.read(table, [day]).to_pydict() == generation(n, day).to_pydict()


def test_a_schema_the_table_cannot_take_is_refused_whole(tmp_path):
    uri = str(tmp_path / "t")
    publish(uri, 1)
    wrong = generation(2).set_column(1, "gen", pa.array(["two"] * 3))
    with pytest.raises(delta.PublishError, match=str(tmp_path)):
        delta.publish_day(uri, "t", "snapshot_date", DAY, wrong, {}, 30)
    assert delta.open_table(uri).version() == 1 and generations(delta.read(delta.open_table(uri))) == [1]


def test_a_new_column_is_merged_into_the_table(tmp_path):
    uri = str(tmp_path / "t")
    publish(uri, 1)
    wider = generation(2, DAY + timedelta(days=1)).append_column("usd", pa.array([1.5] * 3))
    delta.publish_day(uri, "t", "snapshot_date", DAY + timedelta(days=1), wider, {}, 30)
    rows = delta.read(delta.open_table(uri))
    assert "usd" in rows.column_names
    assert sorted(rows["usd"].to_pylist(), key=str) == [1.5, 1.5, 1.5, None, None]


def test_an_unreachable_store_is_a_publish_error():
    """tests/conftest.py points every s3:// location at a closed port on 127.0.0.1."""
    with pytest.raises(delta.PublishError, match="127.0.0.1:9"):
        publish("s3://any-real-bucket/lake/t", 1)


def test_upkeep_compacts_small_files_vacuums_past_the_retention_and_checkpoints(tmp_path):
    uri = str(tmp_path / "t")
    publish(uri, 1)
    for n in (2, 3):  # another engine's appends: small files in one partition
        write_deltalake(uri, generation(n), mode="append")
    before = delta.read(delta.open_table(uri)).sort_by("gen")
    kept = delta.upkeep(uri, "t", retention_days=30)
    assert kept.compacted_files == 3 and kept.vacuumed_files == 0
    assert delta.read(delta.open_table(uri)).sort_by("gen").equals(before)
    assert generations(delta.read(delta.open_table(uri, 1))) == [1]  # within the retention: still readable
    assert (tmp_path / "t" / "_delta_log" / "_last_checkpoint").exists()

    gone = delta.upkeep(uri, "t", retention_days=0)
    assert gone.vacuumed_files == 3  # the files the compaction replaced
    assert delta.read(delta.open_table(uri)).sort_by("gen").equals(before)
    with pytest.raises(delta.NotPublished):
        delta.read(delta.open_table(uri, 1))
    assert delta.open_table(uri).metadata().configuration["delta.deletedFileRetentionDuration"] == "interval 0 days"


def test_every_tenth_commit_writes_a_checkpoint_so_opening_reads_few_commits(tmp_path):
    uri = str(tmp_path / "t")
    for n in range(delta.CHECKPOINT_INTERVAL):  # versions 1..10 after the table's creation (version 0)
        publish(uri, n % 3)
    log = tmp_path / "t" / "_delta_log"
    assert [p.name for p in log.glob("*.checkpoint.parquet")] == [f"{9:020d}.checkpoint.parquet"]  # the 10th commit


def test_floating_point_columns_are_written_byte_stream_split_and_read_back_exactly(tmp_path):
    """Mostly distinct doubles ($/M, capacity) are split, a replica's $/hr keeps its dictionary; the values read
    back bit for bit, and so they are in the files upkeep's compaction writes."""
    import glob

    import pyarrow.parquet as pq

    rows = 2_000
    data = pa.table({"snapshot_date": pa.array([DAY] * rows, pa.date32()), "model": ["m"] * rows,
                     "usd_per_mtok": [1 / (i + 3) for i in range(rows)], "own_usd_per_mtok": [i * 0.37 for i in range(rows)],
                     "replica_usd_per_hr": [2.5 + i % 4 for i in range(rows)]})
    uri = str(tmp_path / "t")

    def encodings() -> list[dict[str, tuple[str, ...]]]:
        found = []
        for path in glob.glob(f"{uri}/snapshot_date=*/*.parquet"):
            meta = pq.read_metadata(path).row_group(0)
            found.append({meta.column(i).path_in_schema: meta.column(i).encodings for i in range(meta.num_columns)})
        return found

    delta.publish_day(uri, "t", "snapshot_date", DAY, data, {}, 30)
    assert delta.read(delta.open_table(uri)).select(data.column_names).equals(data)
    assert "BYTE_STREAM_SPLIT" in encodings()[0]["own_usd_per_mtok"]
    write_deltalake(uri, data, mode="append")  # another engine's append: a second file upkeep compacts with the first
    assert delta.upkeep(uri, "t", retention_days=0).compacted_files == 2
    assert delta.read(delta.open_table(uri)).select(data.column_names).sort_by("usd_per_mtok").equals(
        pa.concat_tables([data, data]).sort_by("usd_per_mtok"))
    (written,) = encodings()  # the compacted file alone: vacuum removed the two it replaced
    assert "BYTE_STREAM_SPLIT" in written["usd_per_mtok"] and "BYTE_STREAM_SPLIT" in written["own_usd_per_mtok"]
    assert "RLE_DICTIONARY" in written["replica_usd_per_hr"] and "RLE_DICTIONARY" in written["model"]


def test_age_out_deletes_every_date_but_the_newest_in_one_commit_and_time_travel_still_reads_them(tmp_path):
    uri = str(tmp_path / "lake" / "t")
    days = [DAY + timedelta(days=n) for n in range(4)]
    for n, day in enumerate(days):
        publish(uri, n, day)
    before = delta.open_table(uri).version()
    removed = delta.age_out(uri, "t", 2, {"run_id": "upkeep-1"}, kept=lambda day: day == days[0])
    assert removed == [days[1]]  # days[0] is kept by the caller, days[2:] are the newest two
    table = delta.open_table(uri)
    assert sorted(delta.held(table)) == [days[0], *days[2:]]
    assert table.version() == before + 1
    [latest] = delta.history(table)[:1]
    assert (latest["aged_out"], latest["run_id"], latest["date"]) == ([days[1].isoformat()], "upkeep-1", None)
    assert generations(delta.read(delta.open_table(uri, before), [days[1]])) == [1]  # until vacuum reclaims it
    assert delta.age_out(uri, "t", 2, {}, kept=lambda day: day == days[0]) == []  # nothing more: no commit
    assert delta.open_table(uri).version() == before + 1


def test_a_table_partitioned_by_grid_takes_a_partition_per_grid(tmp_path):
    uri = str(tmp_path / "lake" / "estimates")
    grid = pa.table({"grid_sha256": ["abc", "abc"], "agg_tok_s": [1.5, 2.5]})
    commit = delta.publish_day(uri, "estimates", "grid_sha256", "abc", grid, {"run_id": "r"}, 30)
    table = delta.open_table(uri)
    assert (commit.rows, delta.held(table)) == (2, {"abc"})
    [write] = [h for h in delta.history(table) if h["operation"] == "WRITE"]
    assert (write["grid_sha256"], write["date"]) == ("abc", None)
