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
_INFINITY = float("inf")


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
    """A time in nanoseconds in the unit it reads best in: '83.270 ms', '950 ns'; '-' for None.
    Called once a cell: the units are tested inline, largest first (DURATION_UNITS)."""
    if ns is None:
        return "-"
    size = abs(ns)
    if size >= 1e9:
        return f"{ns / 1e9:.3f} s" if size != _INFINITY else f"{ns} ns"
    if size >= 1e6:
        return f"{ns / 1e6:.3f} ms"
    if size >= 1e3:
        return f"{ns / 1e3:.3f} us"
    if size != size:  # NaN
        return f"{ns} ns"
    return f"{ns:.0f} ns" if float(ns).is_integer() else f"{ns:.3f} ns"


def format_plain_column(values):
    """format_plain over a column, the common case (0 or 0.1 to 1e15) inline: no call per cell."""
    return ["-" if v is None else f"{v:.3f}" if v == 0 or 0.1 <= abs(v) < PLAIN_LIMIT else format_plain(v)
            for v in values]


def format_duration_column(values):
    """format_duration over a column, microseconds and milliseconds inline: no call per cell."""
    return ["-" if v is None else f"{v / 1e6:.3f} ms" if 1e6 <= abs(v) < 1e9
            else f"{v / 1e3:.3f} us" if 1e3 <= abs(v) < 1e6 else format_duration(v) for v in values]


def format_scientific(value):
    """The --sci form: three decimals, or e-notation under 0.1 and from 1e6 on."""
    if value is None:
        return "-"
    if value == 0 or 0.1 <= abs(value) < 1e6:
        return f"{value:.3f}"
    return f"{value:.3e}"
