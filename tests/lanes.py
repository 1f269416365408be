"""Checks run in the background, a few at a time, for the modules whose tests each assert on
one long ``pipedoctor check``: a check spends much of its time in one thread (importing
TensorFlow, building the script's data, waiting on a slow pipeline), so two or three side by
side on 2 cores take far less wall time than one after another.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Generic, TypeVar

import pytest

Result = TypeVar("Result")


def selected(request: pytest.FixtureRequest, param: str) -> set[object]:
    """The values of ``param`` in the tests of the requesting module that this session runs:
    the checks to start at once."""
    return {
        item.callspec.params[param]
        for item in request.session.items
        if item.module is request.module
        and hasattr(item, "callspec")
        and param in item.callspec.params
    }


class Lanes(Generic[Result]):
    """``count`` lanes, each running its work one piece after another. A piece goes to the lane
    asked for, or else to the one with the least work queued (by the piece's ``weight``, its
    budget in seconds): submitting the longest first spreads them evenly."""

    def __init__(self, count: int) -> None:
        self._lanes = [ThreadPoolExecutor(1) for _ in range(count)]
        self._queued = [0.0] * count
        self._running: dict[Hashable, Future[Result]] = {}

    def submit(
        self,
        key: Hashable,
        work: Callable[[], Result],
        weight: float,
        lane: int | None = None,
    ) -> Future[Result]:
        """The piece of work named ``key``, queued unless it already is."""
        if key not in self._running:
            if lane is None:
                lane = self._queued.index(min(self._queued))
            self._queued[lane] += weight
            self._running[key] = self._lanes[lane].submit(work)
        return self._running[key]

    def result(self, key: Hashable) -> Result:
        """What the piece named ``key`` returned, once it has run."""
        return self._running[key].result()

    def close(self) -> None:
        """Waits for what runs; what has not started is dropped."""
        for lane in self._lanes:
            lane.shutdown(wait=True, cancel_futures=True)


def once_more_if_short(
    run: Callable[[int], Result],
    budget: int,
    measured: Callable[[Result], bool],
    describe: Callable[[Result], str],
    with_first: Callable[[Result, Result], Result] = lambda second, first: second,
) -> Result:
    """``run(budget)``, and again with half as much budget again when the first came back
    without its measurements: the budgets fit an idle 2-core host, and a check that ran out
    on a busier one says nothing about the script. A second miss is the test's failure, and
    ``with_first`` keeps what the first attempt said in the second's result."""
    first = run(budget)
    if measured(first):
        return first
    print(f"not measured ({describe(first)}); once more with {round(budget * 1.5)} s")
    return with_first(run(round(budget * 1.5)), first)
