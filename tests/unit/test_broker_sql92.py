"""SQL92 selectors: a differential table of expressions x property maps against RocketMQ 4.9.4.

Each row gives the value RocketMQ 4.9.4's evaluator produces - ``True`` (delivered), ``False``,
or ``None`` for unknown *or* an evaluation that throws (its ``ExpressionMessageFilter`` then
delivers nothing either) - derived from its sources; the rule a non-obvious row exercises is
cited beside it (``filter/expression/ComparisonExpression.java`` is "CE", ``LogicExpression``
"LE", ``UnaryExpression`` "UE", ``ConstantExpression`` "KE", the grammar ``SelectorParser.jj``
"SP"). The same table runs end to end through a broker in
``tests/integration/test_broker_sql92.py``.
"""

from __future__ import annotations

import doctest

import pytest

import rocketq.broker.filter.sql92 as sql92_module
from rocketq.broker.filter import Sql92Error, compile_sql92, is_tag_type

# (expression, properties, RocketMQ's value, rule)
TABLE: list[tuple[str, dict[str, str], bool | None, str]] = [
    # -- numbers: the property converts to the literal's type (CE.__compare, convert on)
    ("a > 5", {"a": "7"}, True, "String vs Integer: Integer.valueOf(a)"),
    ("a > 5", {"a": "5"}, False, ""),
    ("a >= 5", {"a": "5"}, True, ""),
    ("a < 5", {"a": "-3"}, True, "Integer.valueOf takes a sign"),
    ("a <= 5", {"a": "+5"}, True, "Integer.valueOf takes a plus sign too"),
    ("a > 5", {"a": "5.5"}, None, "Integer.valueOf('5.5') throws: no match"),
    ("a > 5", {"a": " 7"}, None, "Integer.valueOf does not trim"),
    ("a > 5", {"a": "3000000000"}, None, "beyond Integer: Integer.valueOf throws"),
    ("a > 3000000000", {"a": "3000000001"}, True, "literal beyond int is a Long (KE.createFromDecimal)"),
    ("a > 5L", {"a": "3000000000"}, None, "5L fits an int: still an Integer (KE strips the L)"),
    ("a > 5.0", {"a": "7"}, True, "Double literal: Double.valueOf(a)"),
    ("a > 5.0", {"a": " 7 "}, True, "Double.valueOf trims"),
    ("a > 5.0", {"a": "7f"}, True, "Double.valueOf takes a float suffix"),
    ("a > 5.0", {"a": "1e3"}, True, ""),
    ("a > 5.0", {"a": "NaN"}, True, "Double.compareTo puts NaN above everything"),
    ("a < 5.0", {"a": "-Infinity"}, True, ""),
    ("a > 5.0", {"a": "inf"}, None, "Double.valueOf knows only 'Infinity'"),
    ("a > 5", {"a": "x"}, None, "no conversion: throws"),
    ("a > -5", {"a": "-4"}, True, "unary minus on a literal (UE.createNegate)"),
    ("a > - -5", {"a": "6"}, True, ""),
    ("a > +5", {"a": "6"}, True, "unary plus is nothing (SP)"),
    ("a > 5", {}, None, "missing property: null (CE.evaluate)"),
    ("5 < a", {"a": "7"}, True, "literal on the left converts the property the other way"),
    ("5 < a", {"a": "x"}, None, ""),
    # -- two properties
    ("a > b", {"a": "10", "b": "9"}, True, "two strings compare as doubles, not as text"),
    ("a > b", {"a": "x", "b": "9"}, None, "Double.valueOf('x') throws"),
    ("a = b", {"a": "10", "b": "10.0"}, False, "= compares two strings as strings"),
    ("a = b", {"a": "x", "b": "x"}, True, ""),
    ("a > b", {"a": "10"}, None, ""),
    # -- equality
    ("a = 5", {"a": "5"}, True, "String vs Integer: converted"),
    ("a = 5", {"a": "05"}, True, "Integer.valueOf('05') is 5"),
    ("a = 5", {"a": "x"}, None, "conversion throws"),
    ("a = 'x'", {"a": "x"}, True, ""),
    ("a = 'X'", {"a": "x"}, False, "strings are case-sensitive"),
    ("a = 'it''s'", {"a": "it's"}, True, "'' is a quote in a literal (SP)"),
    ("a = ''", {"a": "x"}, False, "an empty literal is a string like any other"),
    ("a <> 5", {"a": "6"}, True, "<> is NOT (=) (CE.createNotEqual)"),
    ("a <> 5", {}, None, "NOT null is null: a missing property never satisfies <>"),
    ("a <> 5", {"a": "x"}, None, "the conversion throws inside the NOT"),
    ("a = 5.0", {"a": "5"}, True, "Double.valueOf('5') = 5.0"),
    ("a = TRUE", {"a": "TRUE"}, True, "Boolean.valueOf ignores case"),
    ("a = TRUE", {"a": "yes"}, False, "anything else is false"),
    ("a = FALSE", {"a": "nope"}, True, ""),
    ("TRUE = a", {"a": "true"}, None, "Boolean on the left: CE casts it to String and throws"),
    ("5 = TRUE", {}, False, "Integer vs Boolean: not comparable (-1), no conversion"),
    ("'x' = 5", {}, None, "Integer.valueOf('x') throws"),
    ("TRUE = FALSE", {}, False, ""),
    ("(a = 1) = TRUE", {"a": "1"}, True, "a condition compared with a boolean"),
    ("(a = 1) = TRUE", {}, None, ""),
    # -- IS NULL
    ("a IS NULL", {}, True, "IS NULL: null = null is true (CE.doCreateEqual)"),
    ("a IS NULL", {"a": "0"}, False, ""),
    ("a IS NOT NULL", {"a": "1"}, True, ""),
    ("a IS NOT NULL", {}, False, ""),
    ("5 IS NULL", {}, False, "any expression may be tested"),
    ("(a = 1) IS NULL", {}, True, "a condition on a missing property is null"),
    # -- BETWEEN
    ("a BETWEEN 1 AND 5", {"a": "3"}, True, ">= low AND <= high (CE.createBetween)"),
    ("a BETWEEN 1 AND 5", {"a": "5"}, True, "inclusive"),
    ("a BETWEEN 1 AND 5", {"a": "6"}, False, ""),
    ("a BETWEEN 1 AND 5", {}, None, ""),
    ("a BETWEEN 1 AND 5", {"a": "x"}, None, ""),
    ("a NOT BETWEEN 1 AND 5", {"a": "0"}, True, "< low OR > high (CE.createNotBetween)"),
    ("a NOT BETWEEN 1 AND 5", {"a": "3"}, False, ""),
    ("a NOT BETWEEN 1 AND 5", {}, None, ""),
    ("a NOT BETWEEN 5 AND 1", {"a": "3"}, True, "NOT BETWEEN does not check its range"),
    ("a BETWEEN -1.5 AND 2", {"a": "0"}, True, "each bound converts the property by its own type"),
    ("a BETWEEN -1.5 AND 2", {"a": "0.5"}, None, "Integer.valueOf('0.5') for the upper bound throws"),
    # -- IN
    ("a IN ('x', 'y')", {"a": "y"}, True, ""),
    ("a IN ('x', 'y')", {"a": "z"}, False, ""),
    ("a IN ('x')", {}, None, "IN on a missing property is null (UE.createInExpression)"),
    ("a NOT IN ('x')", {"a": "z"}, True, ""),
    ("a NOT IN ('x')", {}, None, "NOT IN too: a message without the property never matches"),
    ("a IN ('1')", {"a": "01"}, False, "IN compares strings, no conversion"),
    # -- logic, three-valued and left to right (LE)
    ("a = 1 AND b = 2", {"a": "1", "b": "2"}, True, ""),
    ("a = 1 AND b = 2", {"a": "1"}, None, "TRUE AND null = null"),
    ("a = 1 AND b = 2", {"a": "0"}, False, "FALSE AND anything = FALSE"),
    ("a = 1 OR b = 2", {"b": "2"}, True, "null OR TRUE = TRUE"),
    ("a = 1 OR b = 2", {"a": "0"}, None, "FALSE OR null = null"),
    ("a = 1 OR b = 2", {"a": "x", "b": "2"}, None, "the left side throws: the whole expression fails"),
    ("b = 2 OR a = 1", {"a": "x", "b": "2"}, True, "OR stops at a true left side: a is never converted"),
    ("a = 0 AND b > 5", {"a": "1", "b": "x"}, False, "AND stops at a false left side"),
    ("NOT (a = 1)", {"a": "2"}, True, ""),
    ("NOT (a = 1)", {}, None, "NOT null is null"),
    ("a = 1 OR b = 2 AND c = 3", {"a": "1"}, True, "AND binds tighter than OR"),
    ("(a = 1 OR b = 2) AND c = 3", {"a": "1"}, None, ""),
    # -- a property as a condition (UE.createBooleanCast)
    ("a", {"a": "true"}, False, "a String is not a Boolean: false"),
    ("a", {}, None, ""),
    ("NOT a", {"a": "x"}, True, ""),
    ("NOT a = 1", {"a": "1"}, False, "NOT binds tighter: (NOT a) = 1 compares a Boolean with 1"),
    ("NOT a = 1", {}, None, ""),
    # -- literals as whole expressions
    ("TRUE", {}, True, "a boolean constant is a condition"),
    ("FALSE", {}, False, ""),
    ("NULL", {}, None, ""),
    # -- syntax
    ("A = 1", {"a": "1"}, None, "property names are case-sensitive"),
    ("a = 1 and B IS null", {"a": "1"}, True, "keywords are not"),
    ("$x_1 = 1", {"$x_1": "1"}, True, "identifiers take $ and _"),
    ("a = 1 -- the rest is a comment\n", {"a": "1"}, True, "line comments end at a line end (SP)"),
    ("a = /* inline */ 1", {"a": "1"}, True, ""),
    ("a = 1 b = 2", {"a": "1"}, True, "the parse stops at what cannot continue: b = 2 is ignored"),
    ("a = 1 )", {"a": "1"}, True, ""),
    ("a = 007", {"a": "0"}, True, "007 is the tokens 0 0 7: a = 0, the rest ignored"),
    ("a = 1 --", {"a": "1"}, True, "a comment needs its line end: '--' is two stray tokens, ignored"),
    ("a CONTAINS 'x'", {"a": "xyz"}, False, "4.9 has no CONTAINS (5.x): the expression is just a"),
    ("a > 1.5e1", {"a": "16"}, True, "floats with exponents"),
    ("a > .5", {"a": "0.6"}, True, ""),
    ("a > 5.", {"a": "6"}, True, ""),
    ("TAGS = 'TagA'", {"TAGS": "TagA"}, True, "system properties are visible"),
]


