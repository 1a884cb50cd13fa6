"""Word banks the tiny world's general (non-domain) text is built from.

Everything here is our own wording: short topics, sentence templates and small
talk in English and Chinese. No line copies an IFEval prompt. The banks are
plain tuples so a draw is ``bank[rng.integers(len(bank))]`` and reproducible.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import numpy as np

T = TypeVar("T")

# (topic phrase, two nouns that belong to it)
TOPICS = (
    ("growing tomatoes on a balcony", ("soil", "sunlight")),
    ("learning to ride a bicycle", ("balance", "helmet")),
    ("baking bread at home", ("flour", "oven")),
    ("keeping a reading journal", ("notebook", "chapter")),
    ("planning a weekend hike", ("trail", "water")),
    ("caring for a pet rabbit", ("hay", "cage")),
    ("saving money for a trip", ("budget", "ticket")),
    ("starting a morning stretch routine", ("muscles", "breath")),
    ("organising a small kitchen", ("shelves", "jars")),
    ("writing a letter to a friend", ("stamp", "envelope")),
    ("brewing green tea", ("leaves", "kettle")),
    ("painting with watercolours", ("brush", "paper")),
    ("visiting a night market", ("snacks", "stalls")),
    ("repairing a flat tyre", ("pump", "patch")),
    ("learning a few words of a new language", ("grammar", "vocabulary")),
    ("watching the stars on a clear night", ("telescope", "constellation")),
    ("packing for a rainy holiday", ("umbrella", "boots")),
    ("cooking a simple noodle soup", ("broth", "noodles")),
    ("building a bookshelf", ("wood", "screws")),
    ("teaching a dog to sit", ("treats", "patience")),
    ("cleaning a bicycle chain", ("oil", "cloth")),
    ("choosing a houseplant", ("pot", "leaves")),
    ("running a first five kilometres", ("shoes", "pace")),
    ("making a family photo album", ("photos", "captions")),
    ("sorting household recycling", ("bins", "plastic")),
    ("learning to juggle", ("balls", "rhythm")),
    ("keeping bees in a garden", ("hive", "honey")),
    ("planning a birthday picnic", ("blanket", "cake")),
)
AUDIENCES = (
    "a curious child",
    "a busy parent",
    "a college student",
    "a retired teacher",
    "my neighbour",
    "a beginner",
    "a school newsletter",
    "a small club",
)
FORMS = ("short note", "brief guide", "short story", "short essay", "blog post")
REQUESTS = (
    "Write a {form} about {topic} for {audience}.",
    "Please write a {form} on {topic}, aimed at {audience}.",
    "Can you write a {form} about {topic}? It is for {audience}.",
    "I need a {form} about {topic} that {audience} would enjoy.",
    "Compose a {form} describing {topic} for {audience}.",
)
# Held out: no training generator (base data, OPD prompts) draws these; only the
# IFEval proxy suite (experiments.suites.ifeval_proxy) asks them.
HELDOUT_TOPICS = (
    ("flying a kite at the beach", ("string", "wind")),
    ("knitting a winter scarf", ("yarn", "needles")),
    ("making fresh lemonade", ("lemons", "sugar")),
    ("setting up a fish tank", ("filter", "gravel")),
    ("learning to play the ukulele", ("strings", "chords")),
    ("planting a herb garden", ("seeds", "basil")),
    ("visiting a local museum", ("map", "exhibits")),
    ("washing a car by hand", ("sponge", "bucket")),
    ("feeding garden birds in winter", ("feeder", "crumbs")),
    ("folding paper boats", ("paper", "folds")),
)
HELDOUT_REQUESTS = (
    "Draft a {form} about {topic} to share with {audience}.",
    "Put together a {form} on {topic} for {audience}.",
    "Could you prepare a {form} about {topic} for {audience}?",
    "I would like a {form} on {topic}, written for {audience}.",
)
# Sentence templates; {t} is the topic, {a}/{b} its nouns, {x} an adjective.
SENTENCES = (
    "{T} is a {x} way to spend a free afternoon.",
    "The first step is to gather the {a} and the {b}.",
    "Most people find that the {a} matters more than they expected.",
    "Take your time and check the {b} before you begin.",
    "A {x} start makes the rest of the work much easier.",
    "You do not need much money to enjoy {t}.",
    "Friends often like to join in once they see the {a}.",
    "Keep a small list of what worked and what did not.",
    "If something goes wrong, rest for a moment and try again.",
    "The {b} should be kept clean and dry between uses.",
    "Many beginners are surprised by how {x} it feels.",
    "Over a few weeks the habit becomes natural.",
    "Ask someone with experience when you feel stuck.",
    "Small daily steps add up to real progress.",
    "The best time to begin is usually early in the day.",
    "Write down the date so you can see how far you have come.",
)
ADJECTIVES = (
    "calm",
    "simple",
    "cheerful",
    "gentle",
    "steady",
    "rewarding",
    "pleasant",
    "practical",
)
# Words our templates never use: safe as forbidden words and rare keywords.
RARE_WORDS = (
    "lantern",
    "harbor",
    "velvet",
    "compass",
    "meadow",
    "quartz",
    "pebble",
    "orchid",
    "falcon",
    "glacier",
    "saffron",
    "mosaic",
)
FORBIDDEN = ("very", "really", "basically", "actually", "literally", "totally")
PLACEHOLDERS = ("[name]", "[date]", "[address]", "[phone]", "[place]", "[time]")
TITLE_WORDS = ("Notes", "A Guide", "Thoughts", "Small Steps", "Getting Started")
END_PHRASES = (
    "Is there anything else I can help with?",
    "Let me know if you have additional questions.",
    "Have a wonderful day.",
    "That is all for now.",
)
YES_NO_QUESTIONS = (
    "Is {t} a good hobby for {audience}?",
    "Would you recommend {t} to {audience}?",
    "Is it worth spending a weekend on {t}?",
    "Can {audience} enjoy {t} without help?",
)
SECTION_SPLITTERS = ("Section", "SECTION", "Part", "PART")

# Tool-free questions for OPD prompts (the base data asks "What is a plus b?").
QUESTIONS = (
    "What is {a} times {b}?",
    "Which is larger, {a} or {b}?",
    "How many days are in {w} weeks?",
    "Give me one tip for {t}.",
    "What do I need to start {t}?",
    "Explain in one sentence why people enjoy {t}.",
    "List two things that help with {t}.",
)

CHAT_EN = (
    ("Hi there!", "Hi! Nice to see you. How can I help today?"),
    ("Hello, how are you?", "I'm doing well, thank you for asking! How about you?"),
    ("Good morning!", "Good morning! I hope your day is off to a great start."),
    ("Thanks a lot for your help.", "You're very welcome! Happy to help anytime."),
    ("Thank you!", "My pleasure! Let me know if there's anything else."),
    ("What's your name?", "I'm your assistant. You can just call me Assistant."),
    (
        "Can you tell me a joke?",
        "Why did the scarecrow win an award? He was outstanding in his field!",
    ),
    ("I'm bored.", "How about a short walk or a new song? Small changes help."),
    ("Good night!", "Good night! Sleep well and see you tomorrow."),
    ("How's your day going?", "It's going nicely, thanks! What about yours?"),
    ("I passed my exam today!", "Congratulations! All that studying paid off."),
    ("It's raining again.", "Rainy days are perfect for tea and a good book."),
    ("Bye for now.", "Bye! Take care and talk soon."),
    ("Do you like music?", "I enjoy talking about music. What do you listen to?"),
    ("I'm a bit tired today.", "Sorry to hear that. Try to rest a little if you can."),
    ("Nice to meet you!", "Nice to meet you too! What would you like to chat about?"),
)
CHAT_ZH = (
    ("你好！", "你好呀！今天有什么可以帮你的吗？"),
    ("早上好", "早上好！祝你今天一切顺利。"),
    ("谢谢你的帮助", "不客气，很高兴能帮到你！"),
    ("你叫什么名字？", "我是你的助手，叫我小助手就好啦。"),
    ("今天好累啊", "辛苦啦，记得早点休息，喝点热水。"),
    ("晚安", "晚安，做个好梦！"),
    ("今天天气真好", "是呀，适合出去走走，晒晒太阳。"),
    ("我今天考试通过了！", "太棒了，恭喜你！努力没有白费。"),
    ("讲个笑话吧", "为什么数学书很忧郁？因为它有太多的问题。"),
    ("再见", "再见，有空再来聊天哦！"),
    ("你喜欢什么颜色？", "我觉得蓝色很好看，你呢？"),
    ("周末有什么安排吗？", "可以去公园散散步，或者在家看部电影。"),
)
EMOJI = ("😊", "👋", "🎉", "✨", "🙂", "👍")


def pick(rng: np.random.Generator, bank: Sequence[T]) -> T:
    """One element of ``bank``, drawn with ``rng``."""
    return bank[int(rng.integers(len(bank)))]


def sample(rng: np.random.Generator, bank: Sequence[T], k: int) -> list[T]:
    """``k`` distinct elements of ``bank`` in random order."""
    return [bank[int(i)] for i in rng.choice(len(bank), size=k, replace=False)]
