"""What the rewrite removes: discourse filler, preambles, time anchors, chatter and the task riding along."""

from __future__ import annotations

import re


def _any(*patterns: str) -> str:
    return "(?:" + "|".join(patterns) + ")"


_LEAD_FILLER = re.compile(
    r"^(?:(?:"
    # filler whatever follows it
    + _any(
        r"actually", r"ugh+", r"argh+", r"sigh", r"omg", r"meh", r"nah", r"ok(?:ay)? so", r"ok(?:ay)?", r"alright",
        r"so yeah", r"so+", r"hey(?: there)?", r"hi", r"hello", r"yeah(?: so| about that)?", r"yea", r"oh", r"ah",
        r"also", r"and", r"but", r"btw", r"fyi", r"by the way", r"anyway(?:s)?", r"honestly", r"basically", r"tbh",
        r"imo", r"imho", r"fwiw", r"just", r"please", r"pls", r"plz", r"um+", r"uh+", r"hmm+", r"erm",
        r"heads up", r"quick (?:note|thing)", r"one more thing", r"like i (?:said|mentioned)(?: before| earlier)?",
        r"as i (?:said|mentioned)(?: before| earlier)?", r"as mentioned(?: before)?",
        r"i (?:think|guess|believe|feel like|suppose)", r"i'd say", r"i mean", r"new rule", r"real quick",
        r"context for you", r"for context", r"remember(?: to| that)", r"don't forget(?: to| that)?",
        r"keep in mind(?: that)?", r"note that", r"to be clear", r"for the record", r"in general", r"generally",
        r"as a (?:general )?rule", r"rule of thumb", r"going forward", r"moving forward", r"from now on",
        r"from here on(?: out)?", r"in (?:the )?future", r"for future reference", r"no+ no+", r"no+(?=\s*[,!])",
        r"nope", r"sorry(?:,? long day)?", r"lol", r"lmao", r"haha+", r"oh and", r"and also", r"yes",
        r"unrelated(?: but)?", r"ngl", r"hm+", r"welp", r"oh wait", r"quick (?:heads up|update)",
        # why it is said now: "since we're doing the contrast pass today: I'm colorblind …"
        r"(?:since|as|because) [^:]{0,100}?\b(?:today|tonight|this week|right now)(?=\s*:)",
    )
    + r"(?![\w'/-]|\.\w)(?:[\s,:;!–—-]|\.(?!\w))*"
    # filler only before a comma, colon or dash ("update: …", not "update the changelog …")
    + r"|" + _any(
        r"well", r"look", r"listen", r"note", r"again", r"update", r"decision", r"reminder", r"important",
        r"remember", r"nb", r"n\.b\.", r"ps", r"p\.s\.", r"wait", r"thanks", r"cool", r"right", r"sure",
        r"dude", r"man", r"general rule", r"fun fact",
    )
    + r"(?:\s*[,:;.!]+(?!\w)|\s+[–—-]+)\s*"
    + r")+)",
    re.I,
)
_REQUEST_LEAD = re.compile(
    r"^(?:(?:can|could|would|will) you(?: please| pls| kindly)?(?: mind)?|would you mind|do you mind|"
    r"(?:i'd|i would) (?:like|love) (?:it if )?you to|i (?:want|need) you to|make sure (?:you|to)|"
    r"be sure to|try to|remember to|please)\s+",
    re.I,
)
_INLINE_FILLER = re.compile(
    r"\s*(?<!\bnot )\b(?<![\w-])just\b(?! to\b)(?=[\s,.;:!?)]|$)|"
    r"\s*\b(?<![\w-])(?:please|pls|plz|kindly|literally|basically|honestly|actually|really|simply|kinda|sorta|"
    r"lol|lmao|haha+|tbh|imo|imho|btw|fyi|fwiw|ngl|kind of|sort of|you know|i guess|i think|i mean|"
    r"(?:thanks|thank you|thx|ty|cheers)(?: so much| a lot)?(?: in advance)?)\b(?!-)(?=[\s,.;:!?)]|$)",
    re.I,
)
_TRAILING_FILLER = re.compile(
    r"(?:(?:(?:[\s,;:.!]|\s-+\s)*\s*\b(?<![\w-])(?:please|pls|plz|thanks|thank you|thx|ty|cheers|lol|lmao|haha+|ever|"
    r"keep (?:it|\w+|that|this) (?:that|this) way|keep (?:that|this) in mind|keep doing (?:that|this|it)|"
    r"that's the house style|it's the house style|no exceptions|period|seriously|"
    r"at least|in general|for the record|going forward|from now on|moving forward|anymore)\b"
    r"|(?:\s*[,;:.!]+\s*|\s+-+\s+)(?:ok|okay|k|kk|right|yeah)\b)\W*)+$",
    re.I,
)
_TIME_ANCHOR = re.compile(
    r",?\s*\b(?:(?:from|since|as of|during|in|over) )?"
    r"(?:last (?:week|sprint|month|quarter|night|release)|this (?:morning|afternoon|week|sprint)|"
    r"yesterday|earlier today|(?:ages|a while|a month|a week|two weeks) ago|a while back|recently|"
    r"in (?:january|february|march|april|may|june|july|august|september|october|november|december)|"
    r"since (?:the|our) (?:migration|retro|rewrite|move)|"
    r"going forward|moving forward|from now on|from here on(?: out)?|for future reference|"
    r"in (?:the )?future|from today(?: on)?)\b",
    re.I,
)
#: change-of-mind preambles and asides before the rule: "that convention's outdated, …", "if you don't mind, …"
_PREAMBLE = re.compile(
    r"^(?:"
    + _any(
        r"(?:that|this|the) (?:convention|rule|one)(?:'s| is) (?:outdated|old|stale|wrong|gone|out of date)",
        r"forget (?:what|everything) i said(?: about [^,;:.]+)?", r"scratch (?:that|the [^,;:.]+)",
        r"ignore what i said(?: about [^,;:.]+)?", r"i was wrong about [^,;:.]+", r"change of plans?",
        r"(?:i(?:'ve| have|'m| am|m)? )?chang(?:ed|ing) my mind(?: (?:on|about) [^,;:.]+)?",
        r"if you (?:do not|don't|dont) mind",
        r"if possible", r"when you get a chance", r"while you're at it", r"for (?:this|the) repo(?:sitory)?(?=:)",
        r"small thing(?: but [^,;:.]+)?", r"(?:this|it) (?:is going to|might|may) sound [^,;.]+(?: but hear me out)?",
        r"hear me out",
        r"(?:that's|that is|this is|it's) (?:the )?(?:wrong|not right|incorrect|not what [^,;:.]+)(?: [\w-]+)?",
        r"wrong [\w-]+", r"not like that", r"not quite",
    )
    + r")(?:[\s,:;.!]+-*\s*|\s*-+\s+)(?=\S)",  # (not the hyphen inside "the code-only answers thing")
    re.I,
)
_ASIDE = re.compile(
    r",\s*(?:it's|it has|that's|this has|it is|its) been "
    r"(?:in the (?:wiki|docs|readme|contributing)|like that|the rule|"
    r"agreed|decided)[^,;.()]*"
    r"|,\s*keep it (?:that|this) way\b"
    r"|\s+now(?=\s*(?:[,;:.!)]|$))",
    re.I,
)
_LIKE_FILLER = re.compile(r"\blike,?\s+(?=[~\d])|(?<=[,;])\s*like,\s*|\s*,\s*like,", re.I)

