"""Thin adapters: one per RL environment framework, each re-expressing core.Episode."""
