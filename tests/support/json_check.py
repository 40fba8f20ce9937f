"""Strict JSON in the tests: `loads_strict`/`load_strict` parse with json, refusing NaN, the
infinities and a key repeated in one object; `scan` and `check_file` check outputs too deep for
json.loads without recursion, a token scanner (regular expressions) driven by an explicit stack,
rejecting what strict JSON rejects, NaN and Infinity included."""
import json
import re

_TOKEN = re.compile(r'[ \t\n\r]*(?:([{}\[\],:])|"((?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*)"'
                    r'|(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)|(true|false|null))')
_END = re.compile(r"[ \t\n\r]*\Z")


class JsonError(ValueError):
    pass


def _pairs(items):
    keys = [k for k, _ in items]
    if len(keys) != len(set(keys)):
        raise AssertionError(f"repeated key in {keys}")
    return dict(items)


def _constant(name):
    raise AssertionError(f"non-strict JSON constant {name}")


def loads_strict(text):
    """`text` parsed refusing what strict JSON lacks: a repeated key, NaN or infinities."""
    return json.loads(text, object_pairs_hook=_pairs, parse_constant=_constant)


def load_strict(path):
    """The file at `path`, as loads_strict parses it."""
    with open(path, encoding="utf-8") as f:
        return loads_strict(f.read())


def scan(text, on_key=None):
    """Checks `text` is one strict JSON value; calls on_key(key, depth) for each object key.
    Returns the deepest nesting of containers."""
    stack = []  # "{" or "[" per open container
    expect = "value"  # value | key | colon | next (comma or close) | value_or_close | key_or_close
    pos, deepest = 0, 0
    while True:
        if not stack and expect == "next":
            break
        match = _TOKEN.match(text, pos)
        if match is None:
            raise JsonError(f"not strict JSON at offset {pos}: {text[pos:pos + 20]!r}")
        pos = match.end()
        punct, string, number, word = match.groups()
        if expect in ("value", "value_or_close"):
            if punct == "]" and expect == "value_or_close":
                stack.pop()
                expect = "next"
            elif punct in ("{", "["):
                stack.append(punct)
                deepest = max(deepest, len(stack))
                expect = "key_or_close" if punct == "{" else "value_or_close"
            elif punct is None:  # a string, number or literal
                expect = "next"
            else:
                raise JsonError(f"unexpected {punct!r} at offset {match.start()}")
        elif expect in ("key", "key_or_close"):
            if punct == "}" and expect == "key_or_close":
                stack.pop()
                expect = "next"
            elif string is not None:
                if on_key:
                    on_key(string, len(stack))
                expect = "colon"
            else:
                raise JsonError(f"expected a key at offset {match.start()}")
        elif expect == "colon":
            if punct != ":":
                raise JsonError(f"expected ':' at offset {match.start()}")
            expect = "value"
        else:  # next
            if punct == ",":
                expect = "key" if stack[-1] == "{" else "value"
            elif punct == ("}" if stack[-1] == "{" else "]"):
                stack.pop()
                expect = "next"
            else:
                raise JsonError(f"expected ',' or a close at offset {match.start()}")
    if not _END.match(text, pos):
        raise JsonError(f"trailing text at offset {pos}")
    return deepest


def check_file(path, on_key=None):
    with open(path, encoding="utf-8") as f:
        return scan(f.read(), on_key)


def check_deep_chain(path):
    """Checks a Hatchet file; returns its node count (the "frame" keys) and deepest nesting."""
    frames = [0]

    def count(key, depth):
        if key == "frame":
            frames[0] += 1

    deepest = check_file(path, count)
    return frames[0], deepest
