"""What the rewrite recognises: subject rewrites, contractions, and rule, reason and confirmation cues."""

from __future__ import annotations

import re

# ------------------------------------------------------------------ subject rewrites

_NP_END = r"(?=$|[,;:()]|\s(?:and|but|so|because|since|as|for|in|on|with|which|who|that|now|from|to|,)\b)"
_OBJ = r"((?:[^,;:()](?!\b(?:because|since|so that|as it)\b))+?)"

_STARTS: list[tuple[re.Pattern[str], str]] = [
    # let's …
    (re.compile(r"^let'?s not (?:use|do) ", re.I), "Do not use "),
    (re.compile(r"^let'?s not ", re.I), "Do not "),
    (re.compile(rf"^let'?s (?:switch|move|migrate|change|go|stick|standardi[sz]e|settle|convert)(?: over| back)? "
                rf"(?:to|with|on) {_OBJ} (?:instead of|rather than|over|and not) ([^,;:()]+?){_NP_END}", re.I),
     r"Use \1, not \2"),
    (re.compile(r"^let'?s (?:switch|move|migrate|change|go|stick|standardi[sz]e|settle|convert)(?: over| back)? "
                r"(?:to|with|on) ", re.I), "Use "),
    (re.compile(r"^let'?s do (?=[~\d])", re.I), "Use "),
    (re.compile(r"^let'?s (?:always )?", re.I), ""),
    # we switched / moved / dropped …
    (re.compile(rf"^(?:we|the team)(?:'ve| have|'re| are)? (?:now |just )?(?:switched|moved|migrated|changed|went|"
                rf"switching|moving|migrating|changing)(?: over)? "
                rf"(?:((?:the )?[\w-]+(?: [\w-]+)?) )?from {_OBJ} to {_OBJ}{_NP_END}", re.I),
     "_switch"),
    (re.compile(r"^(?:we|the team)(?:'ve| have|'re| are)? (?:now |just )?(?:switched|moved|migrated|switching|moving|"
                r"migrating)(?: over| everything)? to ", re.I), "Use "),
    (re.compile(rf"^(?:we|the team)(?:'ve| have)? (?:now )?(?:moved|switched|migrated|gone) (?:off|away from) "
                rf"{_OBJ} (?:to|for|in favou?r of) {_OBJ}{_NP_END}", re.I), r"Use \2, not \1"),
    (re.compile(rf"^(?:we|the team)(?:'ve| have)? (?:now )?(?:moved|switched|migrated|gone) (?:off|away from) "
                rf"{_OBJ}{_NP_END}", re.I), r"No longer use \1"),
    (re.compile(rf"^(?:we|the team)(?:'ve| have)? (?:dropped|removed|ditched|killed|got rid of|retired|abandoned|"
                rf"deprecated|stopped using) {_OBJ}{_NP_END}", re.I), r"No longer use \1"),
    (re.compile(rf"^(?:we|the team)(?:'re| are) no longer (?:on|using) {_OBJ}{_NP_END}", re.I), r"No longer use \1"),
    (re.compile(rf"^(?:we|the team) (?:no longer|don't|do not) use {_OBJ} any ?more{_NP_END}", re.I),
     r"No longer use \1"),
    (re.compile(rf"^(?:we|the team) no longer use {_OBJ}{_NP_END}", re.I), r"No longer use \1"),
    (re.compile(r"^(?:we|the team) no longer ", re.I), "No longer "),
    (re.compile(r"^no more ", re.I), "No more "),
    # we're going with / chose / decided …
    (re.compile(rf"^(?:we|i|the team)(?:'re| are|'ve| have)? (?:going|gone|went) with {_OBJ} "
                rf"(?:over|rather than|instead of|not) ", re.I), r"Use \1 rather than "),
    (re.compile(r"^(?:we|i|the team)(?:'re| are|'ve| have)? (?:going|gone|went) with ", re.I), "Use "),
    (re.compile(r"^(?:we|i|the team)(?:'ve| have)? (?:chose|chosen|picked|selected|settled on|decided on|opted for|"
                r"standardi[sz]ed on|adopted|agreed on) ", re.I), "Use "),
    (re.compile(r"^(?:we|the team)(?:'re| are) (?:standardi[sz]ing|settling) on ", re.I), "Use "),
    (re.compile(rf"^(?:we|the team)(?:'ve| have)? decided against {_OBJ}(?:,? and (?:to )?)", re.I),
     r"Do not use \1; "),
    (re.compile(rf"^(?:we|the team)(?:'ve| have)? decided against {_OBJ} in favou?r of ", re.I),
     r"Do not use \1; use "),
    (re.compile(r"^(?:we|i|the team)(?:'ve| have)? (?:decided|agreed) (?:to|that we(?:'ll| will| should)?) ", re.I),
     ""),
    (re.compile(r"^(?:we|i|the team)(?:'ve| have)? (?:decided|agreed) that ", re.I), ""),
    (re.compile(r"^(?:the|our) (?:decision|plan|rule|convention|policy|standard)(?: here)? (?:is|was) (?:to|that) ",
                re.I),
     ""),
    (re.compile(r"^(?:the|our) (?:decision|rule|convention|policy|standard)(?: here)? (?:is|was):? ", re.I), "Use "),
    (re.compile(r"^(?:we|the team)(?:'re| are) (?:using|on|running with) ", re.I), "Use "),
    (re.compile(r"^(?:go|going) with ", re.I), "Use "),
    (re.compile(r"^(?:we|the team)(?:'re| are) (?:keeping|sticking with) ", re.I), "Keep "),
    (re.compile(r"^(?:we|the team)(?:'ll| will) (?:use|go with|stick with|stick to) ", re.I), "Use "),
]
_WE_VERB = re.compile(
    r"^(?:we|our team|the team)(?:'ll| will| should| must| need to| have to|'ve got to| gotta| want to| always| "
    r"never| usually| generally| only| also| do not| don't| dont| DONT| now)*\s+"
    r"(?!(?:are|were|was|had|have|has|got|can|could|might|may|would|did|used|need|want|'re|'ve|"
    r"like|love|hate|think|know|feel|believe|agreed|decided|talked|discussed|lost|learned|found|wants|needs|likes|"
    r"prefers|thinks|knows|says|said|is|has|feels|hates|loves|"
    r"saw|noticed|went|came|do|does|[a-z]+ed)\b)([a-z][\w-]*)\b",
    re.I,
)
_WE_MODAL = re.compile(
    r"^(?:we|our team|the team)((?:'ll| will| should| must| need to| have to|'ve got to| gotta| want to| always| "
    r"never| usually| generally| only| also| do not| don't| dont| DONT| now)*)\s+",
    re.I,
)
_WE_GERUND = re.compile(r"^(?:we|the team)(?:'re| are) ([a-z]+ing)\b", re.I)

