"""The typer command line; it only wires library pieces together."""
