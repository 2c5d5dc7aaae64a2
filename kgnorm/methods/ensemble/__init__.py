"""An ensemble of linkers (issue 28, item 4): a model directory that references N linker directories
and fuses their ranked concepts, by reciprocal rank or by normalized score: ``kgnorm train ensemble``."""
