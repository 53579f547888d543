"""SQL92 message selectors with RocketMQ 4.9's grammar and semantics, compiled once, cached.

A consumer that subscribes with expression type ``SQL92`` gives an expression over the message's
properties (every stored property: user properties and ``TAGS``, ``KEYS``, ``UNIQ_KEY`` ...):

    a > 5 AND color IN ('red', 'blue') AND (region IS NULL OR region <> 'eu')

:func:`compile_sql92` parses it into a :class:`Sql92Filter` (or raises :class:`Sql92Error`
pointing at the problem) and caches the result, as RocketMQ caches its parses;
:meth:`Sql92Filter.matches` evaluates it against a property map.

**Grammar** (RocketMQ's JavaCC ``SelectorParser.jj``, lowest precedence first)::

    expr       := and (OR and)*
    and        := equality (AND equality)*
    equality   := comparison ( = comparison | <> comparison | IS NULL | IS NOT NULL )*
    comparison := unary ( > unary | >= unary | < unary | <= unary
                        | [NOT] BETWEEN unary AND unary | [NOT] IN (string, ...) )*
    unary      := + unary | - unary | NOT unary | primary
    primary    := literal | property | ( expr )
    literal    := 'string' | integer | float | TRUE | FALSE | NULL

Keywords are case-insensitive; a property name is ``[A-Za-z_$][A-Za-z0-9_$]*`` (no dots), so a
property named like a keyword cannot be referenced. Strings are in single quotes, ``''`` for a
quote. ``--`` comments run to a line end, ``/* */`` comments anywhere. As in RocketMQ, the parse
stops at the first token that cannot continue the expression: ``a = 1 b = 2`` selects ``a = 1``.
RocketMQ 4.9 has no ``CONTAINS``, ``STARTSWITH`` or ``ENDSWITH`` (5.x added them); nor has this.

**Literals.** An integer is a Java ``Integer`` when it fits 32 bits, else a ``Long`` (a trailing
``L`` is dropped; more than 64 bits is an error). A float is a ``Double`` and must lie between
``Double.MIN_VALUE`` and ``Double.MAX_VALUE``: RocketMQ 4.9 refuses ``0.0`` (and ``1e-400``,
``1e400``). ``TRUE``, ``FALSE`` and ``NULL`` are boolean constants.

**Evaluation** (``ComparisonExpression``, ``LogicExpression``, ``UnaryExpression``). A property
is a string, or null when the message does not have it. Three-valued logic: a comparison with a
null side is null (unknown), ``AND``/``OR`` follow SQL's tables, and a message matches only when
the whole expression is true. The rules that surprise:

* ``=`` / ``<>``: a property against a number converts the property with Java's
  ``Integer.valueOf`` / ``Long.valueOf`` / ``Double.valueOf`` (by the literal's type), against
  ``TRUE``/``FALSE`` with ``Boolean.valueOf`` (``'true'`` in any case is true); two strings
  compare as strings. ``a <> 5`` is ``NOT (a = 5)``, so it is null, not true, without ``a``.
* ``>``, ``>=``, ``<``, ``<=`` take numbers only: a string or boolean literal there is a parse
  error; two properties are compared as doubles.
* A property that does not convert (``a > 5`` with ``a = '5.5'`` - ``Integer.valueOf`` fails, or
  ``a = 3000000000`` against an ``Integer`` literal ...) makes the *whole* expression fail
  for that message, whatever ``OR`` surrounds it: RocketMQ's evaluator throws and its filter
  answers "no match". ``OR`` and ``AND`` evaluate left to right and stop early, so an operand
  after a decided one is never evaluated.
* ``BETWEEN a AND b`` is ``>= a AND <= b`` (a constant range must be ascending); ``NOT BETWEEN
  a AND b`` is ``< a OR > b``.
* ``IN`` / ``NOT IN`` take string literals and compare strings; a missing property is null for
  both, so ``x NOT IN ('a')`` does not match a message without ``x``.
* ``IS NULL`` is true when the property is missing; ``= NULL`` is a parse error.
* A bare property used as a condition (``a``, ``NOT a``) is false when present (a string is not
  a boolean) and null when missing. ``NOT`` binds tighter than comparisons: ``NOT a = 1`` is
  ``(NOT a) = 1``, which never holds; write ``NOT (a = 1)``.
* A constant on the left of a comparison goes through the same conversions the other way
  round; ``TRUE = a`` fails (RocketMQ casts the boolean to a string and throws), while
  ``a = TRUE`` works.

Why hand-written: the grammar is small, and RocketMQ's behaviour lives in details a generic
parser library would have to be bent to (JavaCC's longest-match tokens with keyword priority,
no end-of-input check, its literal checks at parse time), while error messages can name the
column of the problem. Parsing costs tens of microseconds once per expression; evaluation is a
tree of Python closures, about 1 µs per comparison.
"""

