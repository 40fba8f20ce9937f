"""The one mode grammar of every backend: start(mode=...) and `flagtree-profiler -m ...`.

    mode  = token (":" token)*
    token = word | key "=" value ("," item)*

A word is an option written alone (``runtime_base``, ``metrics``: the option's ``bare`` value)
or the backend's head word (``pcsampling``). Within a token, a comma piece holding ``=`` starts
a new key=value token, so ``pcsampling:interval=9,range=launch`` and ``slots=8,batch=2`` read
as their colon forms, and pieces without ``=`` are more items of a list
(``vendor_metrics=aicore,bandwidth``) or of a text value (a path). Switches take one set of
words: TRUE_WORDS and FALSE_WORDS. A backend declares its options (``Option``) in a ``ModeGrammar``; the grammar
parses, validates, words every error the same way (naming the supported forms) and writes the
canonical text that ``session.mode`` and the metadata carry.

Plain classes, not dataclasses: every process that imports the package imports this module
(the viewer too), and a dataclass is generated code, made at import.
"""

TRUE_WORDS = ("on", "true", "1", "yes")
FALSE_WORDS = ("off", "false", "0", "no")
_UNSET = object()
KINDS = ("switch", "int", "choice", "list", "text")


class Option:
    """One option of a backend's mode.

    kind: switch (TRUE_WORDS/FALSE_WORDS), int (``low``..``high``, decimal or 0x), choice (one of
    ``choices``), list (comma items, each one of ``choices`` when given; repeats dropped), text.
    bare: the value of the option written as a word alone (unset: it needs ``=``). shown: when
    the canonical text names it: "always", "given" (only when the mode set it) or "nonempty".
    spelled: the (true, false) words the canonical text writes for a switch. label: what one
    item is called in an error (defaults to the name). form: the supported-forms spelling, when
    the one made from the rest does not say enough."""
    __slots__ = ("name", "kind", "default", "choices", "low", "high", "bare", "shown", "spelled", "label", "form")

    def __init__(self, name, kind="text", *, default=None, choices=(), low=None, high=None, bare=_UNSET,
                 shown="always", spelled=("on", "off"), label="", form=""):
        if kind not in KINDS:
            raise ValueError(f"option {name!r}: kind must be one of {', '.join(KINDS)}")
        self.name, self.kind, self.default, self.choices = name, kind, default, tuple(choices)
        self.low, self.high, self.bare, self.shown = low, high, bare, shown
        self.spelled, self.label, self.form = spelled, label, form

    def replace(self, **changes):
        """A copy with `changes` (keyword: value) made."""
        fields = {name: getattr(self, name) for name in self.__slots__ if name not in ("name", "kind")}
        fields.update(changes)
        return Option(self.name, self.kind, **fields)

    def form_text(self):
        """How the supported-forms line spells this option."""
        if self.form:
            return self.form
        values = {"switch": "on|off", "int": "<n>", "text": "<value>"}.get(self.kind)
        if self.kind == "int" and self.low is not None and self.high is not None:
            values = f"<{self.low}..{self.high}>"
        if self.choices:
            values = ("," if self.kind == "list" else "|").join(map(str, self.choices))
        elif self.kind == "list":
            values = "<name>,<name>,..."
        text = f"{self.name}={values}"
        return f"{self.name}[={values}]" if self.bare is not _UNSET else text


class ParsedMode:
    """What a mode string said: ``values`` (every option, defaults filled in), ``given`` (the
    names the string set), ``text`` (the string itself, None when no mode was given), and the
    grammar that read it."""
    __slots__ = ("values", "given", "text", "grammar")

    def __init__(self, values, given=frozenset(), text=None, grammar=None):
        self.values, self.given, self.text, self.grammar = values, frozenset(given), text, grammar

    def __repr__(self):
        return f"ParsedMode({self.values!r}, given={sorted(self.given)!r}, text={self.text!r})"

    def __getitem__(self, name):
        return self.values[name]

    def canonical(self):
        return self.grammar.canonical(self.values, self.given)


