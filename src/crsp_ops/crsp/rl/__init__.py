"""The maths of one policy-gradient update: advantages, losses, aggregation, KL, the update."""