def _row_id(row: tuple[str, dict[str, str], bool | None, str]) -> str:
    expr, props, _, _ = row
    return f"{expr!r} {props}"


@pytest.mark.parametrize(
    ("expression", "properties", "value", "rule"), TABLE, ids=[_row_id(r) for r in TABLE]
)
def test_evaluation_matches_rocketmq(
    expression: str, properties: dict[str, str], value: bool | None, rule: str
) -> None:
    selector = compile_sql92(expression)
    assert selector.evaluate(properties) is value, rule
    assert selector.matches(properties) is (value is True)


# (expression, what the error names) - each refused by RocketMQ 4.9.4's parser
ERRORS: list[tuple[str, str]] = [
    ("", "empty"),
    ("a >", "expected a property, a value or ("),
    ("a > 'x'", "'x' cannot be compared with >"),  # CE.checkLessThanOperand: numbers only
    ("a < TRUE", "TRUE cannot be compared with <"),
    ("a >= NULL", "NULL cannot be compared"),
    ("a = NULL", "use IS NULL"),  # CE.checkEqualOperand
    ("NULL <> a", "use IS NULL"),
    ("TRUE = 'x'", "TRUE cannot be compared with 'x'"),  # CE.checkEqualOperandCompatability
    ("(a = 1) > 2", "the condition (a = 1) cannot be compared"),
    ("NOT a > 1", "the condition (NOT a) cannot be compared"),  # NOT binds tighter
    ("a BETWEEN 5 AND 1", "ascending"),  # CE.createBetween
    ("a BETWEEN 'a' AND 'b'", "'a' cannot be compared"),
    ("a BETWEEN NULL AND 5", "NULL cannot be compared"),
    ("a NOT BETWEEN 'a' AND 'b'", "'a' cannot be compared"),
    ("a IN (1, 2)", "a string in single quotes"),  # SP: IN takes string literals
    ("a IN ()", "a string in single quotes"),
    ("5 IN ('x')", "IN needs a property"),  # CE.createInFilter
    ("a > 0.0", "less than 4.9E-324"),  # KE.createFloat: below Double.MIN_VALUE
    ("a > 1e-400", "less than 4.9E-324"),
    ("a > 1e400", "greater than"),
    ("a = 9223372036854775808", "range of a Java long"),  # KE.createFromDecimal: new Long()
    ("a = 1 AND 2", "2 is not a condition"),  # SP.asBooleanExpression
    ("5", "5 is not a condition"),
    ("'x' OR a = 1", "'x' is not a condition"),
    ("NOT 5", "5 is not a condition"),
    ("a IS 5", "NULL or NOT NULL after IS"),
    ("a IS NOT 5", "expected NULL"),
    ("a ! 3", "unexpected character '!'"),  # no such token
    ("a != 3", "unexpected character '!'"),
    ("a = 1 !", "unexpected character '!'"),  # the token after an expression is looked at
    ("a == 3", "expected a property, a value or ("),
    ("a = 'open", "unexpected character"),  # an unterminated string
    ("a = 1 /* open", "unexpected character '/'"),
    ("a.b = 1", "unexpected character '.'"),  # identifiers have no dots
    ("(a = 1", "expected )"),
]


