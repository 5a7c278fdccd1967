"""What is never a memory, whatever the heads say: a question, a clarification of the request at hand, a
report that something is broken, a step of the work at hand, hearsay, venting, and an instruction that says when
it ends ("until this is merged", "en este PR"). `learned.decide` puts these over every bar."""

from __future__ import annotations

import re

from forgemem.capture.classify.lexicon import ALWAYS, FROM_NOW_ON, NEVER


def _rx(*patterns: str) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in patterns), re.I)


#: a remark on how things went, nothing to keep: "plan in CI shows no changes on all 4 envs, nice", "last change i
#: promise", "the asking before every git status is getting old"
_REMARK = _rx(r"[,;]\s*(?:nice|cool|great|awesome|sweet|neat|yay|lol|lmao|finally|phew|perfect)\s*[.!]*$",
              r"\b(?:i promise|promise)\W*$", r"\b(?:is|are) getting (?:old|annoying|tiresome|ridiculous)\b",
              # a thing that happened AGAIN, shouted, with no word of what to do: "miras PR has 400 lines of whitespace
              # diff AGAIN" ("you added semicolons AGAIN, we don't use them" says what to do)
              r"^(?!.*\b(?:don'?t|do not|never|always|stop|no more|use|we)\b).*(?-i:\bAGAIN\b)",
              # a greeting with a word of news: "hi, new repo for me."
              r"^(?:hi|hey|hello|morning|good morning|yo)\b[\s,!.]*(?:[\w']+\W*){0,5}$")
#: what was done this time, as usual: "exported from aseprite like always" (the rule, if any, is said as one: "sprites
#: get exported at 1x, always"); a guess at the cause: "its gotta be the filter thing"
_DONE_OR_GUESSED = _rx(r"^\W*(?:\w+\W+){0,2}?(?:i |we )?(?:(?!need\b|speed\b)\w+ed|did|ran|built|made|wrote|put|got|went)\b[^.;!?]*\b(?:like "
                       r"always|as always|as usual|like usual|same as always)\W*$",
                       r"^\W*(?:\w+\W+){0,2}?(?:(?:it|that|this|its|thats)(?:'?s| is)? (?:gotta|got to|has to|must)|gotta|got to)"
                       r" be (?:the|a|an|some|that|this)\b")
#: the system's behaviour, described ("the api always returns 500 on empty body"): a bug to look at, unless the
#: sentence says what to do about it
_DESCRIBES = _rx(r"\b(?:always|never|sometimes|randomly|still) (?:returns|fails|crashes|throws|errors|breaks|hangs|"
                 r"times out|comes back|spits out|hit|hits|fires?|triggers?|loads?|shows? up|gets? called|works?)\b",
                 # praise of the last answer, said alone: "that explanation was exactly the level i need" (said
                 # with what to keep doing, "… keep doing that for …", it is that rule's context)
                 r"^\W*(?:\w+\W+){0,2}?(?:that|this|the last) (?:explanation|answer|reply|summary|one|walkthrough) "
                 r"(?:was|is) (?:exactly|perfect|great|good|spot on|just right|really good|helpful)\b[^.;!?]*[.!]?\s*$")
_SAYS_TO_DO = _rx(r"\b(?:use|prefer|from now on|going forward|instead|should|must|make sure|don'?t|do not)\b")
#: someone else's opinion, reported: "my lead says we should never use ORMs for reporting" — not adopted ...
_HEARSAY = _rx(r"^(?:\W*\w+\W+){0,3}?(?:my|our|the) (?:lead|boss|manager|cto|ceo|colleague|coworker|co-worker|teammate|"
               r"tech lead|senior|architect|friend|pm|product manager|reviewer)\s+(?:says|said|thinks|thought|reckons|"
               r"claims|keeps saying|insists|wants)\b",
               # ... or by name: "lena said in standup we should ban default exports", "marco keeps saying we should"
               r"^(?:\W*\w+\W+){0,2}?(?!i\b|we\b|you\b|they\b|it\b)[a-z][a-z'-]+ (?:said|says|keeps saying|kept "
               r"saying|thinks|thought|suggested|suggests|mentioned|reckons|claims|proposed)(?: (?:in|at|on) (?:the )?"
               r"(?:standup|meeting|retro|review|slack|call|chat))? (?:that )?(?:we|you|everyone|the team)\b")
