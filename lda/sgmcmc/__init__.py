"""The SG-MCMC samplers of the complete recipe (docs/samplers.md): steps, their D(z) and Q(z),
the recipe oracle, the gradient, step schedules, averaging and SGRHMC's split; SCIR in
:mod:`.scir`.

Imports nothing itself, so :mod:`lda.config` reads :mod:`.hyper` and :mod:`.schedules`
without torch.
"""
