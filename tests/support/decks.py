"""Decks as a model would write them for the shipped templates, for the PowerPoint agent's tests."""

from __future__ import annotations

from typing import Any

from app.agents.pptx.templates import PAGE_TYPES, PageType

_FIELDS: dict[PageType, dict[str, Any]] = {
    "cover": {"subtitle": "An introduction for high-school students"},
    "agenda": {"items": ["How it works", "What it costs", "Where it goes next"]},
    "section": {"subtitle": "From sunlight to current"},
    "bullets": {"bullets": ["Silicon cells turn light into current", "Inverters make AC"]},
    "comparison": {
        "left_heading": "Solar",
        "left_points": ["No fuel", "Quiet"],
        "right_heading": "Coal",
        "right_points": ["Smoke", "Fuel to buy"],
    },
    "image_text": {
        "body": "A home system of 15 panels covers most daytime use.",
        "caption": "Roof",
    },
    "table": {
        "table": {"header": ["Year", "Cost per watt"], "rows": [["2010", "$2"], ["2020", "$0.3"]]}
    },
    "closing": {"subtitle": "Questions welcome"},
}


def page_types(count: int) -> list[PageType]:
    """A plausible order of `count` page types: cover first, closing last, every kind used once."""
    middle = [p for p in PAGE_TYPES if p not in ("cover", "closing")]
    body = [middle[i % len(middle)] for i in range(count - 2)]
    return ["cover", *body, "closing"]


def outline(titles: list[str]) -> dict[str, Any]:
    types = page_types(len(titles))
    return {
        "title": titles[0],
        "slides": [
            {"title": t, "pageType": p, "points": [t]} for t, p in zip(titles, types, strict=True)
        ],
    }


def deck(titles: list[str]) -> dict[str, Any]:
    """A deck schema filling every field of the page type each title gets."""
    types = page_types(len(titles))
    return {
        "slides": [
            {"pageType": p, "fields": {"title": t, **_FIELDS[p]}}
            for t, p in zip(titles, types, strict=True)
        ]
    }