from __future__ import annotations

import functools
import math
import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final, TypeAlias

from rocketq.errors import ConfigError

__all__ = [
    "EXPRESSION_TYPE_SQL92",
    "EXPRESSION_TYPE_TAG",
    "Sql92Error",
    "Sql92Filter",
    "compile_sql92",
    "is_tag_type",
]

EXPRESSION_TYPE_SQL92: Final = "SQL92"
EXPRESSION_TYPE_TAG: Final = "TAG"

_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1
_DOUBLE_MIN = 5e-324  # Double.MIN_VALUE, the smallest positive double
_DOUBLE_MAX = 1.7976931348623157e308


def is_tag_type(expression_type: str | None) -> bool:
    """RocketMQ's ``ExpressionType.isTagType``: ``None``, empty and ``TAG`` are tag filters."""
    return not expression_type or expression_type == EXPRESSION_TYPE_TAG


class Sql92Error(ConfigError):
    """An expression that is not a valid RocketMQ 4.9 SQL92 selector; ``column`` is 1-based
    (0 when the problem is not at one place)."""

    def __init__(self, expression: str, problem: str, column: int = 0) -> None:
        where = f", column {column}" if column else ""
        super().__init__(f"invalid SQL92 selector {expression!r}{where}: {problem}")
        self.expression = expression
        self.problem = problem
        self.column = column


class _EvalError(Exception):
    """Evaluation failed (RocketMQ's evaluator throws): the message does not match."""


class JLong(int):
    """An integer literal of Java type ``Long`` (one that does not fit an ``Integer``)."""

    __slots__ = ()


# -- values ------------------------------------------------------------------------------------
#
# Java classes of the values an expression handles, as Python types: ``str`` (String), ``int``
# (Integer), ``JLong`` (Long), ``float`` (Double), ``bool`` (Boolean); ``None`` is null.

Value: TypeAlias = "str | int | float | bool | None"
Evaluator: TypeAlias = Callable[[Mapping[str, str]], Value]

_STR, _INT, _LONG, _DOUBLE, _BOOL = range(5)


def _cls(value: object) -> int:
    t = type(value)
    if t is str:
        return _STR
    if t is bool:
        return _BOOL
    if t is JLong:
        return _LONG
    if t is int:
        return _INT
    return _DOUBLE


_JAVA_INT = re.compile(r"[+-]?\d+")
_JAVA_DOUBLE = re.compile(
    r"[+-]?(?:NaN|Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[fFdD]?"
    r"|0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?\d+[fFdD]?)"
)


_JAVA_TRIM = "".join(map(chr, range(33)))  # String.trim(): every char up to the space


def _java_int(text: str, low: int, high: int) -> int:
    """``Integer.valueOf`` / ``Long.valueOf``: optional sign, digits, in range; else throw."""
    if not _JAVA_INT.fullmatch(text):
        raise _EvalError
    value = int(text)
    if not low <= value <= high:
        raise _EvalError
    return value


def _java_double(text: str) -> float:
    """``Double.valueOf``: Java's float syntax (spaces around allowed, ``NaN``, ``Infinity``,
    a ``d``/``f`` suffix, hex floats); else throw."""
    s = text.strip(_JAVA_TRIM)
    if not _JAVA_DOUBLE.fullmatch(s):
        raise _EvalError
    if s[-1] in "fFdD" and not s.lower().endswith("infinity"):
        s = s[:-1]
    if "x" in s or "X" in s:
        sign = -1.0 if s[0] == "-" else 1.0
        return sign * float.fromhex(s.lstrip("+-"))
    return float(s)


