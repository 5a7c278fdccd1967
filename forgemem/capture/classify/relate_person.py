"""What a person has one of at a time: where they are, the language and the kind of answers they want, the team
they are on, their editor, OS and shell. A statement of theirs that gives another value of one of these replaces the
memory of the user store that holds the old value ("not pacific anymore, i moved to lisbon" where "user in PST
(California)" held; "english answers please" where "antworte auf Deutsch" held; "i'm on zed now" where "editor: VS
Code" held), however little the two share in words: the relation model, which reads shared names and words, misses
them.

Only in the user store, only for a statement in the first person that says the value is theirs now, and never one that
adds a value ("i also use vim for quick edits", "at work i'm on windows").
"""

from __future__ import annotations

import re

from forgemem.capture.classify.scope import _HOW_TO_TALK
from forgemem.names import _families, _names

# ------------------------------------------------------------------------------------------------ where they are

_CITIES = """
amsterdam athens atlanta auckland austin bangalore bengaluru bangkok barcelona beijing belgrade berlin bogota boston
brisbane brussels bucharest budapest buenos aires cairo calgary cape town chennai chicago copenhagen dallas delhi denver
dubai dublin edinburgh frankfurt geneva glasgow gothenburg hamburg helsinki hong kong honolulu houston
hyderabad istanbul jakarta johannesburg karachi kyiv kiev krakow kuala lumpur lagos lima lisbon ljubljana london
los angeles lyon madrid manchester manila melbourne mexico city miami milan minneapolis montreal montréal moscow mumbai
munich münchen nairobi new york nyc osaka oslo ottawa paris perth philadelphia phoenix porto portland prague pune
reykjavik riga rome rotterdam san diego san francisco sf bay area the bay area santiago sao paulo são paulo seattle seoul
shanghai shenzhen singapore sofia stockholm sydney taipei tallinn tel aviv tokyo toronto utrecht valencia vancouver
vienna vilnius warsaw washington wellington wroclaw zagreb zurich zürich cologne köln stuttgart leipzig dresden graz
bilbao seville sevilla malaga málaga marseille toulouse bordeaux lille nantes gdansk poznan brno bratislava tbilisi
yerevan baku almaty tashkent dhaka colombo kathmandu hanoi
"""
_COUNTRIES = """
argentina australia austria belgium brazil brasil bulgaria canada chile china colombia croatia czechia czech republic
denmark egypt estonia finland france germany deutschland greece hungary iceland india indonesia ireland israel italy
japan kenya korea south korea latvia lithuania luxembourg malaysia mexico netherlands the netherlands holland
new zealand nigeria norway pakistan peru philippines poland portugal romania serbia singapore slovakia slovenia
south africa spain españa sweden switzerland taiwan thailand ukraine united kingdom the uk uk united states the us usa
vietnam uruguay ecuador morocco tunisia vietnam scotland wales england california texas oregon washington state
new york state colorado florida massachusetts ontario quebec québec british columbia bavaria bayern catalonia
"""
_ZONES = """
pst pdt pt est edt et cst cdt ct mst mdt mt akst hst cet cest eet eest wet west gmt bst ist jst kst aest aedt awst acst
nzst nzdt sgt hkt brt art utc msk
"""
#: zone words that mean a place only with "time" after them ("pacific time", "eastern time", "central european time")
_ZONE_WORDS = "pacific|eastern|central|mountain|atlantic|central european|eastern european|western european"


def _phrase_list(text: str) -> list[str]:
    """The places of a block, each of one to three words (the blocks list them separated by spaces)."""
    words = text.split()
    out: list[str] = []
    i = 0
    while i < len(words):  # names of several words first: "new york", "cape town", "the netherlands"
        pair = " ".join(words[i:i + 2])
        triple = " ".join(words[i:i + 3])
        if triple in _MULTI:
            out.append(triple)
            i += 3
        elif pair in _MULTI:
            out.append(pair)
            i += 2
        else:
            out.append(words[i])
            i += 1
    return out


