"""Whether a value assigned to a secret's name is a secret, or code, an id or a placeholder (pure).

A name holding `password` or `token` is often followed by what is not a secret at all:
a class (`change_password_form = AdminPasswordChangeForm`), a string naming a key
(`INTERNAL_RESET_SESSION_TOKEN = "_password_reset_token"`, `"X-Api-Key"`), a call
(`token = get_token(user)`), a path, a URL, a placeholder (`your-key-here`, `${TOKEN}`),
or an id whose name says so (`api_key_id`, `token_hash`). What is left must be long and
random enough to be a credential.
"""

from __future__ import annotations

import math
import re

from freshline.secretrules import entropy

MIN_LENGTH = 8  # shorter values are examples (`password = "x"`), not credentials

_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
# A name whose last word is one of these holds an id, a reference or a description.
_NOT_SECRET_NAMES = frozenset(
    "id ids uuid guid sha hash digest checksum fingerprint version type kind name names file "
    "path dir url uri endpoint host length len size count format header field env var prefix "
    "suffix label help hint description regex pattern policy rule expiry expires ttl form "
    "class attr attribute param params arg args key_name placeholder widget validator "
    "message msg error errors display title text mode style store source cache number num "
    "index idx offset position pos start end limit timeout lifetime level status state flag "
    "enabled required list set map dict types cls factory builder handler manager provider "
    "service generator serializer parser reader writer loader backend model".split())
# Words example credentials are made of (`https://user:password@host`, `foo:bar`).
_EXAMPLE_WORDS = frozenset(
    "foo bar baz qux test testing example password passwd pass pwd secret token admin root "
    "guest user username changeit changeme letmein hunter2 s3cr3t p4ssw0rd".split())
_FILLER = ("example", "placeholder", "your", "changeme", "change_me", "dummy", "redacted",
           "withheld", "xxxx", "****", "todo", "sample", "<", "${", "{{", "%(", "://", "...",
           "insert", "replace")
_SEQUENCES = ("0123456789abcdefghijklmnopqrstuvwxyz", "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ",
              "abcdefghijklmnopqrstuvwxyz0123456789", "1234567890", "qwertyuiop", "asdfghjkl")
_SHAPE = re.compile(r"[A-Za-z0-9_.:/-]+")
_CALL = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*[(\[{]")
_VOWELS = frozenset("aeiouyAEIOUY")
_SEPARATED = re.compile(r"[-_.:/]")
_PATTERN = re.compile(r"\[[^\]]*\w-\w[^\]]*\]")  # a regex's class: `[a-zA-Z_]`


def is_identifier(value: str) -> bool:
    """Whether `value` reads as a name in code or config: CamelCase, snake_case, kebab,
    dotted or a header name, made of words (with a digit or two at most: `oauth2_scheme`),
    never a random string of letters (`hQxKzPmWvTrLsYbN`) or of consonants."""
    if not _SHAPE.fullmatch(value) or len(re.findall(r"\d+", value)) > 2:
        return False
    words = _WORDS.findall(value)
    if not words or sum(map(len, words)) < 0.6 * len(value.strip("_")):
        return False
    if sum(len(w) for w in words if len(w) > 2) < 0.5 * sum(map(len, words)):
        return False
    if not _SEPARATED.search(value.strip("_")) and (
            sum(map(len, words)) / len(words) < 3.5 or len(re.findall(r"\d+", value)) > 1):
        return False  # one CamelCase word: long words, like `IAmSensitive`, not `EKWPeWFqy`
    return all(len(w) < 5 or not _VOWELS.isdisjoint(w) for w in words)


def is_code(value: str) -> bool:
    """Whether an unquoted value is an expression of code: a name, an attribute, a call
    or an index (`self.token`, `os.environ.get(`, `settings["KEY"]`)."""
    if value[0] in "([{" or value.count(")") > value.count("("):
        return True  # a tuple, list, dict or set, or the end of a call's arguments
    return _CALL.match(value) is not None or all(is_identifier(p) for p in value.split("."))


def is_placeholder(value: str) -> bool:
    """Whether `value` stands for a secret rather than being one (`your-key-here`, `xxxx`,
    `${TOKEN}`, `<token>`, a path, a sequence like `0123456789abcdef`)."""
    low = value.lower()
    return (any(f in low for f in _FILLER) or value.startswith("{") and value.endswith("}")
            or low in _EXAMPLE_WORDS or _PATTERN.search(value) is not None
            or value.startswith(("/", "./", "../", "~/", "$"))
            or any(value in s or low in s for s in _SEQUENCES) or len(set(value)) <= 3)


def name_words(name: str) -> list[str]:
    """The words of a name, lower case: `apiKeyId` → api, key, id."""
    return [w.lower() for w in _WORDS.findall(name)]


def names_a_secret(name: str) -> bool:
    """Whether a name holding a secret's keyword names the secret itself, not its id,
    hash, length or form (`api_key_id`, `token_hash`, `password_form`)."""
    words = name_words(name)
    return not (words and words[-1] in _NOT_SECRET_NAMES)


def random_enough(value: str) -> bool:
    """Whether `value` is long and random enough to be a credential."""
    return (len(value) >= MIN_LENGTH
            and entropy(value) >= min(3.0, math.log2(len(value)) - 0.7))


def looks_secret(name: str, value: str, quoted: bool = True) -> bool:
    """Whether `value`, assigned to `name` (already known to hold a secret's keyword), is
    a secret: long and random enough, and not an id, a path, a placeholder, or code."""
    if not names_a_secret(name) or is_placeholder(value) or is_identifier(value):
        return False
    if not quoted and is_code(value):
        return False
    return random_enough(value)
