"""The checker's rules for text: its functions, LIKE/ILIKE and REGEXP_MATCHES.

LOWER, UPPER, MD5, LENGTH, TRIM, LTRIM, RTRIM, SUBSTRING, LEFT, RIGHT, CONCAT, ||, REPLACE, LPAD, RPAD,
STARTS_WITH, ENDS_WITH, CONTAINS and STRPOS. Every argument that could make a function fail or its output
grow with the data (a pattern, a regular expression, a length, the text to find or to pad with) must be a
literal and is checked here: lengths within ``MAX_RESULT_LENGTH``, a LIKE pattern without a backslash, a
regular expression that DuckDB accepts.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from privdb.sql.front.expr.check_core import CheckerCore, duckdb_accepts
from privdb.sql.front.expr.types import MAX_LITERAL_LENGTH, MAX_RESULT_LENGTH, Expr, Type

__all__ = ["TEXT_FUNCTIONS", "TextRules"]

TEXT_FUNCTIONS: dict[type[Any], str] = {exp.Lower: "lower", exp.Upper: "upper", exp.MD5: "md5"}


class TextRules(CheckerCore):
    """Functions of text, and the pattern tests."""

    def like(self, node: exp.Like | exp.ILike) -> Expr:
        pattern = self.literal_text(node.expression, "a LIKE pattern")
        if "\\" in pattern:
            raise self.refuse(node, "has a backslash in its pattern (LIKE has no escape character here)")
        x = self.typed(node.this, Type.TEXT)
        pat = Expr("literal", Type.TEXT, value=pattern, double=False)
        op = "like" if isinstance(node, exp.Like) else "ilike"
        return self.make(op, Type.BOOL, (x, pat), node, portable=op == "like")

    def regexp(self, node: exp.RegexpLike) -> Expr:
        pattern = self.literal_text(node.expression, "a regular expression")
        if node.args.get("flag") is not None:
            raise self.refuse(node, "takes no flags here")
        duckdb_accepts("SELECT regexp_matches('', ?)", pattern, self.where, "regular expression")
        x = self.typed(node.this, Type.TEXT)
        return self.make("regexp", Type.BOOL, (x, Expr("literal", Type.TEXT, value=pattern)), node)

    def text_unary(self, node: Any) -> Expr:
        return self.make(TEXT_FUNCTIONS[type(node)], Type.TEXT, (self.typed(node.this, Type.TEXT),), node)

    def length(self, node: exp.Length) -> Expr:
        return self.make("length", Type.NUM, (self.typed(node.this, Type.TEXT),), node, double=False)

    def trim(self, node: exp.Trim) -> Expr:
        if node.args.get("expression") is not None or node.args.get("collation") is not None:
            raise self.refuse(node, "takes one argument here")
        position = str(node.args.get("position") or "").upper()
        op = {"LEADING": "ltrim", "TRAILING": "rtrim"}.get(position, "trim")
        return self.make(op, Type.TEXT, (self.typed(node.this, Type.TEXT),), node)

    def substring(self, node: exp.Substring) -> Expr:
        start = self.literal_int(
            node.args.get("start"), "SUBSTRING's start", -MAX_RESULT_LENGTH, MAX_RESULT_LENGTH
        )
        length_node = node.args.get("length")
        length = (
            None
            if length_node is None
            else self.literal_int(length_node, "SUBSTRING's length", 0, MAX_RESULT_LENGTH)
        )
        x = self.typed(node.this, Type.TEXT)
        return self.make("substring", Type.TEXT, (x,), node, value=(start, length))

    def left_right(self, node: exp.Left | exp.Right) -> Expr:
        n = self.literal_int(
            node.expression, f"{node.key.upper()}'s length", -MAX_RESULT_LENGTH, MAX_RESULT_LENGTH
        )
        op = "left" if isinstance(node, exp.Left) else "right"
        return self.make(op, Type.TEXT, (self.typed(node.this, Type.TEXT),), node, value=n)

    def concat(self, node: exp.Concat) -> Expr:
        args = tuple(self.typed(a, Type.TEXT) for a in node.expressions)
        return self.make("concat", Type.TEXT, args, node)

    def dpipe(self, node: exp.DPipe) -> Expr:
        args = (self.typed(node.this, Type.TEXT), self.typed(node.expression, Type.TEXT))
        return self.make("dpipe", Type.TEXT, args, node)

    def replace(self, node: exp.Replace) -> Expr:
        old = self.literal_text(node.expression, "REPLACE's text to find")
        new = self.literal_text(node.args.get("replacement"), "REPLACE's replacement")
        x = self.typed(node.this, Type.TEXT)
        lits = (Expr("literal", Type.TEXT, value=old), Expr("literal", Type.TEXT, value=new))
        return self.make("replace", Type.TEXT, (x, *lits), node)

    def pad(self, node: exp.Pad) -> Expr:
        n = self.literal_int(node.expression, "the padded length", 0, MAX_RESULT_LENGTH)
        fill = self.literal_text(node.args.get("fill_pattern"), "the padding")
        if not fill:
            raise self.refuse(node, "pads with nothing")
        x = self.typed(node.this, Type.TEXT)
        op = "lpad" if node.args.get("is_left") else "rpad"
        return self.make(op, Type.TEXT, (x, Expr("literal", Type.TEXT, value=fill)), node, value=n)

    def text_test(self, node: Any) -> Expr:
        other = self.literal_text(node.expression, "the text to look for", MAX_LITERAL_LENGTH)
        op = {exp.StartsWith: "starts_with", exp.EndsWith: "ends_with", exp.Contains: "contains"}[type(node)]
        x = self.typed(node.this, Type.TEXT)
        return self.make(op, Type.BOOL, (x, Expr("literal", Type.TEXT, value=other)), node)

    def strpos(self, node: exp.StrPosition) -> Expr:
        if node.args.get("position") is not None or node.args.get("occurrence") is not None:
            raise self.refuse(node, "takes two arguments here")
        other = self.literal_text(node.args.get("substr"), "the text to look for", MAX_LITERAL_LENGTH)
        x = self.typed(node.this, Type.TEXT)
        lit = Expr("literal", Type.TEXT, value=other)
        return self.make("strpos", Type.NUM, (x, lit), node, double=False)

    def named_text(self, node: exp.Anonymous, name: str, args: list[exp.Expression]) -> Expr | None:
        """STRLEN, CHAR_LENGTH, CHARACTER_LENGTH, PREFIX and SUFFIX (DuckDB's spellings); else None."""
        if name in ("STRLEN", "CHAR_LENGTH", "CHARACTER_LENGTH") and len(args) == 1:
            return self.make("length", Type.NUM, (self.typed(args[0], Type.TEXT),), node, double=False)
        if name in ("PREFIX", "SUFFIX") and len(args) == 2:
            other = self.literal_text(args[1], "the text to look for", MAX_LITERAL_LENGTH)
            op = "starts_with" if name == "PREFIX" else "ends_with"
            x = self.typed(args[0], Type.TEXT)
            return self.make(op, Type.BOOL, (x, Expr("literal", Type.TEXT, value=other)), node)
        return None
