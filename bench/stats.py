"""Statistics the benches share."""
import random
import statistics


def median_ci(values, resamples=2000):
    """A 95% bootstrap interval of the median of `values` (seeded, so a report is reproducible)."""
    pick = random.Random(7)
    medians = sorted(statistics.median(pick.choices(values, k=len(values))) for _ in range(resamples))
    return [round(medians[int(0.025 * resamples)], 4), round(medians[int(0.975 * resamples)], 4)]
