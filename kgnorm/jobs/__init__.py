"""The jobs: one module per `kgnorm` command, each a whole run as one library call (read the
inputs, open the model and the store, call the generic packages, write the results). The CLI
and :class:`kgnorm.api.Workbench` call these and nothing else; nothing below imports them."""
