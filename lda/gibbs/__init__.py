"""Gibbs expectations of a minibatch's topic counts with beta fixed (docs/model.md, Eq. S.19):
the torch reference, the dense and sparse CPU kernels, their CUDA twins, and one dispatch.
"""
