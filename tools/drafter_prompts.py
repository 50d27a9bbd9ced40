"""Templated instruction prompts for the drafters' training data (the earlier recipes; `drafter_data.py`'s
Magpie prompts replaced them for the shipped EAGLE head): questions about CPython stdlib functions and their
docstrings, hand-written general questions, writing prompts on words of the tokenizer's vocabulary, and
arithmetic with fresh numbers. None is an MT-Bench or HumanEval prompt."""

from __future__ import annotations

import ast
import hashlib
import random
import sysconfig
from pathlib import Path

GENERAL_QUESTIONS = [
    "Why is the sky blue?",
    "How do vaccines train the immune system?",
    "What causes the seasons on Earth?",
    "Explain how a bicycle stays upright.",
    "What is the difference between weather and climate?",
    "How does a refrigerator keep food cold?",
    "Why do cats purr?",
    "What is photosynthesis?",
    "Give me three tips for sleeping better.",
    "How can I stay focused while studying at home?",
    "What are the main causes of inflation?",
    "Explain compound interest with an example.",
    "What is the difference between a virus and a bacterium?",
    "How do airplanes generate lift?",
    "Summarize the plot of Romeo and Juliet in a few sentences.",
    "What was the Industrial Revolution?",
    "Why did the Roman Empire fall?",
    "What is the water cycle?",
    "How does the internet work, in simple terms?",
    "What is machine learning?",
    "Explain what a black hole is to a ten-year-old.",
    "How do I make a good cup of coffee?",
    "Suggest a healthy breakfast for a busy morning.",
    "What are some good habits for saving money?",
    "How should I prepare for a job interview?",
    "Write a short thank-you note to a teacher.",
    "Write a haiku about autumn leaves.",
    "Write a short poem about the ocean.",
    "Write a friendly email inviting a colleague to lunch.",
    "Write a short story about a robot who learns to paint.",
    "Describe a sunrise over the mountains.",
    "Give me five ideas for a rainy weekend.",
    "What should I pack for a three-day hiking trip?",
    "How do I politely decline an invitation?",
    "What is the capital of Australia, and why is it not Sydney?",
    "Explain the rules of chess briefly.",
    "What are prime numbers? Give some examples.",
    "If a train travels 60 miles in 1.5 hours, what is its average speed?",
    "Solve for x: 3x + 7 = 22.",
    "What is the Pythagorean theorem?",
    "What is 15% of 240? Show your work.",
    "A shop sells apples at 3 for $2. How much do 12 apples cost?",
    "Explain the difference between mean, median and mode.",
    "What is a derivative in calculus?",
    "How many minutes are there in a week?",
    "Is 91 a prime number? Explain.",
    "What are the benefits of regular exercise?",
    "How does meditation help reduce stress?",
    "What is the difference between a list and a tuple in Python?",
    "What is recursion in programming?",
    "Explain what an API is.",
    "What is the difference between HTTP and HTTPS?",
    "How does a hash table work?",
    "What is Big-O notation?",
    "Explain object-oriented programming.",
    "What is version control and why is it useful?",
    "What does a compiler do?",
    "Pretend you are a tour guide in Paris. Welcome a group of tourists.",
    "Act as a chef and describe your signature dish.",
    "Imagine you are a pirate. Describe your ship.",
    "You are a detective. Describe the scene of a mysterious crime.",
    "Extract the names from this sentence: Alice met Bob and Carol at the station.",
    "List the countries mentioned: We flew from Spain to Japan, then visited Canada.",
    "What is the boiling point of water at sea level in Celsius and Fahrenheit?",
    "Explain how the heart pumps blood.",
    "What is DNA?",
    "What is gravity?",
    "Explain the difference between renewable and non-renewable energy.",
    "Why do leaves change color in the fall?",
    "How do bees make honey?",
    "What is democracy?",
    "Who was Leonardo da Vinci?",
    "What is the theory of evolution?",
    "Give advice to someone learning to play the guitar.",
    "How can I improve my writing skills?",
    "Write a product description for a reusable water bottle.",
    "Write a short speech to congratulate a team on finishing a project.",
    "Compare cats and dogs as pets.",
    "What are the pros and cons of working from home?",
    "Describe your ideal vacation.",
    "How do you make a paper airplane?",
    "Explain supply and demand.",
    "What is the greenhouse effect?",
    "What is an atom made of?",
    "Write a limerick about a cat.",
    "Write a motivational message for someone starting a new job.",
    "What is the difference between a simile and a metaphor?",
    "How do I write a good resume?",
    "Plan a simple three-course dinner menu.",
    "How do tides work?",
    "What are the planets in our solar system?",
    "Explain how a credit card works.",
]
STYLES = [
    "a short poem",
    "a short story",
    "a friendly email",
    "a blog post introduction",
    "a product review",
    "a short speech",
    "a list of tips",
    "a short dialogue between two friends",
]
SUBJECTS = [
    "the first day of school",
    "a lost umbrella",
    "learning to cook",
    "a trip to the beach",
    "a city at night",
    "a new smartphone",
    "morning routines",
    "a rainy afternoon",
    "gardening",
    "moving to a new city",
    "a favorite book",
    "the importance of friendship",
    "winter holidays",
    "a visit to a museum",
    "electric cars",
    "a mountain hike",
]

