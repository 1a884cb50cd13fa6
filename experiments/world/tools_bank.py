"""Tool concepts the generic tool-use examples draw random schemas from.

A concept is one kind of function (weather, unit conversion, ...) with several
names, parameter names and descriptions to choose from, a way to draw the
arguments a user would give, a result the tool returns and a reply that uses
it. String values are never JSON-like ("3", "true"), so the qwen_xml format
writes them raw.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from experiments.world.banks import pick

CITIES = ("Paris", "Tokyo", "Nairobi", "Lima", "Oslo", "Hangzhou", "Cairo", "Denver")
CONDITIONS = ("sunny", "cloudy", "rainy", "windy", "snowy", "foggy")
RATES = {"USD": 1.0, "EUR": 0.92, "CNY": 7.1, "JPY": 150.0, "GBP": 0.79}
UNITS = {("km", "mi"): 0.621, ("kg", "lb"): 2.205, ("m", "ft"): 3.281}
DISHES = ("tomato soup", "fried rice", "pancakes", "lentil curry", "noodle salad")
WORDS = ("serene", "brisk", "candid", "frugal", "vivid", "humble")
MEANINGS = {
    "serene": "calm and peaceful",
    "brisk": "quick and energetic",
    "candid": "honest and direct",
    "frugal": "careful with money",
    "vivid": "bright and clear",
    "humble": "modest about oneself",
}
LANGS = {"French": "Bonjour", "Spanish": "Hola", "German": "Hallo", "Chinese": "你好"}


@dataclasses.dataclass(frozen=True)
class Param:
    names: tuple[str, ...]
    type: str
    description: str
    required: bool = True
    enum: tuple[str, ...] | None = None


@dataclasses.dataclass(frozen=True)
class Concept:
    """One kind of tool; ``draw`` gives the user's values by param index."""

    names: tuple[str, ...]
    descriptions: tuple[str, ...]
    params: tuple[Param, ...]
    draw: Callable[[np.random.Generator], list[Any]]
    asks: tuple[str, ...]  # formatted with v0, v1, ...
    result: Callable[[np.random.Generator, list[Any]], dict[str, Any]]
    reply: str  # formatted with v0, ... and the result's keys


def _weather_result(rng, v):
    return {"temp_c": int(rng.integers(-5, 35)), "condition": pick(rng, CONDITIONS)}


def _fx(rng, v):
    return {"converted": round(v[0] * RATES[v[2]] / RATES[v[1]], 2)}


def _units(rng, v):
    pair = (v[1], v[2])
    factor = UNITS[pair] if pair in UNITS else 1 / UNITS[(v[2], v[1])]
    return {"result": round(v[0] * factor, 2)}


def _unit_pair(rng):
    a, b = pick(rng, tuple(UNITS))
    return (a, b) if rng.integers(2) else (b, a)


