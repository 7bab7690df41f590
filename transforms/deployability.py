"""Which replicas someone could deploy, and, where none, what is missing: the rules of docs/deployability.md.

A replica of TP GPUs is one tensor-parallel group. Tensor parallelism exchanges activations several times per
layer, so it needs the fast link inside one host (NVLink, or PCIe within the machine): it runs on one listing's
GPUs. Beyond one host, a replica is deployable only on a cluster the provider sells with a scale-out fabric
(InfiniBand/RoCE): tensor parallelism inside each node, pipeline stages between nodes (the estimator charges the
network, transforms/estimator/decode.py `pipeline_seconds`). Separately rented machines talk over ordinary networks,
often in different buildings: no replica spans them. Consumer and workstation cards never span hosts, cluster or
not. Pure polars over a day's offers and the GPU catalogue.
"""

import polars as pl

from scrapers.base import CLUSTER_TIER

NODE_GPUS = 8  # one node or server: page 000's "8-GPU HGX node", the estimator's node_gpus, a bought server
# Form factors (gpus.form_factor) of parts sold in machines without a scale-out fabric: never across hosts.
HOST_BOUND_FORMS = r"(?i)consumer|workstation|laptop"


def host_gpus() -> pl.Expr:
    """GPUs one host of an offers row holds: a fixed listing's gpu_count, a per-GPU listing's pod size; NULL for a
    cluster listing, which spans hosts."""
    return (pl.when(pl.col("tier") == CLUSTER_TIER).then(None)
            .otherwise(pl.coalesce("max_gpu_count", "gpu_count")).cast(pl.Int64))


def part_classes(gpus: pl.DataFrame | None) -> pl.DataFrame:
    """Per part: whether its replicas may span hosts at all (`spans_hosts`), by its catalogue form factor."""
    if gpus is None:
        return pl.DataFrame(schema={"gpu": pl.String, "spans_hosts": pl.Boolean})
    return gpus.select(pl.col("name").alias("gpu"),
                       (~pl.col("form_factor").fill_null("").str.contains(HOST_BOUND_FORMS)).alias("spans_hosts"))


def capacity(offers: pl.DataFrame, gpus: pl.DataFrame | None = None) -> pl.DataFrame:
    """Per part listed that day (any provider, any price kind): the most GPUs one host offers (`largest_host`),
    the most one provider cluster offers (`largest_cluster`, NULL: none), and `spans_hosts` (NULL without the
    catalogue: no part is then known to span hosts, and a cluster listing prices no deployable replica)."""
    listed = offers.filter(pl.col("gpu").is_not_null())
    cluster = pl.col("tier") == CLUSTER_TIER
    return listed.group_by("gpu").agg(
        host_gpus().max().alias("largest_host"),
        pl.col("max_gpu_count").filter(cluster).max().cast(pl.Int64).alias("largest_cluster"),
    ).join(part_classes(gpus), on="gpu", how="left")


CAPACITY_COLUMNS = ("largest_host", "largest_cluster", "spans_hosts")


def may_span_hosts() -> pl.Expr:
    """Whether a part's replica may span the hosts of a provider cluster (capacity's spans_hosts; unknown: no)."""
    return pl.col("spans_hosts").fill_null(False)


def with_capacity(frame: pl.DataFrame, capacity: pl.DataFrame, *columns: pl.Expr) -> pl.DataFrame:
    """The frame with `columns`, computed beside the day's capacity of each row's gpu (shortfall and reason read
    it), and none of capacity's own columns left behind."""
    return frame.join(capacity, on="gpu", how="left", maintain_order="left").with_columns(*columns).drop(
        CAPACITY_COLUMNS)


def shortfall(gpus: pl.Expr) -> pl.Expr:
    """Why no listing of the day holds a replica of `gpus` GPUs (NULL when one host or one cluster does), from a
    frame with gpu, largest_host, largest_cluster and spans_hosts (capacity's columns): e.g. "needs 16 GPUs on one
    host; the largest GeForce RTX 3090 24GB host that day offers 8 (a consumer or workstation card: never across
    hosts)"."""
    gpu, host, cluster = pl.col("gpu"), pl.col("largest_host"), pl.col("largest_cluster")
    need = pl.format("needs {} GPUs on one host; the largest {} host that day offers {}", gpus, gpu,
                     host.fill_null(0))
    return (
        pl.when(gpus <= host.fill_null(0)).then(None)
        .when(pl.col("spans_hosts").is_null()).then(need)
        .when(~pl.col("spans_hosts")).then(pl.format("{} (a consumer or workstation card: never across hosts)", need))
        .when(cluster.is_null()).then(pl.format("{}, and no provider sells a {} cluster with a scale-out fabric",
                                                need, gpu))
        .when(gpus > cluster).then(pl.format("{}, and the largest {} cluster {}", need, gpu, cluster))
    )


def reason(deployable: pl.Expr, how: pl.Expr, gpus: pl.Expr) -> pl.Expr:
    """A row's `not_deployable_reason`: NULL when deployable, else how it was put together (`how`) and what the
    day's listings lack (`shortfall`)."""
    missing = shortfall(gpus)
    return pl.when(~deployable).then(
        pl.when(missing.is_null()).then(how).otherwise(pl.format("{}; {}", how, missing)))


def server_replica(gpus: pl.Expr, fabric: bool) -> tuple[pl.Expr, pl.Expr]:
    """(deployable, reason) of a replica of `gpus` GPUs on servers of NODE_GPUS each (owned hardware, a fleet): inside
    one server; across servers never for a consumer or workstation card, and for other parts only when the servers
    are joined by a scale-out `fabric`. Needs the frame's `spans_hosts`."""
    servers = (gpus + NODE_GPUS - 1) // NODE_GPUS
    across = pl.format("a replica of {} GPUs spans {} servers of {}", gpus, servers, NODE_GPUS)
    inside = gpus <= NODE_GPUS
    host_bound = pl.format("{}: a consumer or workstation card never spans hosts", across)
    spans = pl.col("spans_hosts").fill_null(False)
    if fabric:
        return inside | spans, pl.when(~inside & ~spans).then(host_bound)
    no_fabric = pl.format("{}: needs a scale-out fabric (switch and NICs), which the hardware prices leave out", across)
    return inside, pl.when(inside).then(None).when(~spans).then(host_bound).otherwise(no_fabric)
