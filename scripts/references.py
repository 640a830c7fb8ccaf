"""Write what is generated from the code: `.env.example` and the three references of the docs.

- `.env.example` and docs/operate/settings.md, from the sections of `Settings` and each
  field's docstring (app/config/), plus the few variables that are not settings;
- docs/integrate/http-reference.md, from the OpenAPI document of an app built with the
  default settings (what `/openapi.json` serves);
- docs/integrate/event-reference.md, from the event classes of app/core/events.py.

Run it after adding or changing a setting, an endpoint or an event; a unit test
(tests/unit/test_references.py) fails while any of these files is stale:

    .venv/bin/python scripts/references.py           # write them
    .venv/bin/python scripts/references.py --check   # name the stale ones, exit 1
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import re
import sys
import textwrap
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any, Literal, get_args, get_origin

import annotated_types
from pydantic import SecretStr
from pydantic.fields import FieldInfo

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from app.config import ONLY_WHEN_GIVEN, Settings, SettingsSection  # noqa: E402

COMMAND = ".venv/bin/python scripts/references.py"
ENV_EXAMPLE = ".env.example"
SETTINGS_PAGE = "docs/operate/settings.md"
HTTP_PAGE = "docs/integrate/http-reference.md"
EVENTS_PAGE = "docs/integrate/event-reference.md"
WIDTH = 92
"""Longest line of `.env.example`, its comment marks included."""

# --- Settings -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Variable:
    """One line of `.env.example`, and one entry of the settings reference."""

    name: str
    value: str
    """As written in `.env.example`: the default, empty when there is none."""
    description: str
    kind: str
    """What it takes (`integer ≥ 1`, `true or false`), for the reference."""
    shown_default: str
    """The default as the reference shows it."""
    commented: bool = False
    """Shown commented out in `.env.example`: being given at all changes what it does."""


@dataclass(frozen=True)
class Section:
    title: str
    intro: str
    variables: tuple[Variable, ...]


SERVING = Section(
    "Serving",
    "Where `scripts/run` listens: the script reads these from the environment or `.env` and "
    "hands them to uvicorn; the service itself does not read them. docker compose ignores "
    "both: change the host side of `ports:` in docker-compose.yml instead.",
    (
        Variable(
            "HOST",
            "0.0.0.0",
            "The address `scripts/run` listens on. `0.0.0.0`: every interface, so other "
            "machines can reach the service, with no authentication unless sign-in is on. "
            "`127.0.0.1`: this machine only.",
            "address",
            "`0.0.0.0`",
        ),
        Variable(
            "PORT",
            "8888",
            "The port `scripts/run` listens on; pick another when 8888 is taken (uvicorn "
            "stops with `address already in use`).",
            "integer",
            "`8888`",
        ),
    ),
)
"""Read by `scripts/run` (uvicorn's address), not by the service."""

POSTGRES_PASSWORD = Variable(
    "POSTGRES_PASSWORD",
    "",
    "docker compose only: the password of its PostgreSQL (empty: `dodo`). The database is not "
    "published outside compose's network; set this before the first `docker compose up`, "
    "since PostgreSQL keeps the password its volume was created with.",
    "secret text",
    "`dodo`",
)
"""Read by docker-compose.yml, not by the service: listed with the storage settings."""


def settings_sections() -> list[Section]:
    """Serving, then every section of `Settings` in the order it lists them."""
    sections = [SERVING]
    for part in Settings.__mro__:
        if part in (Settings, SettingsSection) or not issubclass(part, SettingsSection):
            continue
        title, _, intro = inspect.cleandoc(part.__doc__ or "").partition("\n")
        variables = [
            _variable(name, Settings.model_fields[name]) for name in inspect.get_annotations(part)
        ]
        if part.__name__ == "StorageSection":
            variables.append(POSTGRES_PASSWORD)
        sections.append(Section(title.strip(), intro.strip(), tuple(variables)))
    return sections


def _variable(name: str, field: FieldInfo) -> Variable:
    if not field.description:
        raise SystemExit(f"Settings.{name} has no docstring: every setting is described there")
    value = _env_value(field.default)
    commented = field.json_schema_extra == ONLY_WHEN_GIVEN
    if commented:
        shown = "unset (see below)"
    elif value == "":
        shown = "empty"
    else:
        shown = f"`{value}`"
        if name.endswith("_bytes") and isinstance(field.default, int):
            shown += _in_units(field.default)
    return Variable(
        name.upper(), value, field.description, _kind(field), shown, commented=commented
    )


def _env_value(default: object) -> str:
    if default is None:
        return ""
    if isinstance(default, bool):
        return "true" if default else "false"
    if isinstance(default, SecretStr):
        return default.get_secret_value()
    if isinstance(default, float) and default.is_integer():
        return str(int(default))
    if isinstance(default, PurePath):
        text = str(default)
        return text if default.is_absolute() or text.startswith(".") else f"./{text}"
    return str(default)


def _in_units(size: int) -> str:
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if size >= scale and size % scale == 0:
            return f" ({size // scale} {unit})"
    return ""


def _kind(field: FieldInfo) -> str:
    annotation: Any = field.annotation
    optional = False
    args = get_args(annotation)
    if type(None) in args:
        optional = True
        annotation = next(a for a in args if a is not type(None))
    if get_origin(annotation) is Literal:
        kind = "one of " + ", ".join(f"`{v}`" for v in get_args(annotation))
    else:
        kinds: dict[Any, str] = {
            bool: "`true` or `false`",
            int: "integer",
            float: "number",
            str: "text",
            SecretStr: "secret text",
            Path: "path",
        }
        kind = kinds.get(annotation, str(annotation))
    bounds = []
    for item in field.metadata:
        if isinstance(item, annotated_types.Ge):
            bounds.append(f"≥ {item.ge}")
        elif isinstance(item, annotated_types.Gt):
            bounds.append(f"> {item.gt}")
        elif isinstance(item, annotated_types.Le):
            bounds.append(f"≤ {item.le}")
    if bounds:
        kind += " " + ", ".join(bounds)
    if optional:
        kind += ", or empty"
    return kind


def _paragraphs(text: str) -> list[str]:
    return [" ".join(p.split()) for p in re.split(r"\n\s*\n", text.strip()) if p.strip()]


def _comment(text: str) -> list[str]:
    lines: list[str] = []
    for number, paragraph in enumerate(_paragraphs(text)):
        if number:
            lines.append("#")
        lines += textwrap.wrap(
            paragraph,
            WIDTH,
            initial_indent="# ",
            subsequent_indent="# ",
            break_on_hyphens=False,
            break_long_words=False,
        )
    return lines


def render_env_example(sections: list[Section]) -> str:
    lines = _comment(
        "Copy to .env and edit. Every setting can also be given as an environment variable; "
        "an empty value counts as unset. Secrets (keys, passwords) belong only here or in the "
        "environment, never in code or logs."
    )
    lines += _comment(
        f"Generated by scripts/references.py from app/config/, where each setting is "
        f"described once (its docstring): edit it there and run `{COMMAND}`. The same text, "
        f"with links: {SETTINGS_PAGE}."
    )
    for section in sections:
        lines += ["", f"# --- {section.title} ".ljust(WIDTH, "-")]
        if section.intro:
            lines += [*_comment(section.intro), "#"]
        for variable in section.variables:
            lines += _comment(variable.description)
            lines.append(f"{'# ' if variable.commented else ''}{variable.name}={variable.value}")
    return "\n".join(lines) + "\n"


def render_settings_page(sections: list[Section]) -> str:
    names = {v.name for s in sections for v in s.variables}

    def linked(text: str, own: str) -> str:
        text = _doc_links(text, SETTINGS_PAGE)
        return re.sub(
            r"`([A-Z][A-Z0-9_]+)`",
            lambda m: f"[`{m[1]}`](#{m[1]})" if m[1] in names and m[1] != own else m[0],
            text,
        )

    out = [
        "# Settings reference",
        "",
        _generated_note("app/config/"),
        "",
        "Every setting is an environment variable, or a line of `.env` in the directory the "
        "service starts in; an empty value counts as unset. `.env.example` lists the same, "
        "with the same words, ready to copy; [Configuration](configuration.md) says how "
        "settings are given and which ones to start with.",
        "",
    ]
    for section in sections:
        out += [f"## {section.title}", ""]
        if section.intro:
            out += [linked(p, "") + "\n" for p in _paragraphs(section.intro)]
        for v in section.variables:
            out += [f"### `{v.name}` {{#{v.name}}}", ""]
            out += [f"**Default** {v.shown_default} · {v.kind}", ""]
            out += [linked(p, v.name) + "\n" for p in _paragraphs(v.description)]
    return "\n".join(out).rstrip("\n") + "\n"


# --- Shared Markdown helpers ------------------------------------------------------------


def _generated_note(source: str) -> str:
    return (
        f"<!-- Generated from {source} by scripts/references.py: do not edit by hand; "
        f"change the code and run `{COMMAND}`. -->"
    )


_DOC_PATH = re.compile(r"docs/((?:use|operate|integrate|develop)/[\w.-]+\.md)(#[\w-]+)?")


def _doc_links(text: str, page: str) -> str:
    """`docs/<part>/<page>.md` mentions become links titled by that page's first heading."""

    def link(match: re.Match[str]) -> str:
        target = ROOT / "docs" / match[1]
        if not target.is_file():
            raise SystemExit(f"{page}: {match[0]} is named but does not exist")
        title = target.read_text().splitlines()[0].removeprefix("# ").strip()
        relative = os.path.relpath(target, (ROOT / page).parent)
        return f"[{title}]({relative}{match[2] or ''})"

    return _DOC_PATH.sub(link, text)


def _cell(text: str) -> str:
    """Text fit for one table cell: one line, pipes escaped outside code (inside a code span
    a table's pipe is text already, and an escape would show)."""
    spans = re.split(r"(`[^`]*`)", " ".join(text.split()))
    return "".join(s if s.startswith("`") else s.replace("|", "\\|") for s in spans)


def _table(head: tuple[str, ...], rows: Iterable[tuple[str, ...]]) -> list[str]:
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return [*lines, ""]


def _anchor(*parts: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", "-".join(parts)).strip("-").lower()


# --- HTTP ---------------------------------------------------------------------------------

METHODS = ("get", "post", "put", "patch", "delete")


def openapi_document() -> dict[str, Any]:
    """What `/openapi.json` serves, from an app built with the default settings (not the
    environment's: the reference is the same on every machine)."""
    from app.factory import create_app

    document: dict[str, Any] = create_app(Settings.model_construct()).openapi()
    return document


def operations(document: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in document["paths"].items():
        for method in METHODS:
            if method in item:
                yield method.upper(), path, item[method]


class _Types:
    """JSON Schema to a short Markdown type, each named schema a link to its entry."""

    def __init__(self, anchor: Callable[[str], str], known: Iterable[str]) -> None:
        self._anchor = anchor
        self._known = set(known)

    def __call__(self, schema: dict[str, Any]) -> str:
        if "$ref" in schema:
            name = schema["$ref"].rsplit("/", 1)[-1]
            # A name the document refers to but does not define (the A2A SDK's) is not linked.
            return f"[{name}](#{self._anchor(name)})" if name in self._known else f"`{name}`"
        for key in ("anyOf", "oneOf"):
            if key in schema:
                return " or ".join(dict.fromkeys(self(s) for s in schema[key]))
        if "allOf" in schema and len(schema["allOf"]) == 1:
            return self(schema["allOf"][0])
        if "const" in schema:
            return f"`{json.dumps(schema['const'])}`"
        if "enum" in schema:
            return " or ".join(f"`{json.dumps(v)}`" for v in schema["enum"])
        kind = schema.get("type", "any")
        if isinstance(kind, list):
            return " or ".join(kind)
        if kind == "array":
            return f"array of {self(schema.get('items', {}))}"
        if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
            return f"object of {self(schema['additionalProperties'])}"
        if kind == "string" and "format" in schema:
            return f"string ({schema['format']})"
        return str(kind)


def render_http_page(document: dict[str, Any]) -> str:
    schemas: dict[str, Any] = document.get("components", {}).get("schemas", {})
    types = _Types(lambda name: _anchor("schema", name), schemas)
    by_tag: dict[str, list[tuple[str, str, dict[str, Any]]]] = {}
    for method, path, op in operations(document):
        by_tag.setdefault((op.get("tags") or ["other"])[0], []).append((method, path, op))
    out = [
        "# HTTP reference",
        "",
        _generated_note("the app's OpenAPI document (`/openapi.json`)"),
        "",
        "Every operation of the service's OpenAPI document, by tag, then the schemas they "
        "name. A running service serves the same document at `/openapi.json` and as a page "
        "at `/docs`; [The HTTP API](http-api.md) tells the same surface as a story. Errors "
        "answer in the `{code, message, data}` envelope; every stream is "
        "`text/event-stream`, one [event](event-reference.md) a frame.",
        "",
    ]
    for tag, ops in by_tag.items():
        out += [f"## {tag[:1].upper() + tag[1:]}", ""]
        for method, path, op in ops:
            out += [f"### `{method} {path}` {{#{_anchor(method, path)}}}", ""]
            if op.get("summary"):
                out += [f"**{op['summary']}**", ""]
            if op.get("description"):
                out += [inspect.cleandoc(op["description"]), ""]
            params = op.get("parameters", [])
            if params:
                out += _table(
                    ("parameter", "in", "type", "required", "meaning"),
                    (
                        (
                            f"`{p['name']}`",
                            p["in"],
                            types(p.get("schema", {})),
                            "yes" if p.get("required") else "no",
                            p.get("description", "") or p.get("schema", {}).get("description", ""),
                        )
                        for p in params
                    ),
                )
            body = op.get("requestBody")
            if body:
                for media, content in body.get("content", {}).items():
                    required = " (required)" if body.get("required") else ""
                    out += [f"Body{required}, `{media}`: {types(content.get('schema', {}))}", ""]
            out += _table(
                ("status", "meaning", "body"),
                (
                    (
                        f"`{status}`",
                        answer.get("description", ""),
                        "; ".join(
                            f"`{media}` {types(c['schema'])}" if c.get("schema") else f"`{media}`"
                            for media, c in answer.get("content", {}).items()
                        ),
                    )
                    for status, answer in op["responses"].items()
                ),
            )
    out += ["## Schemas", ""]
    for name, schema in schemas.items():
        out += _object_entry(f"### `{name}`", _anchor("schema", name), schema, types)
    return "\n".join(out).rstrip("\n") + "\n"


def _object_entry(
    heading: str, anchor: str, schema: dict[str, Any], types: _Types, required: str = "required"
) -> list[str]:
    """A schema's entry: its description, then a table of its fields (or its type)."""
    out = [f"{heading} {{#{anchor}}}", ""]
    if schema.get("description"):
        out += [inspect.cleandoc(schema["description"]), ""]
    properties = schema.get("properties")
    if properties:
        needed = set(schema.get("required", []))
        out += _table(
            ("field", "type", required, "meaning"),
            (
                (
                    f"`{field}`",
                    types(spec),
                    "yes" if field in needed else "no",
                    spec.get("description", ""),
                )
                for field, spec in properties.items()
            ),
        )
    else:
        out += [f"Type: {types({k: v for k, v in schema.items() if k != 'description'})}", ""]
    return out


# --- Events -------------------------------------------------------------------------------


def render_events_page() -> str:
    from app.core.events import Event, event_schema

    schema = event_schema("#/$defs/{model}")
    definitions: dict[str, Any] = schema["$defs"]
    classes = {kind.__name__: kind for kind in Event.__args__}
    types = _Types(lambda name: _event_anchor(name, definitions), definitions)
    out = [
        "# Event reference",
        "",
        _generated_note("app/core/events.py"),
        "",
        "A stream is a series of frames: `id: <event id>`, then `data: <one JSON object>`, "
        "then a blank line; comment frames (`: ping`) keep idle streams alive. Every object "
        "has `type`, which names its kind below; the fields are camelCase. The stream ends "
        "after `complete`. The other wire formats (AG-UI, AI SDK, A2A) translate these same "
        "events: [Streams and events](streams.md) tells how a stream goes.",
        "",
        "An optional field is left out of the frame when it has no value; a client ignores "
        "kinds and fields it does not know.",
        "",
    ]
    wire_types = {name: kind.__dataclass_fields__["type"].default for name, kind in classes.items()}
    out += _table(
        ("type", "what", "class"),
        (
            (
                f"[`{wire_type}`](#{wire_type})",
                _first_sentence(definitions[name].get("description", "")),
                f"`{name}`",
            )
            for name, wire_type in wire_types.items()
        ),
    )
    for name, wire_type in wire_types.items():
        out += _object_entry(
            f"## `{wire_type}`", wire_type, definitions[name], types, "always sent"
        )
        out += [f"Python: `app.core.events.{name}`.", ""]
    out += ["## Records inside events", ""]
    for name, definition in definitions.items():
        if name not in classes:
            anchor = _event_anchor(name, definitions)
            out += _object_entry(f"## `{name}`", anchor, definition, types, "always sent")
    return "\n".join(out).rstrip("\n") + "\n"


def _event_anchor(name: str, definitions: dict[str, Any]) -> str:
    wire_type: str | None = definitions[name]["properties"].get("type", {}).get("const")
    return wire_type or _anchor(name)


def _first_sentence(text: str) -> str:
    return " ".join(text.split()).split(". ")[0].split("; ")[0].rstrip(".")


# --- All of them ------------------------------------------------------------------------


def render_all() -> dict[str, str]:
    """Each generated file (its path from the repository's root) -> its text."""
    sections = settings_sections()
    return {
        ENV_EXAMPLE: render_env_example(sections),
        SETTINGS_PAGE: render_settings_page(sections),
        HTTP_PAGE: render_http_page(openapi_document()),
        EVENTS_PAGE: render_events_page(),
    }


def stale(rendered: dict[str, str]) -> list[str]:
    return [
        path
        for path, text in rendered.items()
        if not (ROOT / path).is_file() or (ROOT / path).read_text() != text
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if stale")
    args = parser.parse_args()
    rendered = render_all()
    outdated = stale(rendered)
    if args.check:
        for path in outdated:
            print(f"{path} is stale: run {COMMAND}", file=sys.stderr)
        return 1 if outdated else 0
    for path in outdated:
        (ROOT / path).write_text(rendered[path])
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
