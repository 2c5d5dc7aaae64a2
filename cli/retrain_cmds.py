"""`kgnorm retrain`: parse options, call kgnorm.jobs.retrain, print its summary."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from kgnorm.cli.common import QuietOpt, StoreOpt, print_report, setup


def retrain_cmd(
    model: Annotated[Path, typer.Option("--model", help="The BioSyn linker annotate used (kgnorm train biosyn): "
                                        "the linker starts from it.")],
    out: Annotated[Path, typer.Option("--out", help="Directory to write OUT/linker and OUT/ner into (use them as "
                                      "--model and --ner); neither may exist yet, unless the same retrain made them (run "
                                      "again after a kill, it finishes).")],
    ner: Annotated[Optional[Path], typer.Option("--ner", help="The trained detector annotate used (kgnorm train "
                                                "ner): retrained on the documents marked done. Without it, the "
                                                "linker only.")] = None,
    linker_minutes: Annotated[float, typer.Option("--linker-minutes", help="The linker's training budget.")] = 4.0,
    ner_minutes: Annotated[float, typer.Option("--ner-minutes", help="The detector's training budget.")] = 3.0,
    partial: Annotated[bool, typer.Option("--partial/--done-only", help="The detector learns the reviewed spans of "
                                          "documents not marked done too (the rest of them teaches nothing), or "
                                          "only the done documents.")] = False,
    ner_context: Annotated[Optional[int], typer.Option("--ner-context", help="Characters of text the detector reads "
                                                       "either side of a reviewed span in a document not done (0: "
                                                       "the whole document).", show_default="256")] = None,
    replay: Annotated[Optional[Path], typer.Option("--replay", help="The annotated corpus (PubTator or BioC) the "
                                                   "detector was trained on: as many of its documents as there are new "
                                                   "texts are learnt beside them, so that the detector keeps what it "
                                                   "knew. 50 others, never trained on, join the held-back documents "
                                                   "the mention confidence is refitted on, and judge: the retrained "
                                                   "detector by span F1, then the pair OUT would ship (threshold "
                                                   "included) by document F1 against the given pair; when it loses "
                                                   "more than 0.005, OUT drops the threshold, then gives back the "
                                                   "detector, the linker, or both, whichever first does not lose.",
                                                   show_default=False)] = None,
    min_done_documents: Annotated[int, typer.Option("--min-done-documents", min=1, help="Fewer documents marked done "
                                                    "(outside the held-back fifth) leave the detector as given: "
                                                    "fine-tuned on a handful, it shifts on other text while nothing "
                                                    "held back can show it. Not applied with --partial.")] = 10,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    threads: Annotated[Optional[int], typer.Option("--threads", help="Torch's intra-op threads (default: torch's).",
                                                   show_default=False)] = None,
    store: StoreOpt = None, quiet: QuietOpt = False,
) -> None:
    """Fine-tune the linker on every reviewed mention and the detector on the documents marked done,
    each from the model given; a fifth of the reviewed documents is held back to score both before
    and after and to refit annotate's mention confidence. Records a run."""
    setup(quiet)
    from kgnorm.jobs.retrain import retrain

    report = retrain(store, model, out, ner, linker_minutes=linker_minutes, ner_minutes=ner_minutes, seed=seed,
                     threads=threads, quiet=quiet, partial=partial, ner_context=ner_context, replay=replay,
                     min_done_documents=min_done_documents)
    print_report(report, quiet)