_MULTI = {"buenos aires", "cape town", "hong kong", "kuala lumpur", "los angeles", "mexico city",
          "new york", "san diego", "san francisco", "sf bay area", "the bay area", "sao paulo", "são paulo", "tel aviv",
          "czech republic", "south korea", "new zealand", "south africa", "the netherlands", "united kingdom", "the uk",
          "united states", "the us", "washington state", "new york state", "british columbia", "bay area"}
_PLACE_NAMES = sorted({p for block in (_CITIES, _COUNTRIES, _ZONES) for p in _phrase_list(block)}, key=len, reverse=True)
_PLACE = re.compile(r"(?<![\w-])("
                    # a zone by its IANA name or offset: "Europe/Madrid", "America/Mexico_City", "UTC-6", "GMT+1"
                    r"(?:africa|america|asia|atlantic|australia|europe|pacific)/[a-z_]+(?:/[a-z_]+)?|"
                    r"(?:utc|gmt) ?[+−-] ?\d{1,2}(?::?\d\d)?(?!\d)|"
                    + "|".join(re.escape(p) for p in _PLACE_NAMES) + r"|(?:" + _ZONE_WORDS + r") time)(?![\w/-])", re.I)
#: the place named is the one they left or are not in: "moved from berlin", "not pacific anymore"
_NOT_THERE = re.compile(r"(?:\bfrom|\bleft|\bnot(?: in)?|\bno longer(?: in)?|\bout of)\s+(?:the\s+)?$", re.I)
_NOT_THERE_AFTER = re.compile(r"^\W*(?:anymore|any more|no more)\b", re.I)
#: ... said as where the person is: "i moved to", "i'm in", "based in", "on … time now"
_WHERE_I_AM = re.compile(r"\b(?:i(?:'m| am)|im|i live|i'm living|i am living|living|based|located|moved|relocated|"
                         r"moving|relocating|live|timezone|time zone|tz|zona horaria|zeitzone|fuseau horaire|fuso)\b|"
                         r"\btime\b|"
                         # "estoy en", "vivo en", "me mudé a", "ich bin in", "ich wohne in", "je suis à", "j'habite à",
                         # "moro em", "estou em", "sono a", "vivo a", "ik woon in", "mieszkam w"
                         r"\b(?:estoy en|vivo en|me mud[ée] a|ich bin (?:jetzt )?in|ich wohne (?:jetzt )?in|umgezogen|"
                         r"je suis (?:à|a|en)|j'habite|je vis|moro em|estou em|me mudei|sono a|vivo a|mi sono trasferit\w|"
                         r"ik woon|verhuisd|mieszkam|przeprowadzi\w+)\b", re.I)
#: ... and not a trip: "in berlin this week for a conference"
_A_TRIP = re.compile(r"\b(?<!not )(?:travell?ing|on (?:a )?trip|visiting|vacation|holiday|this week|for (?:a|the) "
                     r"(?:conference|week|trip|few days)|until (?:monday|tuesday|wednesday|thursday|friday|next week))\b",
                     re.I)


#: short zone names are places only when written as one ("PST", "CET") or in a sentence about where the person is
_ZONE_ONLY = set(_ZONES.split())
_ZONE_CASE = re.compile(r"^[A-Z]{2,5}$")


def _places(text: str, *, said_as_theirs: bool) -> set[str]:
    """The places a text names as where the person is (lower case); with `said_as_theirs`, only in a sentence that
    says where they are, and not one they left."""
    if said_as_theirs and (not _WHERE_I_AM.search(text) or _A_TRIP.search(text)):
        return set()
    found = set()
    for m in _PLACE.finditer(text):
        place = m.group(1).lower()
        if place in _ZONE_ONLY and not _ZONE_CASE.match(m.group(1)) and not said_as_theirs:
            continue
        if _NOT_THERE.search(text[max(0, m.start() - 20):m.start()]) or _NOT_THERE_AFTER.match(text[m.end():]):
            continue
        found.add(place)
    return found


# ------------------------------------------------------------------------------------------ how they want answers

