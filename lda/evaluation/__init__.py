"""How good the topics are: held-out perplexity (docs/heldout.md) and its scorer, NPMI
coherence and diversity, drift between estimates, and the posterior spread of word weights.
"""
