"""The trained mention detector (`kgnorm train ner`): BIO token classification on a Hugging Face
encoder, optional CRF and dictionary-match features. ``load_ner(model_dir)`` gives a
:class:`~kgnorm.ner.spans.MentionDetector`."""
