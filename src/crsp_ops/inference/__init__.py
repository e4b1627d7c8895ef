"""Generation backends, completion records and the InferenceContext for rollouts."""
