"""The HTTP API: reads Redis only, so several instances can serve one worker."""

from service.api.app import create_app

__all__ = ["create_app"]
