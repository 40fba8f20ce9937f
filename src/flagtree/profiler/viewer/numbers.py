"""How the viewer writes numbers: plain decimals, never e-notation unless asked (``--sci``), and
times in the unit each value reads best in (``-m time``, the default) unless ``-m`` names one.

A plain value keeps three decimals, and below 0.1 as many as its first four significant digits
need (0.01234, 0.0000001234): a column's decimal points may not line up, but no digit hides
behind an exponent. Only values of 1e15 and more keep e-notation.
"""
import math

# (unit, nanoseconds in one), largest first: a duration takes the first unit it reaches one of.
DURATION_UNITS = (("s", 1e9), ("ms", 1e6), ("us", 1e3))
_MAX_DECIMALS = 24  # 4 significant digits of a value down to 1e-21; smaller ones show as 0.000...
# From here on a plain number is a wall of digits no one reads (a corrupt or summed-over counter):
# e-notation is the honest form.
PLAIN_LIMIT = 1e15


def format_plain(value):
    """Three decimals, more below 0.1 so that four significant digits show; '-' for None."""
    if value is None:
        return "-"
    if abs(value) >= PLAIN_LIMIT and math.isfinite(value):
        return f"{value:.3e}"
    if value == 0 or not math.isfinite(value) or abs(value) >= 0.1:
        return f"{value:.3f}"
    decimals = min(_MAX_DECIMALS, 3 - math.floor(math.log10(abs(value))))
    return f"{value:.{decimals}f}"


def format_duration(ns):
    """A time in nanoseconds in the unit it reads best in: '83.270 ms', '950 ns'; '-' for None."""
    if ns is None:
        return "-"
    if not math.isfinite(ns):
        return f"{ns} ns"
    for unit, scale in DURATION_UNITS:
        if abs(ns) >= scale:
            return f"{ns / scale:.3f} {unit}"
    return f"{ns:.0f} ns" if float(ns).is_integer() else f"{ns:.3f} ns"


def format_scientific(value):
    """The --sci form: three decimals, or e-notation under 0.1 and from 1e6 on."""
    if value is None:
        return "-"
    if value == 0 or 0.1 <= abs(value) < 1e6:
        return f"{value:.3f}"
    return f"{value:.3e}"
