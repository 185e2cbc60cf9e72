"""Offline jobs: they run the same evaluators as the agents, without a broker."""
