"""DAN (Fivez et al. 2021): a deep averaging network over name inputs, trained on hierarchy levels."""
