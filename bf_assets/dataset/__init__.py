"""Dataset-level review: the experiment plan, manual quarantine, coverage, sandbox parity,
the release verdict, the coverage picture and the report (``checks.md`` §2 dataset level, §3).

:func:`bf_assets.dataset.assemble.assemble` reviews a corpus of trials as a whole; its
``decision`` is the one export decision every output is a view of.
"""

from bf_assets.dataset.plan import PlanError, load_plan
from bf_assets.dataset.quarantine import QuarantineError, load_quarantine

__all__ = ["PlanError", "QuarantineError", "load_plan", "load_quarantine"]