#: sentences that carry nothing lasting: thanks, venting, change-of-mind preambles, asides
_CHATTER = re.compile(
    r"^(?:"
    + _any(
        r"(?:thanks|thank you|thx|ty|cheers)\b.*",
        r"(?:jesus|omg|ugh+|argh+|wtf|sigh|oops|geez|man|dude|seriously|come on|really|why|lol|lmao|haha+|ok|okay|"
        r"cool|great|nice|good|perfect|awesome|excellent|exactly|correct|right|good job|well done|nice work)\W*",
        r"(?:always|never|ever|no exceptions|period|please|again|every time|everywhere)\W*",
        r"sorry\b.*", r"small thing\b.*", r"hear me out\b.*", r"(?:this|it) is going to sound\b.*",
        r"forget (?:what|everything) i said\b[^,;:.]*", r"scratch (?:that|the\b[^,;:.]*)",
        r"ignore what i said\b[^,;:.]*",
        r"i was wrong about\b[^,;:.]*", r"(?:i(?:'ve| have|'m| am|m)? )?chang(?:ed|ing) my mind\b(?: (?:on|about) [^,;:.]+)?",
        r"(?:that|this) (?:convention|rule)(?:'s| is) (?:outdated|old|stale|wrong|gone)\W*",
        r"change of plans?\b.*", r"(?:small |quick )?correction\b\W*", r"new rule\W*", r"fyi\W*",
        r"just so you know\W*", r"for the record\W*",
        r"(?:keep|leave) it (?:that|this) way\b.*", r"(?:that's|that is|it's|it is) the house style\W*",
        r"(?:that's|it's|this is) (?:literally |exactly )?(?:how|why|what)\b.*",
        r"(?:that's|this is|it's) (?:been )?in the (?:wiki|docs|readme)\b.*",
        r"(?:there is|there's) no \S+ \S+\W*$",
        r"you (?:just |already )?(?:ate|broke|deleted|loaded|added|created|used|wrote|committed|pushed|made|did|"
        r"ran|put|removed|renamed|changed|forgot|missed|skipped|introduced|reformatted)\b.*",
        r"(?:that|this) (?:was|is) (?:prod|production|wrong|the wrong|not what|on the wrong)\b.*",
        r"(?:that|this) was\b.{0,20}",
        r"(?:it|that|this) (?:saves|costs|cost|took|takes) me\b.*",
        r"i(?:'ve| have) been burned\b.*", r"i(?:'ve| have) (?:already )?(?:told|asked) you\b.*",
        r"how many times\b.*", r"(?:no|nope|nah),? not like that\W*", r"not like that\W*",
        r"every (?:single )?time you [^,;:.]*\byou (?:forget|break|miss|skip|ignore|mess|get)\b.*",
    )
    + r")$",
    re.I,
)
#: the task riding along with a rule: "take it out", "delete it and …"
_TASK_LEAD = re.compile(
    r"^(?:(?:now |so )?(?:please )?(?:delete|remove|revert|undo|fix|take|put|move|change|update|redo|rename|drop)"
    r" (?:it|that|this|them|those|these)(?: out| back| again)?(?:,? and(?: then)?|,|$)\s*)",
    re.I,
)