_USER_STARTS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"^(?:personally,?\s+)?i(?: really| strongly| much| definitely| generally| usually| always|"
                r" mostly)*(?: prefer| like| love| enjoy|'d prefer| would prefer)\b", re.I), "The user prefers"),
    (re.compile(r"^(?:personally,?\s+)?i(?: really| strongly| much| definitely)*(?: want|'d like| would like| need)\b",
                re.I), "The user wants"),
    (re.compile(r"^(?:personally,?\s+)?i(?:'d| would) (?:much )?rather\b", re.I), "The user would rather"),
    (re.compile(r"^(?:personally,?\s+)?i (?:really |truly )*(?:hate|dislike|can't stand|cannot stand|detest|"
                r"don't like|do not like)\b", re.I), "The user dislikes"),
    (re.compile(r"^(?:personally,?\s+)?i(?:'m| am) (?:really )?not (?:a|the) (?:big |huge )?fan of\b", re.I),
     "The user dislikes"),
    (re.compile(r"^(?:personally,?\s+)?(?:i(?:'m| am) )?(?:a )?(?:big |huge )?fan of\b", re.I), "The user prefers"),
    (re.compile(r"^personally,?\s+", re.I), ""),
]

_FIRST_PERSON: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\bI(?:'m| am)\b", re.I), "the user is"),
    (re.compile(r"\bI(?:'ve| have)\b(?! to\b)", re.I), "the user has"),
    (re.compile(r"\bI(?:'d| would)\b", re.I), "the user would"),
    (re.compile(r"\bI(?:'ll| will)\b", re.I), "the user will"),
    (re.compile(r"\bmyself\b", re.I), "themselves"),
    (re.compile(r"\bmy\b", re.I), "the user's"),
    (re.compile(r"\bmine\b", re.I), "the user's"),
    (re.compile(r"\bme\b(?!-)", re.I), "the user"),
]
_I_VERB = re.compile(
    r"\b(?:I|i) ((?:(?:really|strongly|much|mostly|usually|always|never|also|only|still|often|rarely|sometimes|"
    r"generally|just|already|no longer|now|(?!apply\b|reply\b|rely\b|supply\b|multiply\b|comply\b)[a-z]{3,}ly) )*)"
    r"(?!no\b|not\b)([a-z][a-z'-]*[a-z])\b"
)
_WE_ELSEWHERE: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\bwe(?:'re| are)\b", re.I), "the project is"),
    (re.compile(r"\bwe(?:'ve| have)\b(?! to\b)", re.I), "the project has"),
    (re.compile(r"\bwe(?:'d| would)\b", re.I), "the project would"),
    (re.compile(r"\bwe(?:'ll| will)\b", re.I), "the project will"),
    # "no business logic in signals in our projects": the team's, not "the project's projects"
    (re.compile(r"\bour (?=(?:projects|repos|repositories|services|apps|codebases|clients|teams)\b)", re.I), "the team's "),
    (re.compile(r"\bours\b", re.I), "the project's"),
    (re.compile(r"\bour\b", re.I), "the project's"),
    (re.compile(r"\bus\b(?!-)(?=\s|[,.;:)]|$)", re.I), "the project"),
]
_WE_VERB_ELSEWHERE = re.compile(
    r"\bwe ((?:(?:really|always|never|also|only|still|usually|generally|just|already) )*)([a-z][a-z']*)\b", re.I
)

