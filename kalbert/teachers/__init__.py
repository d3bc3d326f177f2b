"""Teachers: the sentence models kalbert students learn from, behind one small contract (see ``backends``)."""
