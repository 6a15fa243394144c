"""SCIR: SGRLD's diffusion integrated exactly (the CIR transition, :mod:`.transition`), and its
lazy chain that steps only the minibatch's columns (:mod:`.lazy`), with their compiled kernels.
"""