def _double_compare(a: float, b: float) -> int:
    """``Double.compare``: NaN is above everything and equal to itself, -0.0 is below 0.0."""
    if a < b:
        return -1
    if a > b:
        return 1
    a_nan, b_nan = math.isnan(a), math.isnan(b)
    if a_nan or b_nan:
        return int(a_nan) - int(b_nan)
    return int(math.copysign(1, a) > 0) - int(math.copysign(1, b) > 0)


def _java_equals(lv: object, rv: object) -> bool:
    """``lv.equals(rv)`` of two non-null values: same Java class and value (doubles by bits)."""
    lc, rc = _cls(lv), _cls(rv)
    if lc != rc:
        return False
    if lc == _DOUBLE:
        return _double_compare(lv, rv) == 0  # type: ignore[arg-type]
    return lv == rv


def _compare(lv: object, rv: object) -> int:
    """``ComparisonExpression.__compare`` with string conversion on: the sign of ``lv``
    against ``rv`` after converting the one whose class differs, -1 when they do not convert."""
    lc, rc = _cls(lv), _cls(rv)
    if lc != rc:
        if lc == _STR:
            lv = _string_as(rc, lv)  # type: ignore[arg-type]
        elif lc == _BOOL:
            if rc == _STR:
                raise _EvalError  # RocketMQ casts the Boolean to String: ClassCastException
            return -1
        else:
            converted = _number_against(lc, rc, lv, rv)
            if converted is None:
                return -1
            lv, rv = converted
    if type(lv) is float or type(rv) is float:
        return _double_compare(lv, rv)  # type: ignore[arg-type]
    if lv == rv:
        return 0
    return -1 if lv < rv else 1  # type: ignore[operator]


def _string_as(rc: int, lv: str) -> object:
    """A String compared with a value of class ``rc`` (not String), converted to that class the
    Java way (throwing when it does not parse)."""
    if rc == _BOOL:
        return lv.lower() == "true"
    if rc == _INT:
        return _java_int(lv, _INT_MIN, _INT_MAX)
    if rc == _LONG:
        return _java_int(lv, _LONG_MIN, _LONG_MAX)
    return _java_double(lv)


def _number_against(lc: int, rc: int, lv: object, rv: object) -> tuple[object, object] | None:
    """An Integer, Long or Double ``lv`` and an ``rv`` of another class, made comparable: the
    String parsed as ``lv``'s class, the Integer or Long made a Double against a Double; ``None``
    against a Boolean (they do not compare)."""
    if rc == _BOOL:
        return None
    if rc == _STR:
        if lc == _INT:
            return lv, _java_int(rv, _INT_MIN, _INT_MAX)  # type: ignore[arg-type]
        if lc == _LONG:
            return lv, _java_int(rv, _LONG_MIN, _LONG_MAX)  # type: ignore[arg-type]
        return lv, _java_double(rv)  # type: ignore[arg-type]
    if lc == _DOUBLE:  # against an Integer or a Long
        return lv, float(rv)  # type: ignore[arg-type]
    if rc == _DOUBLE:  # an Integer or a Long against a Double
        return float(lv), rv  # type: ignore[arg-type]
    return lv, rv  # an Integer and a Long: compared as they are


# -- the tree ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Node:
    """A parsed expression: its evaluator, and what RocketMQ's parse-time checks need to know."""

    run: Evaluator
    text: str
    kind: str  # "const" (a literal), "bool-const" (TRUE/FALSE/NULL), "property", "boolean", "value"
    value: Value = None  # for constants
    column: int = 0  # where it starts in the source (1-based), for error messages

    @property
    def is_boolean(self) -> bool:
        """A Java ``BooleanExpression`` (comparisons, logic, NOT, IN, boolean constants)."""
        return self.kind in ("boolean", "bool-const")

    @property
    def is_constant(self) -> bool:
        return self.kind in ("const", "bool-const")


