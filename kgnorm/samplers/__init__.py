"""kgnorm.samplers"""
from kgnorm.samplers.concept_batch import ConceptBatchSampler
from kgnorm.samplers.base import EpochSeeded, Pair, Triplet
from kgnorm.samplers.levels import LevelTripletSampler, distance_weighted_negatives
from kgnorm.samplers.parents import ParentPositiveSampler
from kgnorm.samplers.random import RandomNegativeSampler
from kgnorm.samplers.siblings import SiblingNegativeSampler

__all__ = ["ConceptBatchSampler", "EpochSeeded", "Pair", "Triplet", "LevelTripletSampler",
           "distance_weighted_negatives", "ParentPositiveSampler", "RandomNegativeSampler",
           "SiblingNegativeSampler"]
