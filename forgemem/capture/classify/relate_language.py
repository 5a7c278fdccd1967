"""Change-of-mind, refinement and negation wording (English, German, Spanish, French), for the relation decision."""

from __future__ import annotations

import re

from forgemem.capture.classify.lexicon import FROM_NOW_ON
from forgemem.names import _ALIAS, _names, _side, _stem


def _any(*patterns: str) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in patterns), re.I)


#: what follows a name said to go ("papermill can go", "jquery has to go"), not a place for things to go ("the tests can go
#: in tests/unit", "it can go ahead")
CAN_GO = (r"(?:can|has to|needs to|must|should) go\b(?!\s+(?:to|in|into|under|through|on|with|for|first|back|ahead|away|"
          r"live)\b)")

#: a change of mind, in English, German, Spanish and French
_CHANGE = _any(
    r"\bno longer\b", r"\bnot\b[^.;]{0,40}\bany ?more\b", r"\bany ?more\b", r"\binstead\b", r"\brather than\b",
    r"\bswitch(?:es|ed|ing)?\b", r"\bmov(?:e|es|ed|ing)(?: [\w.-]+){0,3}? (?:to|off|from|away|over|up|down)\b", r"\bmoved\b",
    # "default materialization becomes table", "relaxing the any rule a bit", "stop explaining every change"
    r"\bbec(?:ome|omes|ame)\b", r"\b(?:soften|relax|loosen)(?:s|ed|ing)?\b", r"\bstop \w+ing\b",
    # (not the command: "always migrate dev", "prisma migrate deploy")
    r"\b(?<!always )(?<!never )migrat(?:e|ed|ing)\b(?! dev\b| deploy\b| reset\b| status\b)", r"\bport(?:ed|ing)\b", r"\bbump(?:ed|ing)?(?: [\w.-]+){0,2} to\b",
    r"\bupgrad(?:e|ed|ing)(?: [\w.-]+){0,2} to\b",
    # a value moved: "we're raising minSdk to 26", "lowering the timeout to 5s", "settled on 8h"
    r"\b(?:rais(?:e|es|ing)|lower(?:s|ing)|increas(?:e|es|ed|ing)|decreas(?:e|es|ed|ing)|reduc(?:e|es|ed|ing))"
    r"(?: [\w.-]+){0,3} to\b", r"\b(?:go|goes|going|went) (?:down|up) to\b", r"\bsettled on\b", r"\bchanged? (?:my|our|her|his|their) minds?\b", r"\bi (?:know )?(?:i )?said\b[^.;]{0,60}\bbut\b", r"\bchange of plans?\b",
    r"\bscratch (?:that|the)\b", r"\bscrap\b", r"\bforget (?:what|the|about|that|it)\b", r"\bi was wrong\b",
    r"\bwas wrong\b", r"\bwas a mistake\b", r"\bwere a mistake\b", r"\bfrom now on\b", r"\bgoing forward\b",
    r"\bfrom here on\b", r"\bfrom this \w+ on\b", r"\bthese days\b",
    # "from this month the company standardized: all reports use ISO dates"
    r"\b(?:from|starting|as of) (?:this|next) (?:week|month|sprint|quarter|year|release)\b", r"\bstandardi[sz]ed\b", r"\bnew rule\b", r"\bno more\b",
    # where the team is now: "we're iOS 16+ now", "we're on kotlin 2 now"
    r"\b(?:we'?re|we are) (?:on |all on )?[\w.+#-]+\+?(?: [\w.+#-]+)? now\b",
    r"\breplac(?:e|ed|es|ing)\b", r"\bditch(?:ed|ing)?\b", r"\bdropp(?:ed|ing)\b", r"\bdrop\b",
    r"\b(?:is|are|'s|'re) (?:gone|out|dead|history|legacy|deprecated|archived|frozen|over|deleted|removed|stale)\b",
    # "the project is off EMR", "we're off heroku"
    r"\b(?:is|are|'s|'re|we're|were|we are|got) (?:fully |now |finally )?off\b",
    r"\bdeprecated\b", r"\brip(?:ped|ping)? out\b", r"\bgot rid of\b", r"\bstopp?(?:ed)? (?:using|doing|committing)\b",
    r"\bstopped\b", r"\bupgraded\b", r"\bbump(?:ed)?\b", r"\blower(?:ed)?\b", r"\braised\b", r"\bcut (?:it )?down\b",
    r"\bcome around\b", r"\bused to\b", r"\bretired\b", r"\babandon(?:ed)?\b", r"\bshut down\b", r"\bleft\b",
    r"\bdone with\b", r"\bdidn't work out\b", r"\b(?:we're|were|we are|it's|its|are|is|go|going|went) back to\b",
    r"\boverruled\b", r"\brenamed\b", r"\brelocated\b", r"\bunsupported\b", r"\brevert(?:ed|ing)?\b",
    r"\bback on\b", r"\bgave up on\b",
    # the way itself said to have changed: "branch naming changed, it's …", "platform changed the naming rules", "the
    # team voted for Google style"
    r"\b(?:naming|name|format|scheme|convention|rule|layout|structure|process|policy|workflow|style)s? (?:has |have )?"
    r"changed\b", r"\bchanged (?:the|our|its|their) (?:\w+ ){0,2}(?:rules?|naming|scheme|format|conventions?|policy|"
    r"process|layout|style)\b", r"\bvoted (?:for|to)\b",
    r"\bend of life\b", r"\bwe(?:'re| are) (?:now )?on\b", r"\bsince (?:the|last|yesterday|march|january)\b",
    # "from now on" in the other languages
    rf"\b(?:{FROM_NOW_ON})\b",
    # German
    r"\bnicht mehr\b", r"\bkein\w*\b[^.;]{0,40}\bmehr\b", r"\bumgestiegen\b", r"\bgewechselt\b",
    r"\bstattdessen\b", r"\bvergiss\b", r"\bist geschichte\b", r"\babgeschaltet\b",
    r"\bnur noch\b", r"\bumgestellt\b", r"\bersetzt\b",
    # Spanish
    r"\bya no\b", r"\ben (?:vez|lugar) de\b", r"\bdejamos\b", r"\bcambiamos\b", r"\bolvida\b",
    # French
    r"\bne \w+ plus\b", r"\bn'\w+ plus\b",
    r"\bplus de\b", r"\bfinalement\b", r"\bon passe à\b", r"\babandonné\b", r"\bau lieu de\b",
    r"\bc'est fini\b", r"\bj'avais tort\b",
    # "on a revu la règle du deploy freeze : on peut de nouveau déployer le vendredi"
    r"\bon a (?:revu|changé|modifié|assoupli|abandonné)\b", r"\bde nouveau\b",
    # Italian
    r"\babbiamo (?:cambiato|rivisto|deciso|abbandonato)\b", r"\bnon più\b", r"\binvece di\b",
)
_CHANGE_WEAK = _any(r"\bnow\b", r"\bactually\b", r"\bcurrently\b", r"\bjetzt\b", r"\bahora\b", r"\bmaintenant\b", r"\btoday\b")
#: an addition to what holds: "and …", "also …", "except …"
_REFINE = _any(
    # (not "and from now on …": after a task in the same turn, "and" goes on from the task, not from the rule)
    r"^\s*(?:and(?!,? (?:from now on|going forward|from here on)\b(?! also\b))|also|plus|but|except|though|specifically|"
    r"that includes|on top of that|in addition)\b",
    r"\b(?:as well|too)\s*[.!]?\s*$", r"\bon top of\b", r"\bin addition\b", r"\bexcept\b", r"\balso\b",
)
#: before an old name: "not npm", "moved off poetry", "instead of X", "von MySQL auf"
_NEGATED_BEFORE = _any(
    r"\bno longer(?: \w+)?$", r"\bnot(?: \w+)?$", r"\brevert\w*(?: the)?$", r"\bskip(?: the)?$", r"\bgave up on$", r"\b(?:can't|cant|cannot|won't|wont|shouldn't|"
    r"shouldnt|mustn't)(?: \w+)?$", r"\bno$", r"\boff$", r"\bfrom$", r"\binstead of$", r"\bover$",
    r"\brather than$", r"\breplac\w*$", r"\bditch\w*$", r"\bdrop\w*$", r"\bleft$", r"\bleave$", r"\baway from$",
    r"\bout$", r"\bremov\w*$", r"\bkill\w*$", r"\bdelet\w*$", r"\bforget(?: \w+)?$", r"\bscratch(?: the)?$", r"\bscrap(?: the)?$",
    r"\bwrong about$", r"\bi said$", r"\bwrong to \w+$", r"\bdone with$", r"\bstop\w* \w+$", r"\babandon\w*$", r"\bkein\w*(?: \w+)?$",
    r"\bvon$", r"\bya no \w+$", r"\bdejamos$", r"\bsin$", r"\bplus de$", r"\bau lieu de$", r"\bmit$",
    r"\bdas mit$", r"\bvergiss(?: das mit)?$", r"\babandonné$", r"\bfrom \w+$", r"\bunlike$",
    # nobody uses it: "the data team took it over and nobody there writes TS"
    r"\bnobody(?: \w+){0,2}$", r"\bno one(?: \w+){0,2}$",
    # the one a new tool is compared against: "alba … was ~10x faster than jbuilder", "nicer than moment"
    r"\b(?:\w+er|better|worse|more \w+|less \w+) than$",
)
#: after an old name: "poetry is gone", "yarn's out", "alpine is done", "X was a mistake", "X ist Geschichte"
_NEGATED_AFTER = _any(
    r"^(?:(?:thing|stuff|approach|way|one|setup|version|bit)\s+)?(?:'s|is|are|was|were|has been|have been)? ?(?:gone|out|"
    r"dead|history|legacy|deprecated|archived|frozen|outdated|"
    r"unmaintained|unsupported|read-only|removed|deleted|over|too \w+|a mistake|a pain|shut down|replaced|"
    r"(?:now )?empty|unused|obsolete|a leftover|leftover|done|finished|retired|"
    r"being (?:closed|removed)|closed|shut down|decommissioned|expired|used up|end[- ]of[- ]life|eol|in maintenance mode|on (?:its|their|the) way out|sunset(?:ted)?|only for|no longer|not used|didn't work|reverted|ripped out|phased out|"
    # going away: "external-secrets is getting ripped out", "the old runners are being phased out"
    r"(?:getting|being) (?:ripped out|removed|dropped|replaced|retired|killed|phased out|deleted|deprecated))",
    r"^(?:'s|is)? ?(?:no|not) (?:longer|more|used|anymore)", r"^\w* ?(?:anymore|any more)\b",
    r"^(?:ist|wurde|sind) (?:geschichte|abgeschaltet|weg|raus)",
    # goes away, in the other languages: "jest se va", "o karma sai", "jest s'en va", "jest fliegt raus", "jest va via"
    r"^(?:se va|se van|se fue|fuera|sai|saiu|s'en va|dégage|fliegt raus|muss weg|kommt weg|va via|se ne va)\b",
    r"^(?:haben wir|hab ich|habe ich|wurde|ist|sind) (?:\w+ )?(?:gelöscht|entfernt|rausgeworfen|abgeschafft)", r"^(?:c'est fini|est fini)", r"^(?:didn't|did not)",
    r"^(?:got|were|was) (?:cut|dropped|removed)", r"^\w+ (?:got cut|is gone|are gone)",
    # a complaint about it: "yapf kept fighting the linters", "webpack keeps breaking", "jest sucks"
    r"^(?:kept|keeps|kept on|keeps on) (?:fighting|breaking|failing|crashing|conflicting|timing out|getting in)",
    r"^(?:sucks|sucked|is awful|was awful|is terrible|was terrible|is a nightmare|was a nightmare|mangles|mangled|"
    r"breaks|broke|chokes on|choked on|wrecks|wrecked)\b",
)


