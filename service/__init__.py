"""The streamlda service: sources, scraper, queue, worker, API and the command line."""