_LANGUAGES = {
    "english": "english", "englisch": "english", "inglés": "english", "ingles": "english", "anglais": "english",
    "inglese": "english", "engels": "english",
    "german": "german", "deutsch": "german", "alemán": "german", "aleman": "german", "allemand": "german",
    "tedesco": "german", "duits": "german",
    "french": "french", "français": "french", "francais": "french", "französisch": "french", "francés": "french",
    "frances": "french", "francese": "french", "frans": "french",
    "spanish": "spanish", "español": "spanish", "espanol": "spanish", "spanisch": "spanish", "espagnol": "spanish",
    "spagnolo": "spanish", "castellano": "spanish",
    "portuguese": "portuguese", "português": "portuguese", "portugues": "portuguese", "portugiesisch": "portuguese",
    "italian": "italian", "italiano": "italian", "italienisch": "italian", "italien": "italian",
    "dutch": "dutch", "nederlands": "dutch", "niederländisch": "dutch",
    "polish": "polish", "polski": "polish", "po polsku": "polish",
    "japanese": "japanese", "chinese": "chinese", "russian": "russian", "korean": "korean", "swedish": "swedish",
    "svenska": "swedish", "danish": "danish", "norwegian": "norwegian", "finnish": "finnish", "turkish": "turkish",
    "ukrainian": "ukrainian", "czech": "czech", "hindi": "hindi", "arabic": "arabic", "hebrew": "hebrew",
}
_LANGUAGE = "|".join(re.escape(w) for w in sorted(_LANGUAGES, key=len, reverse=True))
#: words of answering, in the languages people write to agents in
_ANSWER = (r"(?:answer\w*|repl(?:y|ies|ying)|resp[oó]n\w+|cont[eé]st\w*|talk(?: to me)?|write (?:to )?me|speak|chat|antwort\w*|"
           r"antworte\w*|répon\w+(?:-moi)?|repon\w+(?:-moi)?|respond\w*|respuestas?|rispond\w*|rispost\w*|antwoord\w*|"
           r"odpowiad\w*|odpowied\w*)")
#: a language said as the one to answer in: "answer in english", "english answers", "antworte auf Deutsch",
#: "réponds-moi en français", "responde en español"
_ANSWER_LANGUAGE = re.compile(rf"\b{_ANSWER}\W+(?:\w+\W+){{0,4}}?(?:in|auf|en|in het|po)\s+({_LANGUAGE})\b|"
                              rf"\b({_LANGUAGE})(?:\s+only)?\s+(?:answers?|replies|responses|please)\b|"
                              rf"\b{_ANSWER}\W+(?:\w+\W+){{0,1}}?({_LANGUAGE})\b", re.I)


def _answer_languages(text: str) -> set[str]:
    return {_LANGUAGES[g.lower()] for m in _ANSWER_LANGUAGE.finditer(text) for g in m.groups() if g}


#: an answer's part turned down: "no explanations", "drop the explanation section", "i dont need the essay anymore"
_NO_MORE_OF = (r"(?:no|without|skip(?:ping)?|drop(?:ping)?|stop (?:with|writing)|(?:don'?t|do not|dont) need) "
               r"(?:the |any |an? |your |all (?:the |those )?)?")


#: what the person wants answers to be, on two scales: how long, and in what form
_STYLES = {
    "length": {
        "short": re.compile(r"\b(?:short|shorter|terse|concise|brief|to the point|one line|one-liners?|tl;?dr|code only|"
                            r"only (?:the )?code|just (?:the )?(?:code|diff|fix|answer|command)|give me the fix|"
                            rf"{_NO_MORE_OF}(?:explanations?|essays?|walls? of text|preambles?|tutorials?|lectures?))\b",
                            re.I),
        "long": re.compile(r"\b(?:detailed|in[- ]depth|thorough|long(?:er)?|verbose|step[- ]by[- ]step|background|"
                           r"walk me through|explain (?:it|everything|why|the why|each|every)|"
                           r"(?<!no )explanations?)\b", re.I),
    },
    "form": {
        "bullets": re.compile(r"\b(?:bullets?|bullet (?:points?|lists?)|bulleted|lists)\b", re.I),
        "prose": re.compile(r"\b(?:paragraphs?|prose|full sentences|flowing text)\b", re.I),
    },
}
#: ... said as how the person wants to be answered: an old memory says what it is about, a new statement may say it
#: in its own way ("give me the fix and one line of why", "i read better that way")
_ABOUT_ANSWERS = re.compile(rf"\b(?:{_ANSWER}|explanations?|explain\w*|write-?ups?|summar\w+|walkthroughs?|essays?|"
                            rf"lectures?|walls? of text|(?:lines?|sentences?) of (?:context|explanation|prose))\b", re.I)
