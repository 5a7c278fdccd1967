"""The words of a change of mind: what the person drops, takes back or says is gone.

"scratch GORM", "we moved off wandb", "putting the queue in redis was a mistake", "ignore
what i said about …", "back to make": the offline classifier reads them to decide that a
statement replaces a memory, and which one (`offline.relate_to`), and whether a sentence
says only that an old choice goes (`offline._change_context`).
"""

from __future__ import annotations

import re

from forgemem.capture.classify.relate_language import _CHANGE, _CHANGE_WEAK, CAN_GO, _negated

#: a sentence that says a choice changed ("poetry is out, it's uv now"): one the heads find not durable enough is
#: still a memory when it replaces a rule the store holds (`offline.CHANGE_OF_MIND_FLOOR`)
_CHANGE_WORDS = re.compile(
    r"\b(?:(?<!right )(?<!just )now|instead|no longer|anymore|replac(?:e|ed|es|ing)|switch(?:ed|ing)?(?: \w+){0,3} (?:to|over|back)|"
    r"mov(?:e|ed|ing)(?: \w+){0,3} (?:to|off|over)|scrap|scratch|forget|ditch(?:ed|ing)?|drop(?:ped|ping)?|cancel(?:l?ed|ling)?|(?:soften|relax|loosen)(?:ed|ing)? the|(?:is|are) "
    r"(?:out|gone|off the table|legacy|deprecated|dead|history|obsolete|outdated|retired|archived)|"
    r"(?:go|goes|going|went) (?:down|up) to|(?:going|went|go|we're|were|we are|are|it's|its) back to|overruled|(?:ignore|disregard) what i "
    r"said|(?<!always )(?<!never )migrat(?:e|ed|ing)(?! dev\b| deploy\b| reset\b| status\b)|changed?|from now on|going forward|rip(?:ped|ping)?(?: [\w.+-]+){0,2} out|"
    r"get(?:ting)? rid of|got rid of|no more|stattdessen|nicht mehr|ya no|en (?:vez|lugar) de|au lieu de|bump(?:ed|ing)?(?: [\w.-]+){0,2} to|upgrad(?:e|ed|ing)(?: [\w.-]+){0,2} to)\b",
    re.I)
#: words that take back what was said before, and how close (cosine) the rule taken back must be
_RETRACTS = re.compile(r"^\W*(?:\w+\W+){0,2}?(?:scratch that|(?:forget|ignore|disregard) (?:that|it|what i said|"
                       r"everything i said)|on second thought|(?:i |we )?changed (?:my|our) mind|actually,? no\b|"
                       r"no wait|never ?mind (?:that|what i said)|i take (?:that|it) back)", re.I)
RETRACTED_AT = 0.35


#: the old choice dropped by name: "scratch GORM", "we moved off wandb", "yarn is out", "no fix prefix anymore"
_DROPPED = re.compile(
    r"\b(?:scratch|scrap(?:ped)?|ditch(?:ing)?|drop(?:ped|ping)?|cancel(?:l?ed)?|forget|moved? (?:off|away from)|moving (?:off|away from)|no longer use|"
    r"(?:gone|went|going|gotten|got) off|(?:is|are|we're|we are|were) (?:fully |now |finally )?off|"
    r"got rid of|instead of|replac(?:e|ed|ing)|rip(?:ped)? out|switch(?:ed|ing)? (?:away )?from|migrat(?:e|ed|ing) "
    r"(?:off|away from|from))\s+(?:the |our |using )?`?([\w.+-]{3,})`?"
    r"|`?([\w.+-]{3,})`? (?:is|are) (?:out|gone|dead|deprecated|no longer used|off the table)\b"
    # "papermill can go", "jquery has to go" (not "the tests can go in tests/unit")
    rf"|`?([\w.+-]{{3,}})`? {CAN_GO}"
    # "rip black out of pre-commit"
    r"|\b(?:rip|ripped|ripping|yank|yanked|tear|tore) (?:the |our )?`?([\w.+-]{3,})`? out\b"
    # "no fix/feat prefix anymore"
    r"|\bno `?([\w.+-]{3,})`?(?:/[\w.+-]+)*(?: \w+)?,? anymore\b"
    # "i dont use lazy anymore", "we don't use jest any more"
    r"|\b(?:don'?t|do not|doesn'?t|does not|aren'?t|are not|am not|i'm not|we're not) (?:really )?us(?:e|ing) "
    r"(?:the |our )?`?([\w.+-]{3,})`?(?: \w+)?,? any ?more\b", re.I)
