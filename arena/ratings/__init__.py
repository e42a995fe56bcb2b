"""Ratings: the Elo fit with its intervals (:mod:`arena.ratings.fit`, ``python -m arena.ratings``) and
their live and final publication (:mod:`arena.ratings.publication`)."""
