"""Answer grading and minibatch scoring."""