_NEGATIVE = _any(r"\bno\b", r"\bnot\b", r"\bnever\b", r"\bwithout\b", r"n't\b", r"\bnone\b", r"\bnothing\b",
                 r"\bonly\b", r"\bkein\w*\b", r"\bnicht\b", r"\bnunca\b", r"\bjamais\b", r"\bne\b")


def _negative(text: str) -> bool:
    """Whether a rule is said in the negative ("never …", "no …", "without …", "only …")."""
    return bool(_NEGATIVE.search(text))


def _negated(text: str, name: str) -> bool:
    """Whether `name` (an old memory's name) is turned down in `text`."""
    lower = text.lower()
    variants = [n for n, canonical in _ALIAS.items() if canonical == name] or [name]
    for variant in variants:
        for match in re.finditer(r"(?<![\w.-])" + re.escape(variant) + r"(?![\w-])", lower):
            before = " ".join(re.findall(r"[\w']+", lower[: match.start()])[-3:])
            after = lower[match.end() :].lstrip(" `'\",)")[:40]
            if _NEGATED_BEFORE.search(before) or _NEGATED_AFTER.search(after):
                return True
    return False


#: a thing named as what moves: "config moves to one yaml file per service", "the updater moves onto tokio like the
#: rest of the daemon", "billing migrated off App Service": the one memory of the scope about that thing is replaced
_THING_MOVES = re.compile(r"(?:^|[:;,.]\s*|\b(?:the|our|all|so)\s+)(?P<thing>[a-z][\w-]{2,}) (?:now )?(?:moves|moved|is moving|"
                          r"are moving|migrates|migrated|is migrating|switches|switched|is switching) (?:over |back |fully )?"
                          r"(?:to|onto|into|off)\b", re.I)
