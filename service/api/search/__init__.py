"""Search over the kept articles by topic and by likeness of topic proportions."""