_NOT_NAMES = {"that", "this", "the", "our", "it", "them", "those", "these", "thing", "approach", "idea", "plan"}
#: words before "goes away" / "was a mistake" that are not what goes ("the dataclass stuff goes away")
_NOT_WHAT_GOES = _NOT_NAMES | {"stuff", "code", "setup", "way", "just", "really", "basically", "also", "all", "now",
                               "then", "totally", "tbh", "honestly", "probably", "entirely", "rule", "one", "bit",
                               "part", "thing", "things", "whole", "was", "is", "a", "an", "of", "in", "on", "for"}
#: a sentence that only says an old choice goes ("putting the queue in redis was a mistake", "ignore what i said
#: about only running the tests you touched", "the hand rolled dataclass stuff goes away"): no rule of its own,
#: it tells which memory the rule said next to it replaces
_GOES = re.compile(
    r"\b(?:was|were|has been|turned out to be) (?:a |an )?(?:\w+ )?(?:mistake|error|bad idea|dead end)\b|"
    r"\b(?:goes|go|went|has to go|needs to go) away\b|\b(?:is|are) (?:out|gone|dead|history|over|off the table|"
    r"deleted|removed|outdated|obsolete)\b|\b(?:is|are|we're|we are) (?:fully |now |finally )?off [\w`.-]+|"
    r"\b(?:ignore|disregard|forget|scrap) (?:what|everything|all) (?:i|we) said\b|\bi was wrong about\b|"
    r"\b(?:changed|change|changing) (?:my|our) mind (?:about|on)\b|\b(?:scrap|ditch|drop|forget|kill) (?:the|that|our) [\w`.-]+"
    r"(?: [\w`.-]+){0,2} thing\b|\b(?:we're|we are|i'm|im|i am) (?:dropping|ditching|"
    r"killing|scrapping) (?:the |that |our )?\S+|"
    r"\boverruled (?:me )?on\b|\b(?:got|was|were|has been|have been) (?:ripped out|removed|dropped|killed|"
    r"retired|deprecated)\b|\bdidn't work out\b|\b(?:we'?re|i'?m|i am) done with\b|"
    r"\b(?:rip|ripped|ripping|yank|yanked|tear|tore) (?:[\w.+-]+ ){1,2}out\b|\brip(?:ped|ping)? out\b|"
    r"\b(?:get|getting|got) rid of\b|"
    # a file of the old way, deleted, said alone: "kill scripts/sweep.sh." (then "we're doing sweeps with hydra …")
    r"^\W*(?:\w+\W+){0,2}?(?:kill|delete|remove|retire|rm)\s+(?:the (?:old )?)?(?:`[^`]+`|[\w.-]*/[\w./-]+|"
    r"[\w-]+\.(?:sh|py|js|ts|rb|yml|yaml|json|toml|cfg|ini|mk|bash))\W*$|"
    # "actually no more path versions", "keine Conventional Commits mehr"
    r"^\W*(?:\w+\W+){0,2}?no more [\w`.-]+(?: [\w`.-]+)?\W*$|\bkeine?[nrs]? [^.;]{0,40}\bmehr\W*$|"
    r"\b(?:is|are|was|were) (?:just |really |totally )?(?:unreadable|unusable|a pain|painful|awful|terrible|horrible)\b|"
    # the old choice found wanting: "120 was too wide", "poetry was way too slow"
    r"\b(?:was|were) (?:way |much |a bit |just |also )?too (?:wide|narrow|slow|strict|loose|noisy|long|short|big|"
    r"small|much|heavy|verbose|flaky)\b|"
    # a complaint about the old choice: "biome mangles our .svelte files", "yapf kept fighting the linters"
    r"^\W*(?:\w+\W+){0,3}?(?:mangles|mangled|breaks|broke|chokes on|wrecks|sucks|(?:kept|keeps?) (?:fighting|breaking|failing|"
    r"conflicting|crashing|flipping))\b",
    re.I)
#: ... unless it also says what comes instead
_SAYS_THE_NEW = re.compile(r"\b(?:use|using|instead|switch(?:ed|ing)?(?: [\w-]+){0,2} to|mov(?:ed|ing)(?: [\w-]+){0,2} to|"
                           r"migrat(?:ed|ing)(?: [\w-]+){0,2} to|going with|go with|now|from now on|"
                           r"always|never|prefer|should|must|moves? to|back to|lands? (?:as|in|on)|goes (?:to|in))\b|"
                           # a decision said with its content: "… decided: raw events land as parquet on s3, … and
                           # postgres is out of the raw path"
                           r"\bdecided\s*(?::|\b(?:that|to|on)\b)|"
                           # the new named after what goes: "helm charts are gone, it's kustomize", "… we're on tofu now"
                           r"[,;:—–-]\s*(?:it'?s|its|now it'?s|we'?re on|we are on) [\w./@-]+(?: now)?\W*$|"
                           # the new said after a colon: "changing my mind on the terse thing: when you touch infra …"
                           r"\bmind (?:about|on)\b[^:.;]{0,40}:\s*\S+(?:\s+\S+){3,}", re.I)