_CONTRACTIONS = [
    (re.compile(r"\b(d)on'?t\b(?!-)", re.I), "do not"),
    (re.compile(r"\bdoesn'?t\b", re.I), "does not"),
    (re.compile(r"\bdidn'?t\b", re.I), "did not"),
    (re.compile(r"\bcan't\b|\bcant\b", re.I), "cannot"),
    (re.compile(r"\bwon't\b", re.I), "will not"),
    (re.compile(r"\bisn'?t\b", re.I), "is not"),
    (re.compile(r"\baren'?t\b", re.I), "are not"),
    (re.compile(r"\bshouldn'?t\b", re.I), "should not"),
    (re.compile(r"\bmustn'?t\b", re.I), "must not"),
    (re.compile(r"\bwouldn'?t\b", re.I), "would not"),
    (re.compile(r"\bhasn'?t\b", re.I), "has not"),
    (re.compile(r"\bhaven'?t\b", re.I), "have not"),
    (re.compile(r"\bwasn'?t\b", re.I), "was not"),
    (re.compile(r"\bweren'?t\b", re.I), "were not"),
    (re.compile(r"\bi'?m\b(?=\s)", re.I), "I'm"),
    (re.compile(r"\bive\b", re.I), "I've"),
    (re.compile(r"\bi\b(?=[\s'])"), "I"),
    (re.compile(r"\bits (?=(?:been|a|an|the|not|just|what|how|fine|ok|too|so|always|never|only|literally|really)\b)"),
     "it's "),
    (re.compile(r"\bim (?=[a-z]+ing\b|used\b|a\b|an\b|not\b|on\b|in\b)"), "I'm "),
    (re.compile(r"(?<![\w-])(?:pls|plz)\b(?!-)", re.I), "please"),  # not in a name: "release-plz"
    (re.compile(r"\balot\b"), "a lot"),
    (re.compile(r"\bteh\b"), "the"),
    (re.compile(r"\bthier\b"), "their"),
    (re.compile(r"\bseperate(?=\w*\b)"), "separate"),
    (re.compile(r"\bdefinately\b"), "definitely"),
    (re.compile(r"\brecieve"), "receive"),
    (re.compile(r"\bdoesnt\b"), "does not"),
    (re.compile(r"\bisnt\b"), "is not"),
    (re.compile(r"\bu\b(?=\s)", re.I), "you"),
    (re.compile(r"\bur\b(?=\s)", re.I), "your"),
    (re.compile(r"\bthx\b", re.I), "thanks"),
    (re.compile(r"\bw/o\b", re.I), "without"),
    (re.compile(r"\bb/c\b|\bbc\b(?=\s)", re.I), "because"),
]
_SHOUTED = re.compile(r"\b(?:DONT|DON'T|DO|NOT|NEVER|ALWAYS|ONLY|NO|MUST|SHOULD|EVER|ANY|EVERY|ALL|USE|STOP)\b")

