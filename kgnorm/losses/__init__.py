"""Losses shared by methods, one per file (sentence-transformers' layout): a method imports the
one it trains with; none of them knows a method."""
from kgnorm.losses.marginal_nll import marginal_nll
from kgnorm.losses.multi_similarity import MultiSimilarityLoss, ms_loss
from kgnorm.losses.triplet import triplet_loss

__all__ = ["marginal_nll", "MultiSimilarityLoss", "ms_loss", "triplet_loss"]