#: ... and someone's complaint: "the mobile team complains they can't parse our errors" (the reason for a change, not
#: the change)
_COMPLAINT = _rx(r"\b(?:complain(?:s|ed|ing)?|grumbl\w+|moan(?:s|ed|ing)?|whin(?:es|ed|ing)) (?:about|that|they|because)\b",
                 r"\b(?:keeps?|kept) complaining\b")
#: ... unless the person takes it on
_ADOPTED = _rx(r"\b(?:i agree|agreed|(?:he|she|they)(?:'s|'re| is| are) right|so (?:we|let's|from now on|going "
               r"forward)|we(?:'re| are) doing (?:that|it)|(?:team|we) decided|it's the rule now)\b")
_CLARIFYING = _rx(r"^(?:no,?\s+)?i (?:mean|meant)\b", r"^(?:what )?i mean(?:t)? (?:is|was)\b",
                  # it says it does not hold in general: "not in general tho, they catch real stuff"
                  r"^\W*(?:but )?not (?:in general|as a rule|always|usually)\b",
                  # a thing shown, described: "this is the val mask overlay, the boundaries are off by a few pixels"
                  r"^\W*(?:this|here) is (?:the|a|an|my) (?:[\w-]+ ){0,3}?(?:overlay|screenshot|output|log|logs|diff|trace|"
                  r"stack ?trace|error|result|results|plot|graph|chart|image|picture|dump|profile|flame ?graph)\b",
                  # a guess at what the agent did: "you must have used --no-verify or something"
                  r"^\W*(?:\w+\W+){0,2}?you (?:must|might|may) have\b")
_STANDING = _rx(r"\bfrom now on\b", r"\bgoing forward\b", r"\bin this (?:repo|repository|project|codebase)\b",
                # the same in the other languages people write in: "ich will überall f-strings, das ist bei mir
                # grundsätzlich so"
                rf"\b(?:{FROM_NOW_ON}|grundsätzlich|zawsze)\b",
                # "ok it's fine this time, but next time: … ask me first"
                r"\b(?:but|and) (?:next time|in (?:the )?future)\b",
                # what the team does not do, said in reproach: "why do you keep adding semicolons, we don't use them"
                r"\bwe (?:don'?t|do not|dont) (?:use|do|write|want|put|add)\b",
                # "we always …", but not asked: "do we always need a changeset entry …?"
                r"(?<!\bdo )(?<!\bdoes )(?<!\bshould )(?<!\bmust )(?<!\bcan )(?<!\bwill )\bwe (?:always|never)\b")


#: a question: it ends with "?", or opens with a word that asks ("when …" opens a rule as often: "when you
#: explain changes, give me the reasoning")
_ASKS = _rx(r"\?\s*$", r"^(?:can|could|would|will|should|is|are|does|do|did|what|why|how|where|which|who|any idea|"
            r"do you know)\b",
            # asked without a "?": "which would you pick here", "thoughts"
            r"\bwhich (?:one )?(?:would|should|do) (?:you|we|i)\b", r"\bwhat do you think\b", r"\bthoughts\W*$",
            r"\bjust (?:asking|curious|wondering)\b",
            # asked without a "?", after a few words: "before you write anything how do we handle power management"
            r"^(?:\W*\w+\W+){1,5}?how do (?:we|you|i|they) (?:handle|do|deal with|manage|usually|normally|set up)\b",
            # a request to look into something, anywhere in the sentence: "…, can u check pyproject"
            r"\b(?:can|could) (?:you|u) (?:pls |please )?(?:check|look|see|take a look|verify|investigate|debug|"
            r"figure out|find out|dig)\b",
            # venting, with nothing in particular to keep: "i hate everything", "i swear this codebase"
            r"^(?:\W*\w+\W+){0,2}?(?:i|we) (?:hate|love|dislike|despise|can't stand) (?:everything|this|that|it|"
            r"all of (?:this|it|them)|this (?:codebase|code|repo|project|file|thing|mess))\W*$")
#: an instruction bounded in time ("from now on until this is merged …"): its words say when it ends
_BOUNDED = _rx(r"\buntil (?:this|it|that|the pr|the refactor|the rename|the migration|the release)(?:'s| is)? "
               r"(?:merged|done|lands|ships|in|finished|over|out)\b",
               # "the user + flags slices still use it until next sprint", "it goes once everything's migrated"
               r"\buntil (?:next|the end of (?:the|this)) (?:sprint|week|month|quarter|release)\b",
               r"\b(?:until|once) everything(?:'s| is)? (?:migrated|moved|ported|switched|done)\b")
