"""Learners: scikit-learn-compatible estimators that map feature vectors to variant names."""
from .preprocessing import LogHeavyTails
from .svm import SVMSelector

__all__ = ["LogHeavyTails", "SVMSelector"]
