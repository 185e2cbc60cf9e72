"""``python scripts/rq_eval.py ...``: the retrieval A/B harness under the name spec 001 gives it.

The same as ``verdictflow rq-eval ...``
(:mod:`verdictflow.scoring_jobs.retrieval_eval.command`); kept as a
script so the scoring job itself never imports the command line.
"""

from __future__ import annotations

import sys

from verdictflow.cli import main

if __name__ == "__main__":
    sys.argv = [sys.argv[0], "rq-eval", *sys.argv[1:]]
    main()