#: a report that something is broken ("scripts/bootstrap.sh doesnt work for me", "getting this in prod logs"):
#: a task to look into, unless the sentence also says what to do from now on
_MALFUNCTION = _rx(r"\b(?:doesn'?t|does not|didn'?t|won'?t|isn'?t|is not|aren'?t|stopped) work(?:ing)?\b",
                   r"\b(?:is|are) (?:garbage|trash|a joke|the worst)\b",
                   # how things went on the person's machine: "those pass for me locally"
                   r"^(?:\W*\w+\W+){0,2}?(?:those|these|they|it|that|this|tests?) (?:all )?(?:pass(?:es)?|fail(?:s)?|"
                   r"work(?:s)?) (?:fine )?(?:for me|on my (?:machine|laptop|side)|locally)\b",
                   r"\b(?:is|are) (?:broken|failing|crashing|flaky|hanging|dying|down|stuck(?! (?:on|with|at) )|erroring|timing out|"
                   r"choking|blowing up|exploding)\b",
                   # a tool at it right now: "pre-commit is rejecting my commit", "guard is not picking up file changes",
                   # "every TileMap node now screams deprecation warnings at me"
                   r"\b(?:is|are|keeps?) (?:now )?(?:rejecting|refusing|ignoring|not picking up|not seeing|not detecting|"
                   r"spamming|flooding|screaming|yelling)\b",
                   r"\b(?:screams?|spams?|floods?|yells?) (?:\w+ ){0,2}?(?:warnings?|errors?|deprecations?)\b",
                   r"\b(?:blows?|blew|blowing) up\b",
                   # ... in the other languages: "im kanzlei-portal schlägt `migrate` fehl", "el build falla en CI"
                   r"\bschl(?:ägt|agen|ug) (?:\S+ ){0,6}?fehl\b", r"\b(?:funktioniert|geht|klappt|läuft) (?:\S+ )?nicht\b",
                   r"\b(?:no funciona|falla|fallan|ne (?:marche|fonctionne) (?:pas|plus)|plante|não funciona|falha|"
                   r"non funziona|werkt niet)\b",
                   # how it failed, said with where or how: "`just bench` fails for me with \"fish: …\""
                   r"\b(?:fails?|failed|crash(?:es|ed)?|errors? out|errored|breaks|broke) (?:for me|on my (?:machine|"
                   r"laptop|side)|locally|with (?:this|an?|the)?\s*[\"'`:(]|when i\b)",
                   # a line of pasted tool output: "ERR_PNPM_OUTDATED_LOCKFILE Cannot install …", "error[E0308]: …"
                   r"^(?-i:[A-Z][A-Z0-9]*_[A-Z0-9_]{3,})\b", r"^(?:error|fatal|panic|traceback|exception|warning)\b\s*[:\[(]",
                   r"\b(?:keeps?|started|starts) (?:failing|crashing|timing out|throwing|erroring|fighting|flipping|"
                   r"conflicting|breaking|overwriting|reverting)\b",
                   r"\b(?:isn'?t|is not|aren'?t|are not|not being|never gets?) (?:picked up|applied|loaded|respected|"
                   r"read|found|recogni[sz]ed|triggered|called)\b",
                   r"^(?:\W*\w+\W+){0,2}?getting (?:this|these|that|an? \w+ error)\b",
                   # what introduces pasted output: "running the tests on my side gives me this:"
                   r"\b(?:gives?|gave|getting|got|throws?|threw|returns?|prints?|shows?|spits? out) (?:me |us )?"
                   r"(?:this|these|the following)\s*:?\s*$")
_QUOTED = re.compile(r'"[^"]*(?:"|$)|“[^”]*(?:”|$)')
#: what something costs or how it behaves, said short and alone: "pre-commit takes like 40s on every commit now, its
#: driving me nuts", "cloned the repo and ./scripts/build.sh obviously does nothing", "disk on ch-2 is at 87%" (in a
#: longer sentence the same words are the reason of a rule: "… takes 9 seconds in prod. … we're going cursor based")
_OBSERVED = _rx(r"\btakes? (?:like |about |around |over )?\d+\s*(?:s|sec|secs|seconds|min|mins|minutes)\b",
                r"\bat \d+ ?%", r"\bdoes nothing\b", r"\bdoesn'?t (?:compile|build|start|load|boot)\b",
                r"\bdriving me (?:nuts|crazy)\b", r"\b(?:is|are) bloating\b")
