"""The five name encoders, one folder each (model, training, sampling specifics), found by
name through :mod:`kgnorm.methods.registry`."""