class ModeGrammar:
    """A backend's options. head: a word the mode must start with (None: none). words: words
    that may stand anywhere and mean nothing (the backend's own name). separator: what joins the
    tokens after the head in the canonical text. lower: keys and values are read lower-case."""
    __slots__ = ("options", "head", "words", "separator", "lower", "by_name")

    def __init__(self, options=(), head=None, words=(), separator=":", lower=False):
        self.options, self.head, self.words = tuple(options), head, tuple(words)
        self.separator, self.lower = separator, lower
        self.by_name = {o.name: o for o in self.options}

    def forms(self):
        """The supported forms, as every error names them."""
        if not self.options and not self.head:
            return "none (leave mode unset)"
        parts = [o.form_text() for o in self.options]
        if self.head:
            return f"{self.head}[:{self.separator.join(parts)}]" if parts else self.head
        return ":".join(parts)

    def error(self, backend, mode, problem):
        return ValueError(f"backend {backend!r} does not support mode {mode!r}: {problem}; "
                          f"supported forms: {self.forms()}")

    def parse(self, mode, backend):
        """A ParsedMode from `mode` (None: every default); ValueError worded by error()."""
        values = {o.name: o.default for o in self.options}
        if mode is None:
            return ParsedMode(values, grammar=self)
        if not isinstance(mode, str):
            raise self.error(backend, mode, f"a mode must be a string, got {type(mode).__name__}")
        given, head_seen = set(), False
        for key, value in self._tokens(mode):
            if self.head and key == self.head and value is None:
                head_seen = True
                continue
            if key in self.words and value is None:
                continue
            option = self.by_name.get(key)
            if option is None:
                what = "word" if value is None else "option"
                raise self.error(backend, mode, f"unknown {what} {key!r}")
            values[option.name] = self._value(option, value, backend, mode)
            given.add(option.name)
        if self.head and not head_seen:
            raise self.error(backend, mode, f"the mode must start with {self.head!r}")
        return ParsedMode(values, frozenset(given), mode, self)

    def _tokens(self, mode):
        """[key, value text or None, or a list of item texts for a list option], in order."""
        tokens = []
        for part in mode.split(":"):
            extends = None  # "list" or "text": what a piece without "=" in this colon part extends
            for piece in (p.strip() for p in part.split(",")):
                key, eq, value = (t.strip() for t in piece.partition("="))
                if self.lower:
                    key, value = key.lower(), value.lower()
                if extends == "list" and not eq:
                    tokens[-1][1].append(key)  # one more item (an empty one is an error)
                    continue
                if extends == "text" and not eq:
                    tokens[-1][1] += "," + piece  # a comma inside a text value (a path)
                    continue
                if not piece:
                    continue
                option = self.by_name.get(key)
                kind = option.kind if option is not None and eq else None
                extends = kind if kind in ("list", "text") else None
                tokens.append([key, [value] if kind == "list" else value if eq else None])
        return tokens

    def _value(self, option, text, backend, mode):
        if text is None:
            if option.bare is _UNSET:
                raise self.error(backend, mode, f"{option.name} needs a value ({option.form_text()})")
            return option.bare
        try:
            return convert(option, text)
        except ValueError as error:
            raise self.error(backend, mode, str(error)) from None

    def canonical(self, values, given=(), defaults=True):
        """The normalised mode text of `values` (a dict by option name), which parses back to
        them: the head, then each shown option in declared order (without `defaults`, only
        those whose value is not their default)."""
        tokens = [f"{o.name}={spell(o, values[o.name])}" for o in self.options
                  if _shown(o, values, given) and (defaults or values[o.name] != o.default)]
        text = self.separator.join(tokens)
        if self.head:
            return f"{self.head}:{text}" if text else self.head
        return text


