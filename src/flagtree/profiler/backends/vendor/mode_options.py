"""The mode grammar of the vendor backends (cann, mthreads, tianshu), spelled as the public
FlagTree Profiler spells it so that its users' mode strings keep working:

    mode = token (":" token)*
    token = "runtime_base" ["=" on|off|true|false|1|0]
          | "vendor_metrics=" metric ("," metric)*
          | key "=" value            (a backend option, e.g. device_id=0, mstx_enabled=true)

Example: ``"runtime_base:device_id=0:vendor_metrics=aicore,bandwidth:mstx_enabled=true"``.
A bare token other than ``runtime_base``, an unknown metric or an unknown option key is a
ValueError that lists what the backend accepts. The mode is parsed once, at start; the result
(a VendorMode) is what the backend keeps.
"""
from dataclasses import dataclass, field

_TRUE = ("on", "true", "1", "yes")
_FALSE = ("off", "false", "0", "no")


@dataclass(frozen=True)
class VendorMode:
    runtime_base: bool = True
    vendor_metrics: tuple = ()
    options: dict = field(default_factory=dict)

    def canonical(self):
        """The mode as one normalised string (for the metadata file)."""
        tokens = [f"runtime_base={'on' if self.runtime_base else 'off'}"]
        if self.vendor_metrics:
            tokens.append("vendor_metrics=" + ",".join(self.vendor_metrics))
        tokens += [f"{key}={_text(value)}" for key, value in sorted(self.options.items())]
        return ":".join(tokens)


def _text(value):
    """An option value as the mode grammar spells it (so the canonical string parses again)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def parse_bool(text, what):
    value = str(text).strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f"{what} must be on or off (true/false, 1/0), got {text!r}")


def parse_vendor_mode(mode, backend, metrics, options):
    """Parses `mode` (None or a string) for `backend`.

    `metrics`: the vendor_metrics names the backend accepts. `options`: {key: parser} for the
    backend's key=value options, each parser turning the text into its value (or raising
    ValueError). Returns a VendorMode; raises ValueError naming the bad token and the valid forms.
    """
    if mode is None:
        return VendorMode()
    if not isinstance(mode, str):
        raise ValueError(f"backend {backend!r}: mode must be a string, got {type(mode).__name__}")
    form = _form(metrics, options)
    runtime_base = True
    chosen = []
    values = {}
    for token in (t.strip() for t in mode.split(":")):
        if not token:
            continue
        key, eq, value = (part.strip() for part in token.partition("="))
        if key == "runtime_base":
            runtime_base = parse_bool(value, "runtime_base") if eq else True
        elif key == "vendor_metrics" and eq:
            for name in filter(None, (m.strip() for m in value.split(","))):
                if name not in metrics:
                    raise ValueError(f"backend {backend!r}: unknown vendor metric {name!r} in mode {mode!r}; "
                                     f"valid: {', '.join(metrics) or 'none'}")
                if name not in chosen:
                    chosen.append(name)
        elif eq and key in options:
            try:
                values[key] = options[key](value)
            except ValueError as error:
                raise ValueError(f"backend {backend!r}: bad {key} in mode {mode!r}: {error}") from None
        elif eq:
            raise ValueError(f"backend {backend!r}: unknown option {key!r} in mode {mode!r}; form: {form}")
        else:
            raise ValueError(f"backend {backend!r}: unknown mode token {token!r} in {mode!r}; form: {form}")
    return VendorMode(runtime_base, tuple(chosen), values)


def _form(metrics, options):
    parts = ["runtime_base[=on|off]", f"vendor_metrics={','.join(metrics) or '<none>'}"]
    parts += [f"{key}=<value>" for key in options]
    return ":".join(parts)