TOPICS = ["how it works", "when to use it", "a short example", "common pitfalls", "a one-paragraph summary"]


def stdlib_files(held_out: bool) -> list[Path]:
    root = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in root.rglob("*.py") if "test" not in p.parts and "site-packages" not in p.parts)
    pick = [p for p in files if (int(hashlib.md5(p.name.encode()).hexdigest(), 16) % 10 == 0) == held_out]
    return pick


def docstring_prompts(files: list[Path], n: int, rng: random.Random) -> list[str]:
    """Instruction prompts from stdlib docstrings: varied, English, and not the benchmark sets."""
    lines: list[str] = []
    for path in files:
        try:
            tree = ast.parse(path.read_text(encoding="utf-8", errors="ignore"))
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                doc = ast.get_docstring(node)
                if doc and 20 < len(doc.split("\n")[0]) < 160:
                    lines.append((node.name, doc.split("\n")[0]))
    rng.shuffle(lines)
    forms = [
        "Write a Python function `{0}` that does the following: {1}",
        "Explain in simple words: {1}",
        "What does a function called `{0}` probably do? Its documentation says: {1}",
        "Give {2} of the following idea: {1}",
    ]
    return [rng.choice(forms).format(name, doc, rng.choice(TOPICS)) for name, doc in lines[:n]]


def stdlib_api_prompts(files: list[Path], n: int, rng: random.Random) -> list[str]:
    """Questions about stdlib `module.function` names and their docstrings (not benchmark questions)."""
    root = Path(sysconfig.get_paths()["stdlib"])
    apis: list[tuple[str, str]] = []
    for path in files:
        mod = ".".join(path.relative_to(root).with_suffix("").parts).replace(".__init__", "")
        if any(part.startswith("_") for part in mod.split(".")):
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8", errors="ignore"))
        except (SyntaxError, ValueError):
            continue
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
                doc = ast.get_docstring(node)
                if doc and 20 < len(doc.split("\n")[0]) < 160:
                    apis.append((f"{mod}.{node.name}", doc.split("\n")[0].strip()))
    rng.shuffle(apis)
    forms = [
        "Explain what `{0}` does in Python.",
        "Explain what `{0}` does and show a short example of using it.",
        "Write a Python function that does the following: {1}",
        "How would I use `{0}`? Its documentation says: {1}",
        "Write a small Python program that uses `{0}`.",
        "What is `{0}` in the Python standard library, and when should I use it?",
    ]
    return [rng.choice(forms).format(name, doc) for name, doc in apis[:n]]


def chat_prompts(files: list[Path], n: int, rng: random.Random) -> list[str]:
    """~45% stdlib API questions, ~55% hand-written general / writing / math / role-play questions."""
    general = list(GENERAL_QUESTIONS)
    general += [f"Write {s} about {t}." for s in STYLES for t in SUBJECTS]
    rng.shuffle(general)
    n_api = int(n * 0.45)
    out = stdlib_api_prompts(files, n_api, rng) + general[: n - n_api]
    rng.shuffle(out)
    return out


def wide_prompts(files: list[Path], n: int, rng: random.Random, vocab: list[str]) -> list[str]:
    """A wider mix than chat_prompts, for thousands of answers: stdlib API and docstring questions, writing about
    words drawn from the tokenizer's vocabulary, and arithmetic word problems with fresh numbers."""

    def math(r: random.Random) -> str:
        a, b, c = r.randint(2, 99), r.randint(2, 99), r.randint(100, 999)
        return r.choice(
            [
                f"What is {a} times {b}? Show your work.",
                f"Solve for x: {a}x + {b} = {c}.",
                f"A shop sells pens at {a} for ${b}. How much do {c} pens cost?",
                f"Is {c} divisible by {a}? Explain.",
                f"What is {a}% of {c}? Show your work.",
                f"A car drives {c} km in {a % 9 + 1} hours. What is its average speed?",
            ]
        )

    def writing(r: random.Random) -> str:
        word = r.choice(vocab)
        return r.choice(
            [
                f"Write {r.choice(STYLES)} about {word}.",
                f"Explain what '{word}' means.",
                f"Tell me three interesting facts about {word}.",
                f"Describe {word} to a child.",
                f"Pretend you are an expert on {word}. Introduce yourself.",
            ]
        )

    n_api, n_doc, n_write = int(n * 0.35), int(n * 0.25), int(n * 0.25)
    out = stdlib_api_prompts(files, n_api, rng) + docstring_prompts(files, n_doc, rng)
    out += [writing(rng) for _ in range(n_write)] + [math(rng) for _ in range(n - len(out) - n_write)]
    rng.shuffle(out)
    return out


def vocab_words(tokenizer) -> list[str]:
    """Plain lowercase English-looking words of the tokenizer's vocabulary (a space-prefixed token each)."""
    words = (tokenizer.convert_tokens_to_string([t]) for t in tokenizer.get_vocab())
    return sorted(
        {
            w.strip()
            for w in words
            if w.startswith(" ") and w.strip().isalpha() and w.strip().islower() and len(w.strip()) >= 6
        }
    )
