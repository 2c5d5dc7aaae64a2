"""`kgnorm pretrain`: an encoder self-aligned on the ontologies' synonyms (kgnorm.methods.pretrain);
its options are the fields of the recipe's ``Options``, the work is the pretrain job's."""
from __future__ import annotations

from kgnorm.cli.common import info
from kgnorm.cli.train_cmds import options_command
from kgnorm.methods.pretrain.recipe import CONFIG_OPTIONS, Options


def _pretrain(opts: Options, store: str | None, quiet: bool) -> None:
    from kgnorm.jobs.pretrain import pretrain

    def log_line(rec: dict) -> None:
        info(f"step {rec['step']} (epoch {rec['epoch'] + 1}): loss {rec['loss']:.4f}, mined pairs "
             f"{rec['positive_pairs']:.0f}+ / {rec['negative_pairs']:.0f}-, {rec['seconds']:.0f}s", quiet)

    result = pretrain(opts.ontology, opts.out, store=store, encoder=opts.encoder, max_minutes=opts.max_minutes,
                      threads=opts.threads, resume=opts.resume, progress=not quiet, on_log=log_line,
                      **{k: getattr(opts, k) for k in CONFIG_OPTIONS})
    how = "all epochs" if result.complete else "stopped by the budget; --resume continues"
    info(f"pretrained {result.global_step} step(s), {result.epochs_completed} epoch(s) in {result.elapsed:.0f}s "
         f"({how}){' after resuming' if result.resumed else ''}", quiet)
    info(f"encoder → {opts.out} (pass it as --encoder, pooling {opts.pooling})", quiet)


pretrain_cmd = options_command(Options, _pretrain, "pretrain_cmd")