_REPO_WORDS = [
    (re.compile(r"\bin (?:this|the|our) (?:repo|repository)\b", re.I), "in this repository"),
    (re.compile(r"\b(?:this|our) repo\b", re.I), "this repository"),
    (re.compile(r"\bfor (?:this|our) repo\b", re.I), "for this repository"),
]
_HERE_AT_END = re.compile(r"\s+(?:in |around )?here(?=\s*(?:[,;.:!)]|$))", re.I)

_IMPERATIVE_START = re.compile(
    r"^(?:use|do|don't|never|always|only|keep|put|run|add|make|write|name|store|call|pass|avoid|prefer|"
    r"give|ask|check|wrap|split|load|read|set|pin|log|route|send|treat|format|declare|follow|define|"
    r"document|place|mark|return|throw|raise|test|commit|push|merge|squash|rebase|rename|move|create|"
    r"leave|stop|start|include|exclude|import|export|annotate|type|seed|version|deploy|build|install|"
    r"copy|open|close|tag|label|prefix|suffix|lint|explain|answer|reply|respond|tell|show|list|"
    r"comment|sort|group|limit|cap|bump|update|upgrade|downgrade|migrate|switch|replace|remove|delete|"
    r"stick|go|target|support|handle|validate|sanitize|sanitise|escape|quote|mock|stub|fake|inject|"
    r"fine-tune|train|evaluate|measure|profile|benchmark|cache|batch|retry|fail|skip|ignore|"
    r"no|not|the user|vectorise|vectorize|query|parse|emit|print|keep|fetch|send|respect|mention|"
    r"be|prioriti[sz]e|favou?r|stay|sit|live|go|belong)\b",
    re.I,
)
_MODAL = re.compile(
    r"\b(?:always|never|must|should|only|do not|does not|is not allowed|are not allowed|no longer|required|"
    r"mandatory|forbidden|need(?:s)? to|has to|have to|not allowed|every|all|any)\b",
    re.I,
)
_REASON_START = re.compile(
    r"^(?:because|since|as|so(?: that)?|otherwise|or else|that's why|this is why|that way|"
    r"(?:it|this|that|they)(?:'s| is| are| was| were|'re) (?:too|way|much|so|really|super|very|just|far)|"
    r"(?:it|this|that|they) (?:makes?|breaks?|causes?|keeps?|saves?|costs?|leads?|takes?|slows?)|"
    r"(?:the|our) \w+(?: \w+)? (?:is|are|was|were) (?:too|way|much|so|really|super|very|slow|fast|flaky|broken)|"
    r"(?:\w+ ){0,4}(?:burned|bit|broke|caused|leaked|failed|crashed|throttl\w*|double-charg\w*)\b|"
    r"[^;]*\b(?:is|are|was|were) (?:too|way too) |"
    r"(?:that|this|it) (?:came out of|comes from|was decided in|is from|was agreed in)\b|"
    r"(?:[\w'-]+ ){0,6}(?:was|were|had|broke|burned|bit|caused|happened|failed|crashed|rejected|complained|"
    r"lost|exploded|corrupted|leaked|blew up|took down|double-charged)\b)",
    re.I,
)
_PROPOSAL_SENT = re.compile(
    r"\b(?:should I|shall I|should we|shall we|want me to|do you want|would you like|I can|I could|I'll|"
    r"I will|let me|how about|what about|OK\?|okay\?|from now on|going forward|as the default|the standard|"
    r"the default|by default)\b",
    re.I,
)
_ACCEPT = re.compile(
    r"^(?:(?:yes|yeah|yep|yup|ya|yea|sure|ok(?:ay)?|perfect|great|sounds good|good idea|good call|please do|"
    r"go ahead|go for it|do it|do that|absolutely|definitely|of course|correct|agreed|exactly|makes sense|"
    r"lgtm|sgtm|👍|✅|please|yes please|that works|works for me|let's do (?:it|that)|right|indeed|"
    r"that's (?:right|how it should be|the way)|make (?:that|it) (?:the )?(?:default|standard|rule))\b[\s,.!:;-]*)+",
    re.I,
)
_ACCEPT_ECHO = re.compile(
    r"^(?:(?:do (?:that|this|it)|make (?:that|it|this) (?:the )?(?:default|standard|rule)|"
    r"(?:for|on) (?:everything|all of them|all|every \w+)|everywhere|always|from now on|going forward|"
    r"that's how it should be|as (?:the )?(?:default|standard))\b[\s,.!:;-]*)+$",
    re.I,
)
