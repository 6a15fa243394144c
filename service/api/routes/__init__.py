"""One router per concern; ``create_app`` includes them all."""
