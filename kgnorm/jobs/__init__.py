"""Jobs: one module per command, orchestrating the generic packages and the methods."""
