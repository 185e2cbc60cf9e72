"""Batch scoring: files in, verdicts and quality tables out, with the agents' own code
(``eval answers``, ``eval summaries``, ``score-quality``, ``build-idf``, ``export-quality``,
``schemas``)."""