_TO_ME = re.compile(r"\b(?:give me|tell me|show me|send me|i read|i skim|i skip|for me|to me|i (?:just |only )?(?:want|prefer|like))\b",
                    re.I)


#: ... and not only for some of them: "when you do go-specific stuff, explain it" is an exception to "no explanations"
_ONLY_WHEN = re.compile(r"\b(?:when(?:ever)?|if|unless|except) (?:you|it'?s|its|i ask|there'?s|i'?m|we|the)\b", re.I)


def _styles(text: str, *, new: bool) -> dict[str, set[str]]:
    about = _ABOUT_ANSWERS.search(text) or (new and (_TO_ME.search(text) or _HOW_TO_TALK.search(text)))
    if not about or (new and _ONLY_WHEN.search(text)):
        return {}
    return {scale: {value for value, rx in values.items() if rx.search(text)} for scale, values in _STYLES.items()}


# ---------------------------------------------------------------------------------- the tools they work with

_PERSONAL_TOOLS = {"editor", "os", "shell"}
#: a tool of theirs said as the one they are on now: "i'm on zed now", "i use fish these days", "my editor is helix now"
_ON_IT_NOW = re.compile(r"\b(?:now|these days|nowadays|anymore|any more|since|switched|moved|changed|went|gone|"
                        r"got a new|new (?:laptop|machine|mac))\b", re.I)