def _const(value: Value, text: str, column: int, *, boolean: bool = False) -> _Node:
    return _Node(lambda _props: value, text, "bool-const" if boolean else "const", value, column)


def _property(name: str, column: int) -> _Node:
    return _Node(lambda props: props.get(name), name, "property", None, column)


def _negate(inner: _Node) -> _Node:
    run = inner.run

    def negate(props: Mapping[str, str]) -> Value:
        value = run(props)
        t = type(value)
        if t is int or t is float:
            return -value  # type: ignore[operator]
        if t is JLong:
            return JLong(-value)  # type: ignore[operator]
        return None  # null, a string or a boolean: not a number

    return _Node(negate, f"(- {inner.text})", "value", None, inner.column - 2 if inner.column > 2 else 1)


def _not(inner: _Node) -> _Node:
    run = inner.run

    def not_(props: Mapping[str, str]) -> Value:
        value = run(props)
        return None if value is None else not value

    return _Node(not_, f"(NOT {inner.text})", "boolean", None, inner.column)


def _cast(inner: _Node) -> _Node:
    """A property used as a condition (``UnaryExpression.createBooleanCast``)."""
    run = inner.run

    def cast(props: Mapping[str, str]) -> Value:
        value = run(props)
        if value is None:
            return None
        return value if type(value) is bool else False

    return _Node(cast, inner.text, "boolean", None, inner.column)


def _junction(word: str, left: _Node, right: _Node) -> _Node:
    """``word`` (AND or OR) in SQL's three-valued logic: the side that decides alone (false for
    AND, true for OR) decides, else a null side makes the result null."""
    lrun, rrun = left.run, right.run
    decisive = word == "OR"

    def junction(props: Mapping[str, str]) -> Value:
        lv = lrun(props)
        if lv is decisive:
            return decisive
        rv = rrun(props)
        if rv is decisive:
            return decisive
        if lv is None or rv is None:
            return None
        return not decisive

    return _Node(junction, f"({left.text} {word} {right.text})", "boolean", None, left.column)


def _equal(left: _Node, right: _Node) -> _Node:
    """``doCreateEqual`` (also IS NULL, against the NULL constant)."""
    lrun, rrun = left.run, right.run

    def equal(props: Mapping[str, str]) -> Value:
        lv = lrun(props)
        rv = rrun(props)
        if type(lv) is str and type(rv) is str:  # the common case: equals, else compareTo != 0
            return lv == rv
        if lv is None or rv is None:
            if lv is None and rv is None:
                return True
            return None if lv is None else False
        if _java_equals(lv, rv):
            return True
        return _compare(lv, rv) == 0

    return _Node(equal, f"({left.text} = {right.text})", "boolean", None, left.column)


_ORDERINGS: dict[str, Callable[[int, int], bool]] = {
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
}


def _ordering(symbol: str, left: _Node, right: _Node) -> _Node:
    lrun, rrun = left.run, right.run
    test = _ORDERINGS[symbol]

    def ordering(props: Mapping[str, str]) -> Value:
        lv = lrun(props)
        if lv is None:
            return None
        rv = rrun(props)
        if rv is None:
            return None
        if type(lv) is str and type(rv) is str:  # two strings compare as doubles, or throw
            return test(_double_compare(_java_double(lv), _java_double(rv)), 0)
        return test(_compare(lv, rv), 0)

    return _Node(ordering, f"({left.text} {symbol} {right.text})", "boolean", None, left.column)


def _in(prop: _Node, values: list[str], negated: bool) -> _Node:
    run = prop.run
    wanted = frozenset(values)

    def in_(props: Mapping[str, str]) -> Value:
        value = run(props)
        if type(value) is not str:
            return None
        return (value in wanted) != negated

    listed = ", ".join(_quote(v) for v in values)
    return _Node(in_, f"{prop.text} {'NOT IN' if negated else 'IN'} ({listed})", "boolean", None, prop.column)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


# -- tokens ------------------------------------------------------------------------------------

