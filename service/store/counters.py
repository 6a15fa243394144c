"""The names of every counter the worker and the scrapers publish, in one place.

The API exports each of them from its first answer at 0 (with every label it can have), so a
dashboard shows 0 rather than "No data" before the first scrape error or the first snapshot; the
worker and the scrapers count under the same names.
"""

from __future__ import annotations

# The worker's counters in every snapshot (zero until they happen), kept across restarts.
WORKER_COUNTERS = (
    "updates",
    "checkpoints",
    "nonfinite_restores",
    "dropped_docs",
    "empty_docs",
    "evals_skipped",
    "vocab_refreshes",
)
# What the worker adds to each snapshot beside them: live figures, not kept across restarts.
WORKER_LIVE_COUNTERS = (
    "redis_retries",
    "heldout_docs",
    "unacked",
    "evals_waiting",
    "scorer_restarts",
    "seeds_refused",  # seeds for a topic number with no live topic (topics that move)
)

# The scrapers' totals in the counters hash (skipped reasons are added as "skipped:<reason>").
SCRAPER_TOTALS = (
    "batches",
    "fetched",
    "queued",
    "duplicates",
    "rereads",
    "skipped",
    "titles_truncated",  # articles kept with their title cut to its bound
    "requests",
    "retries",
    "failures",
    "backpressure_waits",
    "redis_reconnects",
)
# Seconds the scrapers waited at the high-water mark (a float total beside SCRAPER_TOTALS).
SCRAPER_SECONDS = ("backpressure_wait_seconds",)

# Why a source skips an article or a response (the ``kind`` of streamlda_scrape_errors_total).
SKIP_REASONS = (
    "disambiguation",
    "empty",
    "id_too_long",
    "malformed_json",
    "malformed_page",
    "missing",
    "missing_fields",
    "missing_text",
    "namespace",
    "no_content",
    "no_pages",
    "no_revisions",
    "not_wikitext",
    "parse_memory",
    "parse_timeout",
    "redirect",
    "too_large",
    "undecodable",
    "unparsable",
)
