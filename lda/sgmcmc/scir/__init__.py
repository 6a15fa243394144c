"""SCIR: SGRLD's diffusion integrated exactly (the CIR transition and SCIR's dense step,
:mod:`.transition`), its lazy chain that steps only the minibatch's columns (:mod:`.lazy`) and
that chain as a learner's (:mod:`.chain`), with their compiled kernels.
"""
