"""Search assets: the vectors of the raw events, a derived layer over ingest."""

import dagster as dg

from memory_platform.defs.ingest.assets import raw_events
from memory_platform.progress import Tracker
from memory_platform.query.embeddings import embed_missing, get_embedder
from memory_platform.resources import DatabaseResource
from memory_platform.resources.common import daily_partitions


@dg.asset(
    group_name="search",
    kinds={"postgres", "pgvector", "python"},
    partitions_def=daily_partitions,
    backfill_policy=dg.BackfillPolicy.single_run(),
    deps=[raw_events],
)
def event_embeddings(
    context: dg.AssetExecutionContext, database: DatabaseResource
) -> dg.MaterializeResult:
    """Vectors of each day's events in table `event_embeddings`, one row per (model, event,
    chunk): the model name and dimension, the chunk's character span in the event's text,
    and the hash of the exact model input. One partition is one UTC day of event time.
    The model is MEMORY_PLATFORM_EMBEDDER (default `local-ctx2`: all-MiniLM-L6-v2 reading
    each turn with its two previous turns, stored as `all-MiniLM-L6-v2+ctx2`, 384 dims,
    offline; `local`: the plain model; `openai`: text-embedding-3-small, 1536). Only events
    without vectors for that model are embedded: conversation turns first, newest first
    (on a backlog of thousands of turns, first an interim vector of each turn alone, then
    its real one), then tool calls and output; an input already embedded elsewhere reuses
    its vector; blank events are skipped; an event gets at most 16 chunk vectors (its first
    15 and its last), tool traffic 2. Raw events are read, never changed."""
    window = context.partition_time_window
    embedder = get_embedder()
    tracker = Tracker(f"embedding ({embedder.name})", "events", report=context.log.info)
    counts = embed_missing(database.database(), embedder, start=window.start, end=window.end,
                           progress=tracker.update)
    tracker.finish()
    keys = context.partition_keys
    context.log.info(f"{embedder.name}: {counts}")
    return dg.MaterializeResult(
        metadata={
            "partitions": f"{keys[0]}..{keys[-1]}" if len(keys) > 1 else keys[0],
            "model": embedder.name,
            "dims": embedder.dims,
            "events_embedded": counts["events"],
            "turns_given_interim_vectors": counts["interim"],
            # onnxruntime-int8, numpy (the int8 model unavailable: see the run's log), ...
            "interim_vectors_from": counts["interim_runtime"] or "no interim step",
            "interim_vectors_replaced": counts["upgraded"],
            "turns_searchable_after_seconds": counts["first_kinds_seconds"],
            "chunks_written": counts["chunks"],
            "vectors_computed": counts["embedded"],
            "vectors_reused": counts["reused"],
            "blank_events_skipped": counts["blank"],
            "seconds": counts["seconds"],
        }
    )
