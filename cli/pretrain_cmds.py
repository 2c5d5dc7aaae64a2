"""`kgnorm pretrain`: an encoder self-aligned on the ontologies' synonyms (kgnorm.methods.pretrain);
its options are the fields of the recipe's ``Options``."""
from __future__ import annotations

from kgnorm.cli.train_cmds import options_command
from kgnorm.methods.pretrain.recipe import Options, train

pretrain_cmd = options_command(Options, train, "pretrain_cmd")
