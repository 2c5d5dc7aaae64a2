"""BioSyn (Sung et al. 2020): sparse + dense scores trained with synonym marginalization."""