@pytest.mark.parametrize(("expression", "message"), ERRORS)
def test_parse_errors_name_the_problem(expression: str, message: str) -> None:
    with pytest.raises(Sql92Error) as info:
        compile_sql92(expression)
    assert message in str(info.value)
    assert expression in str(info.value)


def test_errors_point_at_the_column() -> None:
    with pytest.raises(Sql92Error) as info:
        compile_sql92("a = 1 AND b > 'x'")
    assert info.value.column == 15
    assert str(info.value).startswith("invalid SQL92 selector \"a = 1 AND b > 'x'\", column 15:")


def test_compiled_expressions_and_failures_are_cached() -> None:
    assert compile_sql92("cached > 1") is compile_sql92("cached > 1")
    for _ in range(2):
        with pytest.raises(Sql92Error):
            compile_sql92("cached >")


def test_deep_nesting_is_an_error_not_a_crash() -> None:
    with pytest.raises(Sql92Error, match="nests too deeply"):
        compile_sql92("(" * 5000 + "a = 1" + ")" * 5000)
    assert compile_sql92("NOT " * 50 + "(a = 1)").matches({"a": "1"})


def test_normalized_text_shows_what_was_understood() -> None:
    assert compile_sql92("a = 1 or b between 2 and 3").normalized == "((a = 1) OR ((b >= 2) AND (b <= 3)))"
    assert compile_sql92("NOT a = 1").normalized == "((NOT a) = 1)"


def test_expression_types() -> None:
    assert is_tag_type(None)
    assert is_tag_type("")
    assert is_tag_type("TAG")
    assert not is_tag_type("SQL92")


def test_module_doctests() -> None:
    failures, tried = doctest.testmod(sql92_module, optionflags=doctest.ELLIPSIS)
    assert tried > 0
    assert failures == 0