_KEYWORDS = frozenset({"NOT", "AND", "OR", "BETWEEN", "IN", "TRUE", "FALSE", "NULL", "IS"})
_TOKEN = re.compile(
    r"""
    (?P<space>[ \t\n\r\f]+)
  | (?P<comment>--[^\n\r]*(?:\r\n|\n|\r)|/\*[^*]*\*+(?:[^*/][^*]*\*+)*/)
  | (?P<float>[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+)
  | (?P<decimal>[1-9][0-9]*[lL]?|0)
  | (?P<string>'(?:''|[^'])*')
  | (?P<word>[A-Za-z_$][A-Za-z0-9_$]*)
  | (?P<op><>|>=|<=|[=><(),+-])
    """,
    re.VERBOSE,
)


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # "decimal", "float", "string", "id", a keyword, an operator, or "end"
    text: str
    column: int


class _Lexer:
    """JavaCC's token manager: tokens made on demand, longest match first, keywords before
    identifiers; a character no token starts with is an error only when the parser asks for
    the token it is in."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.pos = 0
        self.tokens: list[_Token] = []

    def peek(self, ahead: int = 0) -> _Token:
        while len(self.tokens) <= ahead:
            self.tokens.append(self._next())
        return self.tokens[ahead]

    def take(self) -> _Token:
        token = self.peek()
        self.tokens.pop(0)
        return token

    def _next(self) -> _Token:
        src = self.source
        while True:
            if self.pos >= len(src):
                return _Token("end", "", len(src) + 1)
            match = _TOKEN.match(src, self.pos)
            if match is None:
                raise Sql92Error(src, f"unexpected character {src[self.pos]!r}", self.pos + 1)
            kind = match.lastgroup
            text = match.group()
            column = self.pos + 1
            self.pos = match.end()
            if kind in ("space", "comment"):
                continue
            if kind == "word":
                upper = text.upper()
                return _Token(upper if upper in _KEYWORDS else "id", text, column)
            if kind == "op":
                return _Token(text, text, column)
            assert kind is not None
            return _Token(kind, text, column)


# -- the parser --------------------------------------------------------------------------------


class _Parser:
    """Recursive descent over :class:`_Lexer`, building :class:`_Node` trees with RocketMQ's
    parse-time checks."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.lex = _Lexer(source)

    def fail(self, problem: str, column: int = 0) -> Sql92Error:
        return Sql92Error(self.source, problem, column)

    def expect(self, kind: str, what: str) -> _Token:
        token = self.lex.peek()
        if token.kind != kind:
            raise self.unexpected(token, what)
        return self.lex.take()

    def unexpected(self, token: _Token, what: str) -> Sql92Error:
        found = "the end of the expression" if token.kind == "end" else repr(token.text)
        return self.fail(f"expected {what}, found {found}", token.column)

    def boolean(self, node: _Node) -> _Node:
        """``asBooleanExpression``: a condition, or a property cast to one."""
        if node.is_boolean:
            return node
        if node.kind == "property":
            return _cast(node)
        raise self.fail(f"{node.text} is not a condition (it is never true or false)", node.column)

    def parse(self) -> _Node:
        if self.lex.peek().kind == "end":
            raise self.fail("the expression is empty")
        # No end-of-input check, as in RocketMQ: the parse ends at the first token that cannot
        # continue the expression (already looked at by the loops below).
        return self.boolean(self.or_())

    def or_(self) -> _Node:
        return self.junctions("OR", self.and_)

    def and_(self) -> _Node:
        return self.junctions("AND", self.equality)

    def junctions(self, word: str, operand: Callable[[], _Node]) -> _Node:
        """``operand (word operand)*``, grouped from the left."""
        left = operand()
        while self.lex.peek().kind == word:
            self.lex.take()
            right = operand()
            left = _junction(word, self.boolean(left), self.boolean(right))
        return left

    def equality(self) -> _Node:
        left = self.comparison()
        while True:
            token = self.lex.peek()
            if token.kind in ("=", "<>"):
                self.lex.take()
                right = self.comparison()
                self.check_equal(left, right, token)
                node = _equal(left, right)
                left = node if token.kind == "=" else _not(node)
            elif token.kind == "IS" and self.lex.peek(1).kind == "NULL":
                self.lex.take()
                self.lex.take()
                left = _equal(left, _const(None, "NULL", token.column, boolean=True))
            elif token.kind == "IS" and self.lex.peek(1).kind == "NOT":
                self.lex.take()
                self.lex.take()
                self.expect("NULL", "NULL")
                left = _not(_equal(left, _const(None, "NULL", token.column, boolean=True)))
            elif token.kind == "IS":
                self.lex.take()
                raise self.unexpected(self.lex.peek(), "NULL or NOT NULL after IS")
            else:
                return left

    def comparison(self) -> _Node:
        left = self.unary()
        while True:
            token = self.lex.peek()
            kind = token.kind
            if kind in _ORDERINGS:
                self.lex.take()
                right = self.unary()
                self.check_ordering(left, token)
                self.check_ordering(right, token)
                left = _ordering(kind, left, right)
            elif kind == "BETWEEN":
                self.lex.take()
                left = self.between(left, token, negated=False)
            elif kind == "IN":
                self.lex.take()
                left = self.in_list(left, token, negated=False)
            elif kind == "NOT" and self.lex.peek(1).kind == "BETWEEN":
                self.lex.take()
                self.lex.take()
                left = self.between(left, token, negated=True)
            elif kind == "NOT" and self.lex.peek(1).kind == "IN":
                self.lex.take()
                self.lex.take()
                left = self.in_list(left, token, negated=True)
            else:
                return left

    def between(self, value: _Node, token: _Token, *, negated: bool) -> _Node:
        low = self.unary()
        self.expect("AND", "AND between the two bounds of BETWEEN")
        high = self.unary()
        for bound in (value, low, high):
            self.check_ordering(bound, token)
        if negated:  # createNotBetween: < low OR > high, no check of the range
            return _junction("OR", _ordering("<", value, low), _ordering(">", value, high))
        if low.is_constant and high.is_constant:  # createBetween's checks
            if low.value is None or high.value is None:
                raise self.fail("the bounds of BETWEEN cannot be NULL", token.column)
            try:
                descending = _compare(high.value, low.value) < 0
            except _EvalError:
                problem = f"the bounds {low.text} and {high.text} cannot be compared"
                raise self.fail(problem, token.column) from None
            if descending:
                raise self.fail(
                    f"the range of BETWEEN must be ascending ({low.text} is above {high.text})", token.column
                )
        return _junction("AND", _ordering(">=", value, low), _ordering("<=", value, high))

    def in_list(self, prop: _Node, token: _Token, *, negated: bool) -> _Node:
        self.expect("(", "( after IN")
        values = [_unquote(self.expect("string", "a string in single quotes").text)]
        while self.lex.peek().kind == ",":
            self.lex.take()
            values.append(_unquote(self.expect("string", "a string in single quotes").text))
        self.expect(")", ", or ) in the IN list")
        if prop.kind != "property":
            raise self.fail(f"IN needs a property on its left, not {prop.text}", token.column)
        return _in(prop, values, negated)

    def unary(self) -> _Node:
        token = self.lex.peek()
        if token.kind == "+":
            self.lex.take()
            return self.unary()
        if token.kind == "-":
            self.lex.take()
            return _negate(self.unary())
        if token.kind == "NOT":
            self.lex.take()
            return _not(self.boolean(self.unary()))
        return self.primary()

    def primary(self) -> _Node:
        token = self.lex.peek()
        kind = token.kind
        if kind == "(":
            self.lex.take()
            node = self.or_()
            self.expect(")", ")")
            return node
        if kind == "id":
            self.lex.take()
            return _property(token.text, token.column)
        if kind == "string":
            self.lex.take()
            text = _unquote(token.text)
            return _const(text, _quote(text), token.column)
        if kind == "decimal":
            self.lex.take()
            return self.decimal(token)
        if kind == "float":
            self.lex.take()
            return self.float_(token)
        if kind in ("TRUE", "FALSE"):
            self.lex.take()
            return _const(kind == "TRUE", kind, token.column, boolean=True)
        if kind == "NULL":
            self.lex.take()
            return _const(None, "NULL", token.column, boolean=True)
        raise self.unexpected(token, "a property, a value or (")

    def decimal(self, token: _Token) -> _Node:
        digits = token.text.rstrip("lL")
        value = int(digits)
        if value > _LONG_MAX:
            raise self.fail(f"{token.text} is beyond the range of a Java long", token.column)
        if value <= _INT_MAX:
            return _const(value, str(value), token.column)
        return _const(JLong(value), str(value), token.column)

    def float_(self, token: _Token) -> _Node:
        value = float(token.text)
        if value > _DOUBLE_MAX:
            raise self.fail(f"{token.text} is greater than {_DOUBLE_MAX!r}", token.column)
        if value < _DOUBLE_MIN:
            raise self.fail(f"{token.text} is less than 4.9E-324 (RocketMQ 4.9 refuses 0.0)", token.column)
        return _const(value, repr(value), token.column)

    # RocketMQ's checks of comparison operands (ComparisonExpression.check*)

    def check_equal(self, left: _Node, right: _Node, token: _Token) -> None:
        for side in (left, right):
            if side.is_constant and side.value is None:
                raise self.fail("NULL cannot be compared with = or <>: use IS NULL", side.column)
        if left.kind == "bool-const" and right.kind == "const":
            raise self.fail(f"{left.text} cannot be compared with {right.text}", token.column)

    def check_ordering(self, side: _Node, token: _Token) -> None:
        what = "BETWEEN" if token.kind in ("BETWEEN", "NOT") else token.text
        if side.is_constant:
            value = side.value
            if type(value) is bool or value is None or type(value) is str:
                raise self.fail(f"{side.text} cannot be compared with {what}: only numbers can", side.column)
        elif side.is_boolean:
            raise self.fail(f"the condition {side.text} cannot be compared with {what}", side.column)


