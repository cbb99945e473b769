"""What a developer asks chat apps (claude.ai, ChatGPT, Gemini), and how they answer."""

from __future__ import annotations

import html

from memory_platform.synthetic.talk import Talk
from memory_platform.synthetic.vocabulary import (
    ACKS,
    CITIES,
    CONCEPTS,
    LIFE,
    MONTHS,
    PEOPLE,
    WEEKDAYS,
)

_HTML_KEYS = ("X", "Y", "reason", "n", "ms", "fix", "lib", "ver")


class ChatTalk(Talk):
    """`Talk` plus chat-app topics (code, concepts, reviews, errors, everyday life), questions
    and answers, and Gemini's prompts and HTML answers."""

    def chat_topic(self) -> str:
        """Pick what a chat-app conversation is about and return its title."""
        rng = self.rng
        self.new_topic()
        t = self.topic
        t["concept"] = rng.choice(CONCEPTS)
        t["city"] = rng.choice(CITIES)
        t["month"] = rng.choice(MONTHS)
        t["person"] = rng.choice(PEOPLE)
        t["day"] = rng.choice(WEEKDAYS)
        t["life"] = self.fill(rng.choice(LIFE))
        kinds = ("compare", "concept", "review", "error", "life")
        t["kind"] = rng.choices(kinds, (3, 3, 2, 3, 2))[0]
        title = {
            "compare": "{X} vs {Y} for {mod}",
            "concept": "{concept} explained",
            "review": "Review of {fn}",
            "error": "Fixing {error_code} in {pkg}",
            "life": rng.choice(
                ("Trip to {city}", "Email to {person}", "Weekly plan", "Quick help")
            ),
        }[t["kind"]]
        return self.fill(title)

    def chat_question(self, first: bool) -> str:
        rng = self.rng
        kind = self.topic["kind"]
        if not first:
            t = self.topic
            t["n"] = rng.randint(2, 64)
            t["m"] = t["n"] + rng.randint(1, 90)
            if t["kind"] == "life":
                pool = (
                    "make it a bit more casual, and mention {day}.",
                    "shorter please, {n} sentences max",
                    "what if it's {n} days instead?",
                    "swap anything with mushrooms, and keep it under {m} minutes",
                    "can you turn that into a checklist for {day}?",
                    "and if {person} can't make it before {n}:00?",
                    "add a rainy-day option for {city}",
                )
            else:
                pool = (
                    "ok, and how would that look with {n} concurrent writers?",
                    "what would you do differently if {mod} had {m} million rows?",
                    "shorten that to something I can paste into the PR for `{fn}`",
                    "that makes sense. what's the catch with {Y} for {mod}?",
                    "how do I test `{fn}` without mocking the database?",
                    "and if I'm on {lib} {ver}, does anything change?",
                    "should `{fn}` be async? it's called {n} times per request",
                    "give me that as a checklist for {mod}",
                    "we measured {ms} ms p95 — is that the {X} overhead you mean?",
                    "would {X} be fine if we only have {n} writers?",
                    "what would the migration from {X} to {Y} look like, step by step?",
                )
            return rng.choice(ACKS) + self.fill(rng.choice(pool))
        template = {
            "compare": "What's the practical difference between {X} and {Y} for {mod} in a "
            "{lang} service? We tried {X} and {reason}.",
            "concept": "Can you explain {concept} with a small {lang} example? I keep "
            "hand-waving it in code reviews.",
            "review": "Review this {lang} function and tell me what you'd change:\n\n"
            "```{fence}\n{code}\n```",
            "error": "I keep getting\n\n```\n{error}\n```\n\nwhen running `{cmd}` in {pkg}. "
            "Any idea?",
            "life": "{life}",
        }[kind]
        self.topic["lang"] = self.lang.name
        self.topic["fence"] = self.lang.fence
        self.topic["code"] = self.code()
        return self.fill(template)

    def chat_answer(self) -> str:
        rng = self.rng
        kind = self.topic["kind"]
        parts: list[str] = []
        if kind == "life":
            parts.append(
                rng.choice(
                    (
                        "Here's a plan that keeps mornings slow and food vegetarian-friendly:",
                        "Sure — here is a draft you can tweak:",
                        "A simple version you can actually stick to:",
                    )
                )
            )
            parts.append(
                self.fill(
                    "1. **Day 1** — settle in, late lunch, walk the old town ({n} min).\n"
                    "2. **Day 2** — museum after 10:00, market for dinner.\n"
                    "3. **Day 3** — day trip; book the {m}:00 train the night before."
                    if "trip" in self.topic["life"].lower() or "packing" in self.topic["life"]
                    else "Hi {person},\n\nwould it be possible to move our 1:1 to {day}? "
                    "Something came up on my side. Any time after 10 works.\n\nThanks!"
                    if "email" in self.topic["life"].lower()
                    else "- Week 1-2: 3 × 30 min easy\n- Week 3-4: add one {n}-minute tempo "
                    "block\n- Week 5+: long run grows by 10% a week"
                )
            )
            return "\n\n".join(parts)
        parts.append(
            self.fill(
                rng.choice(
                    (
                        "Short version: {Y} is the safer default for {mod}; {X} only wins when "
                        "you control every writer.",
                        "The key idea behind {concept} is that ownership and time are explicit, "
                        "so the compiler or the database can check what you meant.",
                        "`{error_code}` almost always means {cause}.",
                        "A few things stand out in `{fn}`:",
                        "Good question. There are three parts to it:",
                    )
                )
            )
        )
        bullets = [
            "**Latency**: in benchmarks like yours {X} sits around {ms} ms p95, {Y} around {n} ms.",
            "**Failure mode**: {reason} is the classic symptom.",
            "**Fix**: {fix}.",
            "**Testing**: run `{test_cmd}` against a real instance on port {port}, not a mock.",
            "**Versioning**: pin {lib} to {ver}; newer releases changed the defaults.",
            "**Naming**: `{fn}` hides that it does I/O; consider `fetch_` or `load_`.",
            "**Concurrency**: with {n} workers you need the lock or a single owner task.",
        ]
        rng.shuffle(bullets)
        parts.append("\n".join("- " + self.fill(b) for b in bullets[: rng.randint(2, 5)]))
        if rng.random() < 0.5:
            parts.append(f"```{self.lang.fence}\n{self.code()}\n```")
        parts.append(
            self.fill(
                rng.choice(
                    (
                        "If you want, I can turn this into a migration plan for {mod}.",
                        "I'd go with {Y} and revisit in a month.",
                        "Happy to look at the actual diff if you paste it.",
                        "Rule of thumb: measure first with {n} rows, then decide.",
                    )
                )
            )
        )
        return "\n\n".join(parts)

    def gemini_prompt(self, new_topic: bool) -> str:
        rng = self.rng
        if new_topic:
            self.chat_topic()
            self.topic["lang"] = self.lang.name
        else:  # same conversation, same subject; fresh numbers so prompts differ
            self.topic["n"] = rng.randint(2, 64)
            self.topic["ms"] = rng.randint(40, 2400)
        s = rng.choice(
            (
                "what does {error_code} mean in {lang} and how do I fix it in {file}",
                "explain {concept} in {n} sentences",
                "how do I add {feature} in {lang} with {lib}",
                "{X} or {Y} for {mod}? we have about {n} writers",
                "convert {n} km to miles and {m} kg to pounds",
                "vegetarian dinner for {n} people with chickpeas, no cilantro, under {m} minutes",
                "is {month} a good time to visit {city}",
                "regex to match semver like {ver} with an optional -rc.{n}",
                "how long does pizza dough need to rest at {n} °C",
                "what port does the {mod} service use by default, and is {port} ok instead",
                "is {ms} ms p95 good for a {mod} endpoint with {n} rps",
                "summarise {concept} as {n} bullet points",
                "gift ideas for {person} under {m} euros",
                "what to pack for {n} days in {city} in {month}",
            )
        )
        return self.fill(s)

    def gemini_html(self) -> str:
        rng = self.rng
        t = {k: html.escape(str(self.topic[k])) for k in _HTML_KEYS}
        parts = [
            "<p>"
            + rng.choice(
                (
                    "Here is a short answer:",
                    "In a nutshell:",
                    "Good question!",
                    "It depends on your setup, but usually:",
                )
            )
            + "</p>"
        ]
        items = [
            "<li><b>{X}</b>: simple to start with, but {reason}.</li>",
            "<li><b>{Y}</b>: a bit more setup, more predictable under load.</li>",
            "<li>Typical numbers: about {n} ms at p50 and {ms} ms at p95.</li>",
            "<li>{fix}</li>",
            "<li>Check the {lib} {ver} changelog first.</li>",
        ]
        rng.shuffle(items)
        chosen = items[: rng.randint(2, 4)]
        parts.append("<ul>" + "".join(i.format_map(t) for i in chosen) + "</ul>")
        if rng.random() < 0.3:
            parts.append("<pre><code>" + html.escape(self.code()) + "</code></pre>")
        parts.append("<p>" + "Want me to go deeper on any of these?" + "</p>")
        return "".join(parts)