OBSERVED_WORDS = 16

_SAYS_WHAT_TO_DO = _rx(r"\b(?:always|never|use|prefer|from now on|going forward|instead|should|must|switch\w*|"
                       rf"{FROM_NOW_ON}|{ALWAYS}|{NEVER}|standardi[sz]\w*|"
                       r"(?:going|go|stick|sticking) with|"
                       r"mov(?:e|ed|ing)|replac\w+|migrat\w+ (?:to|from|off|away))\b")


#: words that tie an instruction to the work at hand: it ends with it ("until this is merged, don't touch
#: tests/", "never use --no-verify for this one", "for this fix also log the sku")
_ONE_OFF = _rx(r"^\W*(?:next|then|first|after that|todo|step \d+)\s*[:,-]\s*(?:\w+\s+){0,2}?(?:add|fix|make|write|"
               r"create|update|remove|rename|move|refactor|implement|build|run|wire|hook up|change|clean)\b",
               r"\bfor (?:this|that|the) (?:one|fix|pr|pull request|change|commit|branch|ticket|task|bug|release|"
               r"demo|spike|migration|run|refactor|rename)\b",
               r"\buntil (?:this|it|that|the pr|the refactor|the rename)(?:'s| is)? (?:merged|done|lands|ships|in)\b",
               r"\b(?:this time|just this once|for today|for the demo|in this (?:pr|pull request|commit)|just now)\b",
               # a go-ahead for the work proposed: "yep. go ahead with orders, the rest i'll do in follow-ups"
               r"^\W*(?:\w+\W+){0,2}?(?:go ahead|go for it)\b(?! and (?:always|never))",
               # ... in the other languages: "no toques es.json en este PR"
               r"\b(?:en este pr|en esta rama|in diesem (?:pr|branch)|dans (?:cette|ce) (?:pr|branche)|neste pr|"
               r"in questo pr|para este pr)\b",
               # away for a while: "je suis en congé toute la semaine prochaine", "i'm out next week"
               r"\b(?:i'm|im|i am|je suis|ich bin|estoy|sono) (?:en congé|on (?:vacation|leave|holiday|pto)|out|off|"
               r"im urlaub|de vacaciones|in ferie)\b(?=.*\b(?:next|this|tomorrow|prochaine|nächste|próxima|semaine|"
               r"woche|semana|settimana|week|friday|monday|vendredi|lundi)\b)",
               # "don't push yet": held back for now, in any language
               r"\b(?:don'?t|do not)\s+(?!have\b|know\b|understand\b|get\b)(?:\S+\s+){0,6}yet\b", r"\b(?:todavía|noch nicht|pas encore|ainda não|"
               r"non ancora|nog niet)\b",
               # today only, in any language ("no corras el pipeline entero hoy"), but not "as of today"
               r"(?<!as of )(?<!from )(?<!starting )(?<!since )(?<!a partir de )(?<!desde )(?<!à partir d')(?<!ab )"
               r"(?<!od )(?<!vanaf )(?<!da )\b(?:today|tonight|hoy|heute|aujourd'hui|oggi|hoje|vandaag|dziś|dzisiaj)\b"
               r"(?! on\b| onwards?\b)",
               # a spec of the thing to build: "new screen NotificationSettings: toggles for …", "New model + migration
               # for webhook_deliveries: id, endpoint_id, …"
               r"^\W*new (?:screen|page|endpoint|route|component|service|table|column|field|job|feature|module|command|"
               r"view|form|dialog|modal|migration|script) [\w`./-]+\s*:", r"^\W*new\b[^.:]{0,60}:\s*[^,]+(?:,[^,]+){2,}",
               # a job to do, said without its subject: "need to bump the gke node pool in envs/prod …", "need a
               # migration adding `refund_reason` to events.payments"
               r"^\W*need (?:to (?!always\b|never\b)\w+|an?\b)")
