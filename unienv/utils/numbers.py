"""Numbers as JSON holds them: a float, or None where it is not finite (JSON has no NaN)."""

import math


def finite_or_none(x) -> float | None:
    """A float for JSON; None where it is not finite."""
    x = float(x)
    return x if math.isfinite(x) else None


def mean_or_none(values) -> float | None:
    """The mean of values as `finite_or_none` gives it; None for no values."""
    return finite_or_none(sum(values) / len(values)) if values else None
