"""How much more this machine does with every core busy than with one: the context of the
bench's CPU figures.

A tool that forks workers (ours) is charged the CPU of all of them; on a machine whose
cores are hyper-threads of fewer physical cores, or shared with other guests, a second busy
core does not double the work done, and the same work costs more CPU seconds when both
cores run it.  ``parallel_probe`` runs one fixed pure-Python task (integer arithmetic and
a dict, no I/O) alone, then on every core at once, each in a fresh interpreter, and reports
the speed-up (the work done per second with every core busy over one) and how much the CPU
of one task grows when all run.

Standard library only.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any

# The task: about half a second of one core on the bench's machines.
TASK = """
import time
t = time.process_time()
d = {}
x = 0
for i in range(%d):
    x = (x * 1103515245 + i) %% 2147483648
    d[x & 4095] = i
print(time.process_time() - t)
"""
TASK_STEPS = 3_000_000


@dataclass(frozen=True)
class ParallelProbe:
    cpus: int
    alone_s: float  # wall of one task alone
    together_s: float  # wall of ``cpus`` tasks at once
    alone_cpu_s: float
    together_cpu_s: float  # mean CPU of one task when all run at once

    @property
    def speedup(self) -> float:
        """Work per second with every core busy, over one core: ``cpus`` at best."""
        return self.cpus * self.alone_s / self.together_s

    @property
    def cpu_growth(self) -> float:
        """How much more CPU the same task costs when every core is busy."""
        return self.together_cpu_s / self.alone_cpu_s

    def to_dict(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "speedup": round(self.speedup, 3),
            "cpu_growth": round(self.cpu_growth, 3),
        }


def _run(n: int, steps: int) -> tuple[float, list[float]]:
    """Wall of ``n`` tasks started together, and each task's CPU."""
    code = TASK % steps
    t0 = time.perf_counter()
    procs = [
        subprocess.Popen([sys.executable, "-S", "-c", code], stdout=subprocess.PIPE)
        for _ in range(n)
    ]
    outs = [p.communicate()[0] for p in procs]
    wall = time.perf_counter() - t0
    if any(p.returncode for p in procs):
        raise RuntimeError("the parallel probe's task failed")
    return wall, [float(o) for o in outs]


def parallel_probe(rounds: int = 3, steps: int = TASK_STEPS) -> ParallelProbe:
    """The best of ``rounds`` alternating runs of one task alone and of one per core."""
    cpus = os.cpu_count() or 1
    alone: list[tuple[float, list[float]]] = []
    together: list[tuple[float, list[float]]] = []
    for _ in range(rounds):
        alone.append(_run(1, steps))
        together.append(_run(cpus, steps))
    a_wall, a_cpu = min(alone)
    t_wall, t_cpu = min(together)
    return ParallelProbe(cpus, a_wall, t_wall, a_cpu[0], sum(t_cpu) / len(t_cpu))


if __name__ == "__main__":
    p = parallel_probe()
    print(
        f"{p.cpus} cores: {p.speedup:.2f}x the work of one with all busy; "
        f"a task's CPU grows {p.cpu_growth:.2f}x"
    )