#: how to do the work, left to the agent: "…, whichever is cleaner" (`_AT_HAND`; `fragments` keeps such a sentence apart
#: from the rule before it)
LEFT_TO_THE_AGENT = r"(?:whichever|whatever) (?:is|you think is|seems|looks) (?:cleaner|easier|simpler|better|best|nicer|faster)"
#: a piece of the work at hand named as such: "keep this hotfix php 7.4-safe", "pin corepack to 0.29 in that job
#: instead", "no new deps in this PR" (44 of 45 labelled sentences with one and no word of when it recurs hold no rule)
_THIS_WORK = _rx(r"\b(?:this|that) (?:hotfix|pr|pull request|branch|ticket|job|task|spike|patch)\b",
                 # "the vendor code uses 2-space indents, match that in this file"
                 # (but "in general, not just in this file")
                 r"(?<!not just )(?<!not only )(?<!\bnot )\b(?:in|for) (?:this|that) (?:file|function|method|class|test|"
                 r"component)\b(?!.*\bin general\b)")
#: asking for a thing to be made ("I want a cli command that …", "can you add a …"): a task
_REQUEST = _rx(r"^(?:\W*\w+\W+){0,5}?i need (?!you\b|to (?:always|never)\b|(?:all|every|each|any|no)\b)[\w`./-]+"
               r"(?: [\w`./-]+)? (?:via|with|for|in|on|that|which|so)\b",
               r"^(?:\W*\w+\W+){0,2}?(?:i (?:want|need|'d like|would like)|we need|can you|could you|please)\s+"
               r"(?:a|an|to (?:quickly |just )?(?:add|build|create|make|write|fix|implement|have|get|see|try|run|test|"
               r"check|debug)|(?:add|make|create|write|"
               r"build|fix|implement) (?:a|an|the))\b",
               # ... in the other languages people write to their agent
               r"^(?:\W*\w+\W+){0,2}?(?:il me faut|j'ai besoin d|je veux|je voudrais|peux-tu|tu peux|ich brauche?|"
               r"ich möchte|ich will|kannst du|könntest du|necesito|quiero|puedes|podrías|preciso|quero|você pode|"
               r"mi serve|voglio|puoi|ik wil|kun je|kan je|ich muss|wir müssen|je dois|tengo que|devo)\b")


#: a piece of work that ends: "just for this analysis keep it pandas", "for the board deck: theme_minimal", "it's a
#: throwaway" (even beside "i know we're polars in this repo"), unless said of every time ("for the weekly report always
#: use the finance calendar")
_FOR_A_PIECE_OF_WORK = _rx(r"\b(?:just |only )?for (?:this|that|the) (?:\w+ )?(?:analysis|report|deck|slides?|presentation|"
                           r"meeting|notebook|experiment|prototype|poc|workshop|talk|investigation|batch|run|release|sprint|ticket|"
                           r"incident|migration|demo)\b",
                           r"\b(?:it'?s|its|this is|that'?s) (?:a |just a )?(?:throwaway|one-off|one off)\b")


#: a request for something to be shown now ("give me the commands to set the env vars"), not said of every time
_ASKS_FOR_OUTPUT = _rx(r"^(?:\W*(?!always\b|never\b|when\b|whenever\b)\w+\W+){0,2}?(?:give|show|send|tell|get|find) me "
                       r"(?:the|a|an|all|some|that|those|these)\b")
