"""HTTP plumbing shared by every route: JSON errors, ETags, body limits, the Prometheus
exposition, uvicorn's protocol and the offline OpenAPI docs page.
"""