def _shown(option, values, given):
    if option.shown == "given":
        return option.name in given
    if option.shown == "nonempty":
        return bool(values[option.name])
    return True


def switch(text, name):
    """True or False from one of TRUE_WORDS / FALSE_WORDS (any case)."""
    word = str(text).strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise ValueError(f"{name} must be on or off ({'/'.join(TRUE_WORDS)} or {'/'.join(FALSE_WORDS)}), got {text!r}")


def convert(option, text):
    """The value of `option` written as `text` (a list option: a list of item texts)."""
    name = option.name
    if option.kind == "switch":
        return switch(text, name)
    if option.kind == "int":
        try:
            number = int(text, 0)
        except ValueError:
            raise ValueError(f"{name} must be an integer, got {text!r}") from None
        low = option.low if option.low is not None else number
        high = option.high if option.high is not None else number
        if not low <= number <= high:
            raise ValueError(f"{name} must be between {low} and {high}, got {number}")
        if option.choices and number not in option.choices:
            raise ValueError(f"{name} must be one of {', '.join(map(str, option.choices))}, got {number}")
        return number
    if option.kind == "choice":
        if text not in option.choices:
            raise ValueError(f"{name} must be one of {', '.join(option.choices)}, got {text!r}")
        return text
    if option.kind == "list":
        return _items(option, text)
    if not text:
        raise ValueError(f"{name} needs a value")
    return text


def _items(option, texts):
    items = []
    for item in texts:
        if not item:
            raise ValueError(f"{option.name} has an empty {option.label or 'item'}")
        if option.choices and item not in option.choices:
            raise ValueError(f"unknown {option.label or option.name} {item!r} (valid: {', '.join(option.choices)})")
        if item not in items:
            items.append(item)
    return tuple(items)


def spell(option, value):
    """An option's value as the canonical text writes it."""
    if option.kind == "switch":
        return option.spelled[0] if value else option.spelled[1]
    if option.kind == "list":
        return ",".join(value)
    return str(value)


class VendorMode:
    """The options of the vendor backends' mode (cann, mthreads, tianshu), the public FlagTree
    Profiler's spelling: ``runtime_base[=on|off]:vendor_metrics=<a>,<b>:<key>=<value>...``.
    ``options`` holds the backend options the mode set."""
    __slots__ = ("runtime_base", "vendor_metrics", "options", "grammar")

    def __init__(self, runtime_base=True, vendor_metrics=(), options=None, grammar=None):
        self.runtime_base, self.vendor_metrics = runtime_base, tuple(vendor_metrics)
        self.options, self.grammar = dict(options or {}), grammar

    def __eq__(self, other):
        return isinstance(other, VendorMode) and (self.runtime_base, self.vendor_metrics, self.options) == (
            other.runtime_base, other.vendor_metrics, other.options)

    def __repr__(self):
        return f"VendorMode({self.runtime_base!r}, {self.vendor_metrics!r}, {self.options!r})"

    def canonical(self):
        values = {"runtime_base": self.runtime_base, "vendor_metrics": self.vendor_metrics, **self.options}
        return self.grammar.canonical(values, frozenset(self.options))


def vendor_grammar(metrics, options=()):
    """The grammar of a vendor backend: its vendor_metrics names and its own options (shown in
    the canonical text only when the mode sets them, in name order)."""
    own = tuple(sorted((o.replace(shown="given") for o in options), key=lambda o: o.name))
    return ModeGrammar((Option("runtime_base", "switch", default=True, bare=True),
                        Option("vendor_metrics", "list", default=(), choices=tuple(metrics), shown="nonempty",
                               label="vendor metric")) + own)


def vendor_mode(parsed):
    """A VendorMode from a vendor grammar's ParsedMode."""
    own = {name: parsed[name] for name in parsed.given if name not in ("runtime_base", "vendor_metrics")}
    return VendorMode(parsed["runtime_base"], parsed["vendor_metrics"], own, parsed.grammar)
