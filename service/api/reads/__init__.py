"""The pre-rendered reads: the refresher's view of Redis, the bodies it renders, the
pipeline's status, and the layer that answers the hot GETs before routing.
"""
