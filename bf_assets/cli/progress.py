"""Progress of long work on stderr (``rich``): a bar for work with a known size, a spinner
for the rest; silent when stderr is not a terminal (pipes, CI logs, ``--json`` consumers)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

Advance = Callable[[int], None]


class Phases:
    """One line per phase of a command (the walk, the review, the release job), shown while
    it runs and left as done."""

    def __init__(self, stream: TextIO | None = None, *, enabled: bool | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled

    @contextmanager
    def phase(self, description: str, total: int | None = None) -> Iterator[Advance]:
        """A phase: ``total`` units (a bar) or unknown (a spinner); yields ``advance(n)``."""
        if not self.enabled:
            yield lambda _n: None
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        columns = [SpinnerColumn(), TextColumn("{task.description}")]
        if total is not None:
            columns += [BarColumn(), MofNCompleteColumn()]
        bar = Progress(*columns, TimeElapsedColumn(), console=Console(file=self.stream))
        with bar:
            task = bar.add_task(description, total=total)
            yield lambda n: bar.advance(task, n)
            if total is not None:
                bar.update(task, completed=total)