def _tools(text: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for name in _names(text):
        for family in _families({name}) & _PERSONAL_TOOLS:
            out.setdefault(family, set()).add(name)
    return out


# ------------------------------------------------------------------------------------------------ the team they are on

#: the team named as the one the person is on: "i'm on the ML platform team now", "Data analyst on the growth team",
#: "joined the payments team"; not one they left ("moved over from the growth team")
_ON_TEAM = re.compile(r"\b(?<!from )(?:on|in|joined|joining|moved (?:over )?to|switched to|transferred to) (?:the )?"
                      r"((?:[\w-]+ ){1,3}?)team\b", re.I)


#: ... in the other languages: "ich bin jetzt im Payments-Team", "estoy en el equipo de pagos", "je suis dans
#: l'équipe data"
_ON_TEAM_ELSEWHERE = re.compile(r"\b(?:im|ins) ([\w-]+?)-?team\b|\b(?:en el|al) equipo de ([\w-]+)|"
                                r"\bdans l'équipe (?:de |du )?([\w-]+)", re.I)


def _teams(text: str) -> set[str]:
    found = {m.group(1).strip().lower() for m in _ON_TEAM.finditer(text)}
    found |= {next(g for g in m.groups() if g).lower() for m in _ON_TEAM_ELSEWHERE.finditer(text)}
    return found - {"a", "the", "my", "our", "this", "that", "same", "other"}


#: what the person is at work: "PhD student, climate modelling" held, "i'm now a research software engineer" said
_ROLE_WORDS = (r"(?:student|phd student|phd candidate|postdoc|researcher|scientist|engineer|developer|dev|analyst|"
               r"designer|architect|lead|tech lead|manager|intern|consultant|freelancer|contractor|founder|cto|admin|"
               r"sre|maintainer|professor|teacher|data scientist|product manager|pm)")
_ROLE = re.compile(rf"(?:\b(?:i'?m|i am|im|am|as|now|the user is)\s+(?:now |currently |still )?(?:an? )?|^)"
                   rf"((?:[\w-]+ ){{0,3}}?{_ROLE_WORDS})\b", re.I)


def _roles(text: str, said_as_theirs: bool) -> set[str]:
    """The person's role: in a memory, a role it opens on ("PhD student, climate modelling"); in what the person
    says, one they say they are ("i'm now a research software engineer")."""
    found = set()
    for m in _ROLE.finditer(text):
        role = re.sub(r"^(?:a|an|the)\s+", "", m.group(1).strip().lower())
        if (said_as_theirs and (m.group(0).strip() == m.group(1).strip() or m.group(1).lower().startswith("the "))
                or re.match(r"(?:not|no|never)\b", role)):
            continue  # said, a role must be said to be theirs ("i'm …", "as a …", not "i'm the lead on this one")
        found.add(role)
    return found


# ------------------------------------------------------------------------------------------------ the decision

_FIRST_PERSON = re.compile(r"\b(?:i|i'm|im|i've|my|me|ich|mein|meine|mir|mich|je|j'|moi|mon|ma|yo|me|mi|eu|io|"
                           r"estoy|vivo|estou|moro|sono|ik|mieszkam|the user|the user's)\b", re.I)
#: a second value, not another one: "i also use vim", "at work i'm on windows", "sometimes", "as well"
_ADDS = re.compile(r"\b(?:also(?!,|\s+(?:since|because|as|when|if|btw|fyi))|too|as well|sometimes|occasionally|at work|"
                   r"at home|on my other|second|both|in addition)\b", re.I)
#: what the person does now and then, said beside the value: "(yes french, even if i type english sometimes)"
_EVEN_IF = re.compile(r"\beven (?:if|when|though)\b[^,.;:)(]*", re.I)


def _values(text: str, *, new: bool) -> dict[str, set[str]]:
    """Each slot the text gives a value of: its values."""
    slots: dict[str, set[str]] = {}
    if places := _places(text, said_as_theirs=new):
        slots["location"] = places
    if languages := _answer_languages(text):
        slots["answer-language"] = languages
    for scale, values in _styles(text, new=new).items():
        if values:
            slots[f"answer-{scale}"] = values
    if teams := _teams(text):
        slots["team"] = teams
    if roles := _roles(text, said_as_theirs=new):
        slots["role"] = roles
    tools = _tools(text)
    if new and not (_ON_IT_NOW.search(text) or _FIRST_PERSON.search(text)):
        tools = {}
    slots.update(tools)
    return slots


#: said as how it is from now on
_FROM_NOW = re.compile(r"\b(?:from now on|going forward|always|by default|in general|anymore|any more|from here on|"
                       # the same in the other languages people write to their agent in
                       r"siempre|sempre|toujours|immer|désormais|dorénavant|à partir de maintenant|a partir de ahora|"
                       r"de ahora en adelante|ab jetzt|ab sofort|künftig|d'ora in poi|voortaan|altijd)(?!\w)", re.I)


def _adds(said: str) -> bool:
    """Whether a second value is said ("also" in German is "so": "jetzt im Payments-Team, also eher Stripe-Fragen")."""
    from forgemem.capture.classify.rules.cleanup import _language

    found = {m.group(0).lower() for m in _ADDS.finditer(_EVEN_IF.sub(" ", said))}
    return bool(found) and not (found == {"also"} and _language(said) == "de")


def person_change(said: str, scope: str, candidates: list) -> int | None:
    """The index of the candidate (of the user store) whose value of a slot of the person the statement replaces,
    or None. `said` is the person's own words."""
    if scope != "user" or _adds(said):
        return None
    now = _values(said, new=True)
    if not _FIRST_PERSON.search(said):
        # how answers are to be is said to the agent, often without "i": "from now on: the command, one line of
        # context max"; every other slot is a fact the person says of themselves
        now = {slot: values for slot, values in now.items() if slot.startswith("answer-") and _FROM_NOW.search(said)}
    if not now:
        return None
    hits: list[tuple[float, int]] = []
    for i, candidate in enumerate(candidates):
        if candidate.scope != "user":
            continue
        held = _values(candidate.text, new=False)
        for slot, values in now.items():
            old = held.get(slot)
            if not old or not values - old:
                continue
            if slot in _PERSONAL_TOOLS and not _ON_IT_NOW.search(said) and old & values:
                continue  # "i use vscode and zed": the old one is still theirs
            hits.append((candidate.similarity, i))
            break
    if not hits:
        return None
    return max(hits)[1]