#: the work at hand in other shapes, said without a rule: work someone asked of the person, one thing of it ("so this one is
#: fulfilment-stock-adjustment-events"), what the person is doing now ("setting the project up on my new laptop"), a
#: request at the end ("… fails maybe 1 in 5 runs, can you look"), a question put as an order ("explain why
#: //services/… rebuilds every time"), a decision not made ("not sure, let me ask Pia first"), and the spec of a
#: thing to make ("migration to add IsArchived (bit, default 0) to dbo.Project")
_AT_HAND = _rx(r"^\W*(?:(?:so|ok|okay|and|oh|ah|right)\W+){0,2}(?:this|that) one (?:is|was|should be|needs|gets|has)\b",
               r"^\W*(?:(?:i'?m|im|i am|we'?re|we are|currently|still|just)\s+)?(?:setting (?:\w+ ){0,3}up|trying (?:out|to)|"
               r"working on|looking (?:at|into)|debugging|investigating|poking at|playing with)\b",
               r"\b(?:can|could|would) you (?:please |pls )?(?:take a |have a )?(?:look|check|investigate|dig in|"
               r"take a look|have a look|look into it|fix (?:it|that|this))\W*$",
               r"^\W*(?:(?:pls|please|can you|could you)\s+)?explain (?:why|how|what)\b",
               # ... after a word that moves on: "anyway can you explain why //services/… rebuilds every time"
               r"^\W*(?:(?:anyway|also|and|so|btw|oh|ok|okay|then)\W+)+(?:(?:pls|please|can you|could you)\s+)?"
               r"explain why\b",
               r"^\W*(?:(?:hm+|hmm+|uh+|well)\W+)?(?:i'?m |im )?not sure\b",
               # a decision put off: "hmm let me ask the team first", "let me think about it"
               r"^\W*(?:(?:hm+|hmm+|uh+|well|ok|okay|ah|oh)\W+)*let me (?:ask|check with|run (?:it|this|that) by|talk to|"
               r"think|sleep on|discuss)\b[^,;.!?]*[.!]?\s*$",
               # how to do the work, left to the agent: "gate it on a cargo feature or cfg(…), whichever is cleaner"
               rf"\b{LEFT_TO_THE_AGENT}\W*$", r"\b(?:up to you|your call)\W*$",
               # said to be undecided: "… sven keeps saying we should drop storybook for ladle. nothing decided, just
               # so you know the vibe"
               r"^\W*(?:\w+\W+){0,2}?(?:nothing|not|none of (?:it|that|this)) (?:is |has been |was )?(?:decided|final|"
               r"settled)(?: yet)?\b",
               # an idea for the thing being made, put forward: "idea: you have only one bullet and …"
               r"^\W*(?:(?:new|random|quick|crazy|game|design) )?idea\s*:",
               # work someone else asked of the person: "Maria … sent me her notebook and wants me to extend it"
               r"\b(?:wants|asked|needs|wanted) me to (?!always\b|never\b)\w+",
               r"^\W*(?:a |an |the |new )?(?:migration|script|test|endpoint|function|job|cron ?job|task|helper|command) "
               r"to (?:add|remove|drop|create|fix|update|rename|backfill|import|export|sync|migrate)\b")
#: when a check recurs, said of the work: "check whether the lockfile changed before you push"
_LATER = _rx(r"\b(?:before|after|whenever|once) (?:you|we|i|\w+ing)\b", r"\bbefore (?:every|each|any)\b")
#: a thing to find out, asked for: "anyway also check if the proc macro crate is being rebuilt every time", "check
#: whether the lookback is even there" (what is checked may say "every time": it is what is looked for, not when)
_FIND_OUT = re.compile(r"^\W*(?:(?:anyway|also|and|so|btw|oh|ok|okay|then|now|pls|please|can you|could you|can u)\W+)*"
                       r"(?:check|verify|find out|figure out)\s+(?:if|whether)\b", re.I)
_FROM_NOW_ON = _rx(r"\bfrom now on\b", r"\bgoing forward\b")
_EVERY_TIME = _rx(r"\b(?:when|whenever|every time|each time|always|never|by default)\b")
#: a step of the work at hand, asked for by its verb and pointing at its thing ("run prettier over src/ so we
#: don't get a giant diff later", "delete src/queue entirely", "yes, and drop pytest-xdist from the dev deps"): a
#: task, unless it says when it recurs ("run `make check` before you push", "always …")
_STEP_OPENS = (r"^(?:\W*(?:ok(?:ay)?|yes|yeah|yep|sure|no|nope|nah|wait|so|and|also|then|now|pls|please|good call on [\w./-]+|great|"
               r"cool|nice|thanks|thx)\W+)*")
_TASK_AT_HAND = _rx(_STEP_OPENS + r"(?:re-?run|run|add|create|write|fix|open|build|generate|bump|rename|split|extract|"
                    r"refactor|implement|update|push|commit|merge|rebase|deploy|publish|check|reformat|clean up|port|"
                    r"revert|delete|wire up|hook up|draft|regenerate|rewrite|move|convert|install|upgrade)\s+"
                    r"(?:[\w-]+\s+){0,2}?(?:(?:it|them|this|that|these|those|the|my|our|me)\b|[\w./-]*/[\w./-]*|`[^`]+`|"
                    # a thing of the code by its name: "write tests for PriceFormatter"
                    r"\w+\.\w+\b|(?-i:[A-Z][a-z0-9]+[A-Z]\w*)\b)",
                    _STEP_OPENS + r"(?:drop|remove) [\w.@/-]+ from (?:the )?(?:dev )?(?:deps|dependencies|requirements|"
                    r"package\.json|pyproject|lockfile|[\w./-]+\.\w+)\b")
