"""The mathematics of streamlda: expanded-mean LDA learned with SG-MCMC. No I/O, no globals."""
