"""Learning from the stream: worker, worker group, session, evaluation, model store."""