CONCEPTS = (
    Concept(
        ("get_weather", "weather_now", "fetch_weather", "lookup_weather"),
        ("Current weather for a city.", "Get today's weather in a place."),
        (Param(("city", "location", "place"), "string", "The city name."),),
        lambda rng: [pick(rng, CITIES)],
        ("What's the weather in {v0} right now?", "Is it cold in {v0} today?"),
        _weather_result,
        "It's {temp_c}°C and {condition} in {v0} right now.",
    ),
    Concept(
        ("convert_currency", "fx_convert", "exchange_money"),
        ("Convert an amount between currencies.", "Currency exchange at today's rate."),
        (
            Param(("amount", "value"), "number", "How much money."),
            Param(("from_currency", "source", "base"), "string", "ISO code, e.g. USD."),
            Param(
                ("to_currency", "target", "quote"), "string", "ISO code to convert to."
            ),
        ),
        lambda rng: [
            int(rng.integers(5, 500)),
            *map(str, rng.choice(list(RATES), 2, replace=False)),
        ],
        ("How much is {v0} {v1} in {v2}?", "Convert {v0} {v1} to {v2}, please."),
        _fx,
        "{v0} {v1} is about {converted} {v2}.",
    ),
    Concept(
        ("convert_units", "unit_converter", "measure_convert"),
        ("Convert a length or weight between units.",),
        (
            Param(("value", "quantity"), "number", "The number to convert."),
            Param(("from_unit", "source_unit"), "string", "Unit of the value."),
            Param(("to_unit", "target_unit"), "string", "Unit wanted."),
        ),
        lambda rng: [int(rng.integers(1, 100)), *_unit_pair(rng)],
        ("How many {v2} is {v0} {v1}?", "Please convert {v0} {v1} into {v2}."),
        _units,
        "{v0} {v1} is {result} {v2}.",
    ),
    Concept(
        ("find_recipe", "search_recipes", "recipe_lookup"),
        ("Find a recipe by dish name.", "Search a recipe database."),
        (
            Param(("dish", "query", "name"), "string", "The dish to cook."),
            Param(
                ("max_minutes", "time_limit"), "integer", "Longest cooking time.", False
            ),
            Param(
                ("vegetarian", "veggie_only"),
                "boolean",
                "Only meat-free recipes.",
                False,
            ),
        ),
        lambda rng: [pick(rng, DISHES), int(rng.integers(2, 7)) * 10, True],
        ("Find me a vegetarian {v0} recipe under {v1} minutes.",),
        lambda rng, v: {"title": f"Easy {v[0]}", "minutes": v[1] - 5, "steps": 4},
        'Try "{title}": {steps} steps and ready in {minutes} minutes.',
    ),
    Concept(
        ("define_word", "dictionary_lookup", "word_meaning"),
        ("Look up the meaning of an English word.",),
        (Param(("word", "term"), "string", "The word to define."),),
        lambda rng: [pick(rng, WORDS)],
        ("What does '{v0}' mean?", "Can you define the word {v0}?"),
        lambda rng, v: {"definition": MEANINGS[v[0]]},
        "'{v0}' means {definition}.",
    ),
    Concept(
        ("set_reminder", "create_reminder", "schedule_note"),
        ("Create a reminder that fires after some minutes.",),
        (
            Param(("text", "message", "note"), "string", "What to remind about."),
            Param(("minutes", "delay_minutes", "in_minutes"), "integer", "Delay."),
        ),
        lambda rng: [
            pick(rng, ("call mom", "water the plants", "stretch")),
            int(rng.integers(5, 90)),
        ],
        (
            "Remind me to {v0} in {v1} minutes.",
            "Set a reminder: {v0}, in {v1} minutes.",
        ),
        lambda rng, v: {
            "reminder_id": int(rng.integers(100, 999)),
            "status": "scheduled",
        },
        "Done! I'll remind you to {v0} in {v1} minutes (reminder {reminder_id}).",
    ),
    Concept(
        ("translate_text", "translate", "language_translate"),
        ("Translate a short greeting into another language.",),
        (
            Param(("text", "source_text"), "string", "Text to translate."),
            Param(
                ("target_language", "language", "to_lang"), "string", "Language wanted."
            ),
        ),
        lambda rng: ["Hello", pick(rng, tuple(LANGS))],
        ("How do you say 'Hello' in {v1}?", "Translate 'Hello' into {v1}."),
        lambda rng, v: {"translation": LANGS[v[1]]},
        "In {v1}, 'Hello' is \"{translation}\".",
    ),
    Concept(
        ("local_time", "get_time", "time_in_city"),
        ("Current local time in a city.",),
        (Param(("city", "location"), "string", "The city name."),),
        lambda rng: [pick(rng, CITIES)],
        ("What time is it in {v0}?", "Tell me the local time in {v0}."),
        lambda rng, v: {
            "time": f"{int(rng.integers(0, 24)):02d}:{int(rng.integers(0, 60)):02d}"
        },
        "It's {time} in {v0} now.",
    ),
)
