"""``/infer``: the published model cached per process, texts batched onto inference threads,
and the cap on requests taken at once.
"""
