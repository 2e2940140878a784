"""Online scheduling: the event-driven simulator and its policies."""
