"""How much CPU other processes used while a replay ran (Linux ``/proc``).

The embedded replay's clock is the measured time of real model calls, so a
second process on the same cores (an evaluation, a training run, a test suite)
slows every call and, through the batching it changes, the whole schedule. A
replay therefore records, per repeat, the cores that *other* processes kept
busy: the machine's busy CPU time (``/proc/stat``: user, nice, system, irq,
softirq, steal) minus this process's own (``/proc/self/stat``: utime, stime,
every thread), over the wall time. ``None`` where ``/proc`` is not there.
``/proc/stat`` counts every CPU of the machine: in a container limited to a
cpuset, work on CPUs the replay does not use counts too; so would processes
this one started (none does during a replay).
"""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

BUSY_FIELDS = (0, 1, 2, 5, 6, 7)  # user nice system [idle iowait] irq softirq steal
BUSY_FLAG = 0.1  # cores: a replay beside more foreign load than this is flagged


@dataclasses.dataclass(frozen=True)
class CpuSnapshot:
    wall: float
    machine_ticks: int | None  # busy ticks of every CPU since boot
    own_ticks: int | None  # this process's user + system ticks


def _machine_ticks(stat: str) -> int:
    """Busy ticks from ``/proc/stat``'s first (all-CPU) line."""
    first = stat.splitlines()[0].split()
    if first[0] != "cpu":
        raise ValueError("/proc/stat does not start with the 'cpu' line")
    values = [int(x) for x in first[1:]]
    return sum(values[i] for i in BUSY_FIELDS if i < len(values))


def _own_ticks(stat: str) -> int:
    """utime + stime from ``/proc/self/stat`` (fields 14 and 15; the command
    name, field 2, may hold spaces and parentheses, so split after its last ')')."""
    rest = stat[stat.rindex(")") + 2 :].split()
    return int(rest[11]) + int(rest[12])  # fields 14, 15 counted from 1


def snapshot(proc: Path = Path("/proc")) -> CpuSnapshot:
    """The machine's and this process's CPU ticks now (None: unreadable)."""
    try:
        machine = _machine_ticks((proc / "stat").read_text())
        own = _own_ticks((proc / "self" / "stat").read_text())
    except (OSError, ValueError, IndexError):
        machine = own = None
    return CpuSnapshot(time.perf_counter(), machine, own)


def foreign_cores(a: CpuSnapshot, b: CpuSnapshot) -> float | None:
    """Cores other processes kept busy on average between two snapshots."""
    if None in (a.machine_ticks, b.machine_ticks, a.own_ticks, b.own_ticks):
        return None
    wall = b.wall - a.wall
    if wall <= 0:
        return None
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    other = (b.machine_ticks - a.machine_ticks) - (b.own_ticks - a.own_ticks)
    return max(other, 0) / tick / wall