#: things that move without a rule changing: the work itself ("the PR moved to review", "the release moved to friday")
_WORK_ITEMS = frozenset("pr prs ticket tickets issue issues meeting task tasks story card release deadline standup demo "
                        "it this that everything everyone nothing".split())


def _moved_thing(said: str, scope: str, candidates: list) -> int | None:
    """The one same-scope candidate holding the word for the thing said to move, if exactly one holds it."""
    for match in _THING_MOVES.finditer(said):
        thing = match.group("thing").lower()
        if thing in _WORK_ITEMS:
            continue
        holders = [i for i, c in enumerate(candidates) if c.scope == scope and _stem(thing) in _side(c.text).content]
        if len(holders) == 1:
            return holders[0]
    return None


#: work moved onto a tool: "migrate LoginForm in apps/web to react-hook-form", "port the cli to click"
_WORK_ONTO = re.compile(r"\b(?:migrate|migrating|move|moving|port|porting|convert|converting|switch|switching|rewrite|"
                        r"rewriting)\b(?: [\w./<>-]+){1,6}? (?:to|onto|into)\s+(?:the |a |an )?([\w.+#-]+(?: [\w.+#-]+)?)",
                        re.I)


def _follows(said: str, old_text: str) -> bool:
    """Whether what was said moves work onto the tools the old memory already holds: that applies the rule (the
    memory "forms: react-hook-form + zod" stays), it does not change it."""
    onto = {name for m in _WORK_ONTO.finditer(said) for name in _names(m.group(1))}
    if not onto:  # the usual case: read nothing of the old memory
        return False
    held = {name for name in _side(old_text).names if not _negated(old_text, name)}  # not "(moved off s3 in sept)"
    return onto <= held and not any(_negated(said, n) for n in held)


_ONLY = re.compile(r"\bonly\b", re.I)
_NOT_ONLY = re.compile(r"\bnot (?:just|only)\b|\b(?:too|as well)\W*$", re.I)


def widens(old: str, said: str) -> bool:
    """Whether the statement lifts the old rule's restriction: "every beta also goes to the external group, not
    just internal" where "Beta builds: TestFlight internal testers only" held, "we're doing native linux builds
    too" where "ship windows only" held: the old "only" no longer holds."""
    return bool(_ONLY.search(old) and _NOT_ONLY.search(said))
