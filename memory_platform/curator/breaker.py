"""The circuit breaker: a run that would cut more than its namespace's ceiling cuts nothing.

One rule, held in four places: here (computed when the verdict is recorded and again in the
transaction that cuts), in the blocking asset check `cut_ratio_within_ceiling` (so the cut
step of the same run never starts), and in PostgreSQL (a run's archives never exceed the
`max_cuts` recorded with it).
"""

import math
from dataclasses import dataclass

# Float shares times whole counts: 0.3 * 10 is 3.0000000000000004, which must allow 3.
_EPSILON = 1e-9


def max_cuts(listed: int, ceiling: float) -> int:
    """The most cuts a run over `listed` memories may make: the ceiling's share, rounded
    down (exactly at the ceiling passes, one over refuses)."""
    if not 0 <= ceiling <= 1:
        raise ValueError(f"a ceiling is a share between 0 and 1, not {ceiling}")
    return math.floor(listed * ceiling + _EPSILON)


@dataclass(frozen=True)
class Judgement:
    cuts: int
    listed: int
    ceiling: float
    max_cuts: int

    @property
    def passed(self) -> bool:
        return self.cuts <= self.max_cuts

    @property
    def ratio(self) -> float:
        return self.cuts / self.listed if self.listed else 0.0

    def explain(self) -> str:
        verb = "within" if self.passed else "over"
        return (f"{self.cuts} cuts of {self.listed} memories ({self.ratio:.0%}) is {verb} the "
                f"ceiling of {self.ceiling:.0%} (at most {self.max_cuts})")


def judge(cuts: int, listed: int, ceiling: float) -> Judgement:
    return Judgement(cuts, listed, ceiling, max_cuts(listed, ceiling))