def dropped_names(said: str) -> set[str]:
    """Names the user said they dropped: "scratch GORM" -> {"gorm"}, "putting the queue in redis was a
    mistake" -> {"redis"}, "the hand rolled dataclass stuff goes away" -> {"dataclass"}."""
    names = set()
    for match in _DROPPED.finditer(said):
        name = next((g for g in match.groups() if g), "").lower().strip(".")
        if name and name not in _NOT_NAMES:
            names.add(name)
    for match in _GOES.finditer(said):
        words = re.findall(r"[\w.+-]+|[,;:()!?]", said[: match.start()].lower())[-4:]
        while words and words[-1] in _NOT_WHAT_GOES:
            words.pop()
        if words and len(words[-1].strip(".")) >= 3 and re.match(r"\w", words[-1]):
            names.add(words[-1].strip("."))
    return names


def _names_in(text: str, names: set[str]) -> bool:
    """Whether the text names one of `names` (a plural or singular form counts: "dataclasses", "dataclass")."""
    words = {w.strip(".") for w in re.findall(r"[\w.+-]+", text.lower())}  # "… to vitest." names vitest
    words |= {w.split(".")[0] for w in words if "." in w}  # "lazy.nvim" names lazy
    words |= {w[:-1] for w in words if w.endswith("s")} | {w[:-2] for w in words if w.endswith("es")}
    return bool(names & words)


#: a word of change in what was said (the relation model's change wording, weak ones included)
_SAYS_A_CHANGE = re.compile(f"{_CHANGE.pattern}|{_CHANGE_WEAK.pattern}|{_RETRACTS.pattern}|{_CHANGE_WORDS.pattern}",
                            re.I)


#: the person's own question that proposes a change: "can we just use node:test", "should we switch to ruff?"
_ASKS_TO_USE = re.compile(r"^\W*(?:\w+\W+){0,3}?(?:can|could|should|shall) we (?:just |maybe |not |simply )?"
                          r"((?:use|switch to|move to|go with|go back to|try) [^?]{2,80}?)\s*\??$"
                          r"|^\W*(?:\w+\W+){0,2}?why not (?:just )?((?:use|switch to|move to|go with) [^?]{2,80}?)\s*\??$",
                          re.I)


def asked_to_use(sentence: str) -> str:
    """What the person's question proposes, as a statement: "so … can we just use node:test" -> "use node:test";
    "" when it proposes nothing. Said "yes" to after the agent weighed it, it is their change of mind."""
    match = _ASKS_TO_USE.search(sentence.strip())
    return next((g for g in match.groups() if g), "") if match else ""


def asked_in(sentences: list[str]) -> str:
    """The change the person's question among these sentences proposes ("can we just use node:test"), or ""."""
    return next((statement for statement in map(asked_to_use, sentences) if statement), "")


#: a change said as a decision ("we decided in the arch review: config moves to pydantic-settings")
_DECIDED = re.compile(r"\b(?:we (?:decided|chose|settled on|agreed on|went with)|decided (?:in|at|on)|the decision|"
                      r"arch(?:itecture)? review|an adr|made the call|(?:it'?s|its) final|final decision)\b|"
                      # "decision for the project: physics runs in FixedUpdate", "decision: outbox for all events"
                      r"^\W*(?:\w+\W+){0,6}?decision(?: for (?:the|this) \w+)?\s*:", re.I)


#: a rule said as what always held ("pnpm, like always"): close to a memory the store holds, nothing new
_AS_USUAL = re.compile(r"\b(?:like|as) (?:always|usual|before|we always do)\b|\bsame as (?:always|usual|before)\b|"
                       # "no emojis in commits, I've told you this before"
                       r"\b(?:i(?:'ve| have)? told you|i(?:'ve| have)? said) (?:this|that|it) (?:before|already|a \w+ times)\b|"
                       r"\bas i (?:said|told you)\b|"
                       # "reminder: we use pnpm in this repo", "again, use pnpm here, not npm", "like i said, …"
                       r"^\W*(?:(?:just |friendly |quick )?reminder|(?:once )?again|like i said|as a reminder)\b\W", re.I)
#: how close (cosine) the memory such a rule restates must be
RESTATED_AT = 0.35


def says_as_usual(sentence: str) -> bool:
    return bool(_AS_USUAL.search(sentence))


def holds_the_same(memory: str, said: str) -> bool:
    """Whether the memory names every name the person says is to be used ("again, use pnpm here, not npm" where "Use
    pnpm for everything in this repository" held): said again, it is no new version (which would lose the memory's
    own words, its reason or a hand edit)."""
    from forgemem.names import _side

    wanted = {name for name in _side(said).names if not _negated(said, name)}
    return bool(wanted) and wanted <= _side(memory).names
