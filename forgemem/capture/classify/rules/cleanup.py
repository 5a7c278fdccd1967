"""Input clean-up before the rewrite: markdown lists and headings to one line, emoji, the language."""

from __future__ import annotations

import re

from forgemem.capture.classify.rules.protect import _protect, _restore

# ------------------------------------------------------------------ input clean-up

_EMOJI = re.compile(
    "[\U0001f000-\U0001faff\U00002600-\U000027bf\U0001f900-\U0001f9ff\u2b00-\u2bff\ufe0f\u200d]"
    r"|(?<!\w)(?::-?[)(DPp/|]|;-?\)|<3|¯\\_\(ツ\)_/¯|\^\^|xD)(?!\w)"
)
_LIST_ITEM = re.compile(r"^\s*(?:[-*+•]|\d{1,2}[.)])\s+")
_HEADING = re.compile(r"^\s*#{1,6}\s+")


_FENCE = re.compile(r"```.*?(?:```|\Z)", re.S)


def _flatten(text: str) -> str:
    """Markdown headings and lists into one line: "Heading: item; item; item".

    A fenced code block next to words is an example, not the rule: it goes (alone, it stays).
    """
    if _FENCE.search(text):
        if not _FENCE.sub("", text).strip():
            return text.strip()
        text = _FENCE.sub("\n", text)
    text, kept = _protect(text)  # a key block or a code span is never split into "lines"
    return _restore(_flatten_held(text), kept)


def _flatten_held(text: str) -> str:
    lines = [line.rstrip() for line in text.replace("\r", "").split("\n")]
    out: list[str] = []
    items: list[str] = []
    for line in lines:
        if not line.strip():
            continue
        if _LIST_ITEM.match(line):
            items.append(_LIST_ITEM.sub("", line).strip().rstrip(".;,"))
            continue
        if items:
            out.append("; ".join(items) + ".")
            items = []
        line = _HEADING.sub("", line).strip()
        line = re.sub(r"\*\*|__", "", line)
        short_title = len(line.split()) <= 6 and not re.search(r"[.!?:;]$", line) and line != lines[-1].strip()
        if _HEADING.match(line) or short_title:
            line += ":"
        out.append(line)
    if items:
        out.append("; ".join(items) + ".")
    joined = ""
    for part in out:
        if not joined:
            joined = part
        elif joined.endswith(":"):
            joined += " " + part
        elif re.search(r"[.!?;]$", joined):
            joined += " " + part
        else:
            joined += ". " + part
    return re.sub(r"\*\*|__", "", joined)


# ------------------------------------------------------------------ language

_EN_WORDS = set(
    "the a an is are to of and in it we i you for with not never always use this that be on don't do "
    "our my should must only no from as when if so but have has".split()
)
_FOREIGN_WORDS = {
    "de": set("ich wir und nicht das die der ist bei uns mit auf für immer nie keine kein bitte wird werden "
              "sind auch nur oder aber den dem ein eine zu sie es mir mich mein unser bin im jetzt übrigens hab habe "
              "noch schon hier gerade dann wenn".split()),
    "es": set("el los las que por para con usamos siempre nunca y una un mi nuestro nuestra yo somos está "
              "están del al lo le se pero también prefiero soy tengo favor me gusta quiero de la en es".split()),
    "pl": set("u nas się nie jest są w z że jak ale tylko zawsze nigdy dziś od dla przez czy mnie mi ja my "
              "wszystkie wszystko proszę już jeszcze też bo tak nikt tego ten ta".split()),
    "fr": set("le les des est et pas pour avec je nous toujours jamais une du au mon notre sont ce cette "
              "qui que il elle on mais aussi suis préfère jamais ne me de la sur dans un faut veux".split()),
}
_FOREIGN_FILLER = re.compile(
    r"^(?:(?:also|ähm|äh|ach ja|ach|und|übrigens|na ja|naja|ok|okay|ja|hey|hi|hallo|kurze info(?: vorab)?|bueno|"
    r"pues|pero|oye|hola|vale|mira|o sea|y|bon|alors|salut|coucou|petite évolution|euh|du coup|en fait|bref|"
    r"ok donc|donc|ciao|olá|oi)\b[\s,:;.!-]*)+"
    r"|[,\s]*\b(?:bitte|danke(?: dir)?|por favor|porfa|gracias|s'il (?:te|vous) pla[iî]t|stp|svp|merci)\b[\s,!.]*",
    re.I,
)


def _language(text: str) -> str:
    words = re.findall(r"[a-zà-ÿß']+", text.lower())
    english = sum(w in _EN_WORDS for w in words)
    best, score = "en", 0
    for lang, vocab in _FOREIGN_WORDS.items():
        s = sum(w in vocab for w in words)
        if s > score:
            best, score = lang, s
    return best if score >= 2 and score > english else "en"
