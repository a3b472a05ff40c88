"""PostgreSQL for tests: a database of the session's own, and schemas of their own in it.

The server (``KC_TEST_POSTGRES_URL``, default the local one) is shared by every test run
on the machine, so nothing here touches what it did not create: the session creates a
database with a random name and drops it at the end, and each test that needs a fresh
dataset gets a schema with a random name in it (``search_path`` in the URL's ``options``).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import quote, urlsplit, urlunsplit

import psycopg
from psycopg import sql

#: the server the tests use (any database on it the test user may connect to)
SERVER_URL = os.environ.get("KC_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")


def reachable(url: str = SERVER_URL) -> str | None:
    """None when the server answers at ``url``, else why not (one line)."""
    try:
        psycopg.connect(url, connect_timeout=3).close()
    except psycopg.Error as exc:
        return " ".join(str(exc).split())
    return None


def with_database(url: str, database: str) -> str:
    """``url`` with another database name."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path="/" + database))


def with_schema(url: str, schema: str) -> str:
    """``url`` whose sessions use ``schema`` (its ``search_path``)."""
    option = quote(f"-csearch_path={schema}", safe="")
    return f"{url}{'&' if '?' in url else '?'}options={option}"


@contextmanager
def session_database(url: str = SERVER_URL) -> Iterator[str]:
    """A database with a random name on the server of ``url``, dropped at the end (the
    server's own database, with schemas of their own, when the user may not create one)."""
    name = f"kc_test_{secrets.token_hex(6)}"
    with psycopg.connect(url, autocommit=True) as admin:
        try:
            admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        except psycopg.errors.InsufficientPrivilege:
            yield url
            return
    try:
        yield with_database(url, name)
    finally:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


def create_schema(database_url: str, prefix: str = "s") -> str:
    """A new, empty schema with a random name in the database; its URL."""
    schema = f"{prefix}_{secrets.token_hex(6)}"
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    return with_schema(database_url, schema)


def drop_schema(schema_url: str) -> None:
    """Drop the schema of a :func:`create_schema` URL, and everything in it."""
    with psycopg.connect(schema_url, autocommit=True) as conn:
        [schema] = conn.execute("SELECT current_schema()").fetchone() or [None]
        if schema and schema != "public":
            conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


def empty_tables(schema_url: str) -> None:
    """Remove every row of the schema's tables (the migrations' record stays), ids from 1."""
    with psycopg.connect(schema_url, autocommit=True) as conn:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() "
                "AND tablename <> 'schema_migrations' ORDER BY tablename"
            )
        ]
        if tables:
            conn.execute(
                sql.SQL("TRUNCATE {} RESTART IDENTITY CASCADE").format(
                    sql.SQL(", ").join(sql.Identifier(t) for t in tables)
                )
            )


def run_sql(url: str, statement: str, *params: object) -> list[tuple[object, ...]]:
    """Run one statement on a connection of its own (autocommit); its rows, if any."""
    with psycopg.connect(url, autocommit=True) as conn:
        cur = conn.execute(statement, params or None)
        return cur.fetchall() if cur.description else []
