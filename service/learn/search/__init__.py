"""Search in the worker: the kept articles' shares (:mod:`.index`), kept current by a refolding
thread (:mod:`.refold`), as the worker's part (:mod:`.part`); docs/topics.md, "Searching the
kept articles"."""
