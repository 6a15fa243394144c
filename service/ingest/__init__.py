"""Articles in: sources, wikitext cleaning, the scraper and the Redis stream it fills."""
