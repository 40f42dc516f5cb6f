"""The parts of PostgreSQL's ``pg_catalog`` that DuckDB lacks, for psql's ``\\d TABLE`` and SQLAlchemy's
reflection (``inspect(engine).get_columns`` and the like).

Two halves, both working on the session's empty shadow (privdb.server.pgwire.catalog), never on data:

* **views**, written into the query as subqueries (so no catalog object is added), shaped like
  PostgreSQL's relations of the same name (the columns psql 15/16 and SQLAlchemy 2 read) and built from
  DuckDB's catalog of the shadow's schema ``public`` only, i.e. the principal's visible tables.
  Relations privdb has nothing to put in (indexes, defaults, constraints, inheritance, triggers, policies,
  publications…) are empty, and sizes are 0: no size of a real table is told.
* **a rewrite** (sqlglot, PostgreSQL to DuckDB) of each catalog query: a reference to one of those
  relations goes to its view; ``pg_catalog.``-qualified columns, functions and types lose the prefix; a
  cast to ``regclass`` of a name becomes the name's oid, a cast to ``regclass``/``regtype``/``oid`` of a
  number stays the number.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

__all__ = ["MACROS", "VIEWS", "rewrite_tree"]

_PUBLIC = "(SELECT oid FROM system.pg_catalog.pg_namespace WHERE nspname = 'public')"


def _empty(columns: str) -> str:
    """An empty relation with these ``name:TYPE`` columns (space-separated)."""
    pairs = (x.split(":") for x in columns.split())
    return "SELECT " + ", ".join(f"CAST(NULL AS {t}) AS {c}" for c, t in pairs) + " WHERE false"


VIEWS: dict[str, str] = {
    "pg_class": (
        "SELECT * EXCLUDE (relreplident, reloptions), 'd' AS relreplident, false AS relforcerowsecurity, "
        "CAST(NULL AS VARCHAR[]) AS reloptions "
        f"FROM system.pg_catalog.pg_class WHERE relnamespace IN {_PUBLIC} AND relkind IN ('r', 'v')"
    ),
    "pg_attribute": (
        "SELECT a.* REPLACE (CAST(a.attnum AS SMALLINT) AS attnum, CAST(-1 AS INTEGER) AS atttypmod) "
        "FROM system.pg_catalog.pg_attribute a WHERE a.attrelid IN (SELECT oid FROM "
        f"system.pg_catalog.pg_class WHERE relnamespace IN {_PUBLIC})"
    ),
    "pg_namespace": "SELECT * FROM system.pg_catalog.pg_namespace WHERE nspname <> 'main'",  # DuckDB's own
    "pg_index": _empty(
        "indexrelid:BIGINT indrelid:BIGINT indnatts:SMALLINT indnkeyatts:SMALLINT indisunique:BOOLEAN "
        "indnullsnotdistinct:BOOLEAN indisprimary:BOOLEAN indisexclusion:BOOLEAN indimmediate:BOOLEAN "
        "indisclustered:BOOLEAN indisvalid:BOOLEAN indcheckxmin:BOOLEAN indisready:BOOLEAN "
        "indislive:BOOLEAN indisreplident:BOOLEAN indkey:SMALLINT[] indcollation:BIGINT[] "
        "indclass:BIGINT[] indoption:SMALLINT[] indexprs:VARCHAR indpred:VARCHAR"
    ),
    "pg_attrdef": _empty("oid:BIGINT adrelid:BIGINT adnum:SMALLINT adbin:VARCHAR"),
    "pg_description": _empty("objoid:BIGINT classoid:BIGINT objsubid:INTEGER description:VARCHAR"),
    "pg_constraint": _empty(
        "oid:BIGINT conname:VARCHAR connamespace:BIGINT contype:VARCHAR condeferrable:BOOLEAN "
        "condeferred:BOOLEAN convalidated:BOOLEAN conrelid:BIGINT contypid:BIGINT conindid:BIGINT "
        "conparentid:BIGINT confrelid:BIGINT confupdtype:VARCHAR confdeltype:VARCHAR "
        "confmatchtype:VARCHAR conislocal:BOOLEAN coninhcount:INTEGER connoinherit:BOOLEAN "
        "conkey:SMALLINT[] confkey:SMALLINT[] conbin:VARCHAR"
    ),
    "pg_collation": _empty("oid:BIGINT collname:VARCHAR collnamespace:BIGINT"),
    "pg_sequence": _empty(
        "seqrelid:BIGINT seqtypid:BIGINT seqstart:BIGINT seqincrement:BIGINT seqmax:BIGINT seqmin:BIGINT "
        "seqcache:BIGINT seqcycle:BOOLEAN"
    ),
    "pg_inherits": _empty("inhrelid:BIGINT inhparent:BIGINT inhseqno:INTEGER inhdetachpending:BOOLEAN"),
    "pg_trigger": _empty(
        "oid:BIGINT tgrelid:BIGINT tgparentid:BIGINT tgname:VARCHAR tgenabled:VARCHAR "
        "tgisinternal:BOOLEAN tgconstraint:BIGINT"
    ),
    "pg_policy": _empty(
        "oid:BIGINT polname:VARCHAR polrelid:BIGINT polcmd:VARCHAR polpermissive:BOOLEAN "
        "polroles:BIGINT[] polqual:VARCHAR polwithcheck:VARCHAR"
    ),
    "pg_rewrite": _empty("oid:BIGINT rulename:VARCHAR ev_class:BIGINT ev_type:VARCHAR ev_enabled:VARCHAR"),
    "pg_statistic_ext": _empty(
        "oid:BIGINT stxrelid:BIGINT stxname:VARCHAR stxnamespace:BIGINT stxkeys:SMALLINT[] "
        "stxstattarget:INTEGER stxkind:VARCHAR[] stxexprs:VARCHAR"
    ),
    "pg_publication": _empty("oid:BIGINT pubname:VARCHAR puballtables:BOOLEAN pubviaroot:BOOLEAN"),
    "pg_publication_rel": _empty(
        "oid:BIGINT prpubid:BIGINT prrelid:BIGINT prqual:VARCHAR prattrs:SMALLINT[]"
    ),
    "pg_publication_namespace": _empty("oid:BIGINT pnpubid:BIGINT pnnspid:BIGINT"),
    "pg_partitioned_table": _empty("partrelid:BIGINT partstrat:VARCHAR partnatts:SMALLINT"),
    "pg_foreign_table": _empty("ftrelid:BIGINT ftserver:BIGINT ftoptions:VARCHAR[]"),
    "pg_opclass": _empty("oid:BIGINT opcname:VARCHAR opcnamespace:BIGINT opcdefault:BOOLEAN"),
    "pg_roles": _empty(
        "oid:BIGINT rolname:VARCHAR rolsuper:BOOLEAN rolinherit:BOOLEAN rolcreaterole:BOOLEAN "
        "rolcreatedb:BOOLEAN rolcanlogin:BOOLEAN rolconnlimit:INTEGER rolvaliduntil:TIMESTAMP "
        "rolreplication:BOOLEAN rolbypassrls:BOOLEAN"
    ),
    "pg_auth_members": _empty("oid:BIGINT roleid:BIGINT member:BIGINT grantor:BIGINT"),
    "pg_proc": _empty(
        "oid:BIGINT proname:VARCHAR pronamespace:BIGINT prokind:VARCHAR prorettype:BIGINT "
        "proargtypes:BIGINT[] proretset:BOOLEAN proargnames:VARCHAR[] proallargtypes:BIGINT[] "
        "proargmodes:VARCHAR[] proargdefaults:VARCHAR prosrc:VARCHAR proisagg:BOOLEAN proiswindow:BOOLEAN "
        "prolang:BIGINT proowner:BIGINT"
    ),
    "pg_database": (
        "SELECT 1 AS oid, 'privdb' AS datname, 10 AS datdba, 6 AS encoding, 'c' AS datlocprovider, "
        "false AS datistemplate, true AS datallowconn, -1 AS datconnlimit, 'C.UTF-8' AS datcollate, "
        "'C.UTF-8' AS datctype, NULL::VARCHAR AS daticulocale, NULL::VARCHAR AS daticurules, "
        "NULL::VARCHAR[] AS datacl, 1663 AS dattablespace"
    ),
    "pg_am": "SELECT 2 AS oid, 'heap' AS amname, NULL AS amhandler, 't' AS amtype",
    "pg_extension": _empty(  # none (Grafana asks for TimescaleDB's version)
        "oid:BIGINT extname:VARCHAR extowner:BIGINT extnamespace:BIGINT extrelocatable:BOOLEAN "
        "extversion:VARCHAR extconfig:BIGINT[] extcondition:VARCHAR[]"
    ),
    "pg_depend": _empty(
        "classid:BIGINT objid:BIGINT objsubid:INTEGER refclassid:BIGINT refobjid:BIGINT "
        "refobjsubid:INTEGER deptype:VARCHAR"
    ),
}

# functions the rewritten queries call, defined in the shadow (no value of data can reach any of them)
MACROS = [
    "CREATE MACRO format_type(id, typemod) AS CASE id WHEN 16 THEN 'boolean' WHEN 20 THEN 'bigint' "
    "WHEN 21 THEN 'smallint' WHEN 23 THEN 'integer' WHEN 25 THEN 'text' WHEN 1043 THEN 'text' "
    "WHEN 700 THEN 'real' WHEN 701 THEN 'double precision' WHEN 1082 THEN 'date' "
    "WHEN 1114 THEN 'timestamp without time zone' WHEN 1184 THEN 'timestamp with time zone' "
    "WHEN 1700 THEN 'numeric' ELSE (SELECT any_value(typname) FROM pg_type WHERE oid = id) END",
    "CREATE MACRO pg_table_size(id) AS 0",  # the shadow is empty: no size of the real tables is told
    "CREATE MACRO pg_relation_size(id, fork := NULL) AS 0",
    "CREATE MACRO pg_total_relation_size(id) AS 0",
    "CREATE MACRO pg_size_pretty(n) AS CAST(n AS VARCHAR) || ' bytes'",
    "CREATE MACRO pg_get_function_result(id) AS NULL::VARCHAR",
    "CREATE MACRO pg_get_function_arguments(id) AS NULL::VARCHAR",
    "CREATE MACRO pg_function_is_visible(id) AS TRUE",
    "CREATE MACRO array_upper(a, d) AS len(a)",
    "CREATE MACRO array_lower(a, d) AS CASE WHEN len(a) > 0 THEN 1 END",
    "CREATE MACRO pg_get_expr(expr, rel, pretty := NULL) AS CAST(expr AS VARCHAR)",
    "CREATE MACRO pg_get_indexdef(id, col := 0, pretty := NULL) AS NULL::VARCHAR",
    "CREATE MACRO pg_get_constraintdef(id, pretty := NULL) AS NULL::VARCHAR",
    "CREATE MACRO pg_get_triggerdef(id, pretty := NULL) AS NULL::VARCHAR",
    "CREATE MACRO pg_get_statisticsobjdef_columns(id) AS NULL::VARCHAR",
    "CREATE MACRO pg_get_partkeydef(id) AS NULL::VARCHAR",
    "CREATE MACRO pg_relation_is_publishable(id) AS FALSE",
    "CREATE MACRO pg_get_function_identity_arguments(id) AS NULL::VARCHAR",
    "CREATE MACRO to_regnamespace(name) AS NULL::BIGINT",
    "CREATE MACRO to_regproc(name) AS NULL::BIGINT",
    "CREATE MACRO quote_ident(name) AS CASE WHEN regexp_full_match(name, '[a-z_][a-z0-9_]*') THEN name "
    "ELSE '\"' || replace(name, '\"', '\"\"') || '\"' END",
    "CREATE MACRO quote_literal(v) AS chr(39) || replace(CAST(v AS VARCHAR), chr(39), chr(39) || chr(39)) "
    "|| chr(39)",
    "CREATE MACRO pg_operator_is_visible(id) AS TRUE",
    "CREATE MACRO pg_opclass_is_visible(id) AS TRUE",
    "CREATE MACRO has_column_privilege(a, b, c := NULL, d := NULL) AS TRUE",
    "CREATE MACRO has_database_privilege(a, b, c := NULL) AS TRUE",
    "CREATE MACRO has_function_privilege(a, b, c := NULL) AS TRUE",
    "CREATE MACRO has_sequence_privilege(a, b, c := NULL) AS TRUE",
    "CREATE MACRO inet_client_addr() AS NULL::VARCHAR",
    "CREATE MACRO inet_client_port() AS NULL::INTEGER",
    "CREATE MACRO inet_server_port() AS NULL::INTEGER",
    "CREATE MACRO pg_is_in_recovery() AS FALSE",
    # a qualified name's parts (Grafana's column list): unquoted parts lower-cased, quoted ones as written
    # (a dot inside quotes is not told apart: catalog names have none)
    "CREATE MACRO parse_ident(name, strict := TRUE) AS list_transform(string_split(name, '.'), lambda p: "
    "CASE WHEN trim(p) LIKE '\"%\"' THEN replace(trim(p)[2:-2], '\"\"', '\"') ELSE lower(trim(p)) END)",
]


def functions_in_from(tree: exp.Expr) -> None:
    """PostgreSQL's functions in FROM as DuckDB reads them (in place): a set-returning one aliased
    without columns names its column by the alias (``generate_series(1, 3) AS i`` → ``i``), and a scalar
    one (Grafana's ``string_to_array(current_setting('search_path'), ',') s``) is a one-row relation
    whose column is named by its alias."""
    series = (exp.ExplodingGenerateSeries, exp.GenerateSeries, exp.Unnest, exp.Explode)
    for table in list(tree.find_all(exp.Table)):
        function, alias = table.this, table.args.get("alias")
        if not isinstance(function, exp.Func) or alias is None or alias.columns or not alias.name:
            continue
        if isinstance(function, series):
            alias.set("columns", [exp.to_identifier(alias.name)])
        else:
            one_row = exp.select(exp.alias_(function.copy(), alias.name, quoted=True))
            table.replace(one_row.subquery(exp.to_identifier(alias.name)))


# information_schema's relations whose DuckDB rows differ from PostgreSQL's: DuckDB lists a ``main``
# schema in each of its own catalogs (Grafana's schema list showed it three times)
INFORMATION_VIEWS = {
    "schemata": "SELECT * REPLACE ('privdb' AS catalog_name) FROM information_schema.schemata "
    "WHERE schema_name <> 'main'",
    # types named as PostgreSQL names them (Grafana picks time and number columns by data_type)
    "columns": "SELECT * REPLACE ('privdb' AS table_catalog, CASE data_type WHEN 'BIGINT' THEN 'bigint' "
    "WHEN 'DOUBLE' THEN 'double precision' WHEN 'VARCHAR' THEN 'text' WHEN 'BOOLEAN' THEN 'boolean' "
    "WHEN 'DATE' THEN 'date' WHEN 'TIMESTAMP' THEN 'timestamp without time zone' ELSE lower(data_type) "
    "END AS data_type) FROM information_schema.columns",
    "tables": "SELECT * REPLACE ('privdb' AS table_catalog) FROM information_schema.tables",
}
_PARSED = {name: sqlglot.parse_one(sql, read="duckdb") for name, sql in VIEWS.items()}
_PARSED_INFORMATION = {name: sqlglot.parse_one(sql, read="duckdb") for name, sql in INFORMATION_VIEWS.items()}
_SETTINGS = {"default_table_access_method": "heap"}  # PostgreSQL settings DuckDB does not have
_CATALOG = {"pg_catalog", ""}
_OID_TYPES = {"regclass", "regtype", "regproc", "regprocedure", "regnamespace", "regrole", "oid", "regoper"}
_TEXT_TYPES = {"text", "name", "varchar", "char", "bpchar"}


def _type_name(to: exp.DataType) -> str:
    """The name of a cast's target type (``pg_catalog.regtype`` → ``regtype``), lower case."""
    kind = to.args.get("kind")
    if isinstance(kind, exp.Dot):
        return str(kind.expression.name).lower()
    if isinstance(to, exp.ObjectIdentifier):
        return to.name.lower()
    return to.sql("postgres").lower()


def _regclass_of(name: str) -> exp.Expr:
    """``'schema.table'::regclass`` as the table's oid in the shadow (NULL if it is not there)."""
    relname = name.split(".")[-1].strip('"')
    return sqlglot.parse_one(
        f"(SELECT min(oid) FROM ({VIEWS['pg_class']}) WHERE relname = {exp.Literal.string(relname).sql()})",
        read="duckdb",
    )


def pg_array(text: str) -> list[str | None] | None:
    """The elements of a one-dimensional PostgreSQL array literal (``{r,p,"a b",NULL}``), or None if
    ``text`` is not one. Clients send lists so: psycopg's ``Literal(['r', 'p'])``, a ``text[]``
    parameter."""
    text = text.strip()
    if not (text.startswith("{") and text.endswith("}")):
        return None
    body, i = text[1:-1], 0
    out: list[str | None] = []
    if not body.strip():
        return []
    while i <= len(body):
        if i < len(body) and body[i] == '"':
            j, item = i + 1, []
            while j < len(body) and body[j] != '"':
                if body[j] == "\\" and j + 1 < len(body):
                    j += 1
                item.append(body[j])
                j += 1
            if j >= len(body):
                return None
            out.append("".join(item))
            i = j + 1
        else:
            j = body.find(",", i)
            j = len(body) if j < 0 else j
            word = body[i:j].strip()
            if "{" in word or "}" in word or '"' in word:
                return None  # nested arrays: not a list of catalog values
            out.append(None if word.upper() == "NULL" else word)
            i = j
        if i < len(body) and body[i] != ",":
            return None
        i += 1
    return out


def _as_list(node: exp.Expr) -> exp.Expr | None:
    """A string literal holding a PostgreSQL array literal, as a DuckDB list (None if it is not one)."""
    if not (isinstance(node, exp.Literal) and node.is_string):
        return None
    items = pg_array(node.name)
    if items is None:
        return None
    return exp.Array(expressions=[exp.Null() if v is None else exp.Literal.string(v) for v in items])


def _node(node: exp.Expr) -> exp.Expr:
    inner = node.this.this if isinstance(node, exp.Any) and isinstance(node.this, exp.Paren) else None
    if inner is not None and (listed := _as_list(inner)) is not None:
        return exp.Any(this=exp.Paren(this=listed))
    if isinstance(node, exp.Cast) and node.to.is_type(exp.DataType.Type.ARRAY):
        listed = _as_list(node.this)
        if listed is not None:
            return exp.cast(listed, node.to.copy())
    if isinstance(node, exp.DataType) and isinstance(node.args.get("kind"), exp.Dot):
        name = _type_name(node)
        if name not in _OID_TYPES:
            try:
                return exp.DataType.build(name, dialect="postgres")
            except (sqlglot.errors.ParseError, ValueError):
                return node
        return node
    if isinstance(node, exp.Cast):
        target = _type_name(node.to)
        if target in _OID_TYPES:
            if target == "regclass" and isinstance(node.this, exp.Literal) and node.this.is_string:
                return _regclass_of(node.this.name)
            if target == "regtype":  # a type's name, as PostgreSQL prints a regtype ('bigint')
                if isinstance(node.this, exp.Literal) and node.this.is_string:
                    return exp.Literal.string(node.this.name.lower())
                return exp.Anonymous(this="format_type", expressions=[node.this, exp.Null()])
            return exp.cast(node.this, exp.DataType.build("BIGINT"))
        if target in _TEXT_TYPES:
            return exp.cast(node.this, exp.DataType.build("VARCHAR"))
        return node
    if isinstance(node, exp.Dot) and isinstance(node.this, exp.Identifier):
        if node.this.name.lower() == "pg_catalog" and isinstance(node.expression, exp.Func):
            return node.expression
        return node
    if isinstance(node, exp.CurrentSchemas):  # the shadow's own search path is DuckDB's
        implicit = node.this is not None and node.this.sql().upper() == "TRUE"
        names = ["pg_catalog", "public"] if implicit else ["public"]
        return exp.Array(expressions=[exp.Literal.string(n) for n in names])
    if isinstance(node, exp.Anonymous) and node.name.lower() == "json_build_object":
        return exp.Anonymous(this="json_object", expressions=node.expressions)
    if isinstance(node, exp.Anonymous) and node.name.lower() == "current_setting" and node.expressions:
        name = node.expressions[0]
        name = name.this if isinstance(name, exp.Cast) else name
        if isinstance(name, exp.Literal) and name.name.lower() in _SETTINGS:
            return exp.Literal.string(_SETTINGS[name.name.lower()])
        return node
    if isinstance(node, exp.Table) and not node.catalog and isinstance(node.this, exp.Identifier):
        views = {"information_schema": _PARSED_INFORMATION}.get(node.db.lower(), _PARSED)
        if (node.db.lower() in _CATALOG or views is _PARSED_INFORMATION) and node.name.lower() in views:
            view = views[node.name.lower()].copy()
            return exp.Subquery(this=view, alias=exp.TableAlias(this=exp.to_identifier(node.alias_or_name)))
        return node
    if isinstance(node, exp.Column) and node.args.get("db") is not None and node.db.lower() == "pg_catalog":
        return exp.column(node.name, table=node.table, quoted=node.this.quoted)
    return node


def rewrite_tree(tree: exp.Expr) -> exp.Expr:
    """A PostgreSQL catalog query's tree made DuckDB's, on the shadow's views (in place; returns the
    new root)."""
    for node in reversed(list(tree.walk())):  # children before their parents
        new = _node(node)
        if new is not node:
            if node is tree:
                tree = new
            else:
                node.replace(new)
    return tree
