"""BNE (Phan et al. 2019): biomedical name encoder with synonym and conceptual objectives."""