_SAYS_WHEN_IT_RECURS = _rx(r"\b(?:always|never|every|each|whenever|when(?:ever)? (?:you|we|i)|before (?:you|we|i)\b|"
                           r"before \w+ing|before (?:commit|push|merg|open|deploy|releas)\w*|after (?:you|we|i)\b|"
                           r"after (?:\w+ing|commit|push|merg)\w*|once (?:you|we)\b|from now on|going forward|"
                           r"by default|in this (?:repo|project|codebase)|instead|first|should|must|as (?:usual|always)|"
                           r"any ?time|on every|for (?:all|every|any) )\b")


#: what a thing asked for does, said of it: "add a test that checks every SnowflakeSource table exists" (its "every" says
#: what the test covers, not when the work recurs)
_WHAT_IT_CHECKS = re.compile(r"\b(?:tests?|checks?|lints?|scripts?|assertions?|validations?|guards?|polic(?:y|ies)|"
                             r"rules?|hooks?|jobs?)\s+(?:that|which|to)\s+"
                             r"(?:checks?|verif(?:y|ies)|asserts?|makes? sure|ensures?|fails?|validates?|requires?|"
                             r"denies|blocks?|rejects?|enforces?)\b.*$", re.I)


#: why it is said now, then what is said: "heads up since we're doing the contrast pass today: I'm colorblind
#: (deuteranopia), so when you talk about color changes give me hex + contrast ratio"
_PREAMBLE = re.compile(r"^\W*(?:heads up|fyi|btw|note|quick note|since|as|because)\b[^:]{0,100}?\b(?:today|tonight|this "
                       r"week|right now)\s*:\s*(?P<rest>\S.{20,})$", re.I | re.S)


def never_durable(sentence: str) -> bool:
    """A question (nothing decided yet), a clarification of the request at hand ("no, I mean …"), an
    instruction tied to the work at hand, or a request for a thing to be made, unless it also states a
    standing rule ("since we never … in this repo, can you …?"); an instruction that says when it ends
    ("until this is merged"), and a report that something is broken that says nothing of what to do."""
    if preamble := _PREAMBLE.match(sentence.strip()):
        return never_durable(preamble.group("rest"))  # the work of today says why it is said now, not what is said
    if _CLARIFYING.search(sentence.strip()) or _BOUNDED.search(sentence):
        return True
    if (_REMARK.search(sentence.strip()) and not _SAYS_WHAT_TO_DO.search(sentence)) or _DONE_OR_GUESSED.search(sentence):
        return True
    complaint = _COMPLAINT.search(sentence)
    if ((_HEARSAY.search(sentence.strip()) or complaint) and not _ADOPTED.search(sentence)
            and not (complaint and _SAYS_WHAT_TO_DO.search(sentence))):
        return True
    if _DESCRIBES.search(sentence) and not _SAYS_TO_DO.search(sentence):
        return True
    if ((_MALFUNCTION.search(sentence.strip())
         or (_OBSERVED.search(sentence) and len(sentence.split()) <= OBSERVED_WORDS))
            and not _SAYS_WHAT_TO_DO.search(_QUOTED.sub(" ", sentence))):
        return True  # (what the quoted output says is not what the person says to do)
    if (_ONE_OFF.search(sentence) or _REQUEST.search(sentence.strip())) and not _STANDING.search(sentence):
        return True
    if _FOR_A_PIECE_OF_WORK.search(sentence) and not _EVERY_TIME.search(sentence) and not _FROM_NOW_ON.search(sentence):
        return True
    if _THIS_WORK.search(sentence) and not _SAYS_WHEN_IT_RECURS.search(sentence):
        return True
    if _ASKS_FOR_OUTPUT.search(sentence.strip()) and not (_STANDING.search(sentence) or _EVERY_TIME.search(sentence)):
        return True
    if _TASK_AT_HAND.search(sentence.strip()) and not _SAYS_WHEN_IT_RECURS.search(_WHAT_IT_CHECKS.sub("", sentence)):
        return True
    if _AT_HAND.search(sentence.strip()) and not _STANDING.search(sentence):
        return True
    if _FIND_OUT.search(sentence.strip()) and not (_STANDING.search(sentence) or _LATER.search(sentence)):
        return True
    return bool(_ASKS.search(sentence.strip())) and not _STANDING.search(sentence)