def _unquote(text: str) -> str:
    return text[1:-1].replace("''", "'")


# -- the compiled filter -----------------------------------------------------------------------


class Sql92Filter:
    """A compiled selector: :meth:`matches` tells whether a message's properties select it."""

    __slots__ = ("_run", "expression", "normalized")

    def __init__(self, expression: str, root: _Node) -> None:
        self.expression = expression
        #: The parsed expression, fully parenthesised (what was understood).
        self.normalized = root.text
        self._run = root.run

    def evaluate(self, properties: Mapping[str, str]) -> bool | None:
        """The expression's value for a message: true, false, or ``None`` (unknown, or the
        evaluation failed as RocketMQ's throws)."""
        try:
            value = self._run(properties)
        except _EvalError:
            return None
        return value if type(value) is bool else None

    def matches(self, properties: Mapping[str, str]) -> bool:
        """Whether the message is delivered: the expression is true (RocketMQ's
        ``ExpressionMessageFilter.isMatchedByCommitLog``)."""
        try:
            return self._run(properties) is True
        except _EvalError:
            return False

    def __repr__(self) -> str:
        return f"Sql92Filter({self.expression!r})"


@functools.lru_cache(maxsize=4096)
def _compile(expression: str) -> Sql92Filter | Sql92Error:
    try:
        return Sql92Filter(expression, _Parser(expression).parse())
    except Sql92Error as exc:
        return exc
    except RecursionError:
        return Sql92Error(expression, "the expression nests too deeply")


def compile_sql92(expression: str) -> Sql92Filter:
    """Parse ``expression`` (cached, failures too, as RocketMQ's ``SelectorParser`` caches).

    >>> f = compile_sql92("a > 5 AND color IN ('red', 'blue')")
    >>> f.matches({"a": "7", "color": "red"}), f.matches({"a": "7"}), f.matches({"a": "x", "color": "red"})
    (True, False, False)
    >>> compile_sql92("a > 'x'")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rocketq.broker.filter.sql92.Sql92Error: invalid SQL92 selector "a > 'x'", column 5: 'x' cannot ...
    """
    result = _compile(expression)
    if isinstance(result, Sql92Error):
        raise Sql92Error(result.expression, result.problem, result.column)
    return result
