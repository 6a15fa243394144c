"""The HTTP API (``service.api.app``): reads Redis only, so several instances serve one worker."""
