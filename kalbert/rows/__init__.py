"""Training rows: what a ``--train`` / ``--sts`` entry (a registered set and split, a graded-pair file, a corpus)
becomes before any model sees it.

Every verb that trains on rows (`sbert train`, `static train`) reads them here, so a new kind of row is written
once: ``references`` resolves and checks the entries (evaluation splits refused), ``pairs`` and
``question_passages`` make the rows of each kind (``inverse_cloze`` those of a corpus), ``negatives`` mines hard
negatives with a teacher, ``teacher_scores`` labels question -> passage rows with a teacher's vectors, ``sets`` holds
the typed results and ``build`` puts them together from one ``RowsConfig`` (``config``).
"""
