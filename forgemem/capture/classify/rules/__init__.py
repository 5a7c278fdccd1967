"""Memories read as rules: the user's words rewritten as one statement a later session can act on.

    rule_text("Actually, let's switch to uv instead of poetry: poetry is too slow in CI.",
              category="architectural-decisions", scope="repo")
    → "Use uv, not poetry (poetry is too slow in CI)."

Pure, offline and deterministic: regular expressions over the sentence, no network,
no model (nothing here is learned: the corpus in ../shared/eval/capture was used to
develop the patterns on its TRAIN split only; benchmarks/bench_rules.py measures it).
What it does, in order:

1. Code spans (`...`), quoted strings, URLs, paths, file names, NAME=value pairs,
   key blocks and long tokens are set aside and put back verbatim at the end:
   never re-cased, split or trimmed, so a secret among them still looks to the
   redaction that runs on the memory afterwards exactly as it was typed.
2. Markdown lists become one line ("Rules: a; b; c"), emoji and discourse filler go
   ("Actually,", "ok so", "hey", "can you", "please", "I think", "just", "btw",
   "so yeah", "lol", "thanks"), as do thank-yous, venting ("jesus."), change-of-mind
   preambles ("forget what I said about …", "scratch that"), remarks about the
   incident at hand ("you just ate them", "that's why the outputs are garbage"),
   the task request riding along ("take it out", "can you fix the three files …?")
   and time anchors of the past ("last sprint", "this morning").
3. The subject is made explicit. First person becomes the user ("I prefer X" →
   "The user prefers X", "I'm on fish" → "The user is on fish", "my" → "the
   user's"); "we"/"let's" become imperatives for the repository ("we use pnpm
   here" → "Use pnpm in this repository.", "let's switch to X instead of Y" →
   "Use X, not Y", "we dropped moment" → "No longer use moment"), and a "we"
   further in becomes "the project".
4. A reason the user gave is kept: inline ("…, because …") or, when it follows as
   its own remark, in parentheses at the end.
5. A correction that points back ("don't do that", "never do that again") says what
   "that" was when the preceding assistant turn says it briefly ("I ran black over
   the whole module" → "Do not run black over the whole module."); otherwise the
   sentence is kept as it is.
6. A confirmation ("yes, let's do that") takes its rule from the agent's proposal
   (`proposal`, or `context` when the reply is a plain yes to a question or offer):
   "Should I pin all GitHub Actions to a commit SHA from now on?" + "yes, with the
   tag in a comment" → "Pin all GitHub Actions to a commit SHA, with the tag in a
   comment." A yes with a rule of its own after a one-off offer ("ok, and from now
   on always run the full suite") keeps the user's rule.

German, Spanish and French sentences keep their language: there is no translation
offline. Only filler (emoji, "bitte", "por favor", "s'il vous plaît", "also,",
"bueno,", "bon,") is stripped from them.

The result is never empty and never much longer than what it came from (at most
1.3 × the input plus 40 characters, the input being the sentence and, for a
confirmation, the proposal); a text that is already a clean rule comes back
essentially unchanged.

What it cannot do: paraphrase. A rule buried in a long complaint, a statement
whose subject is implicit ("parquet for intermediate files"), or a fact that
should become an instruction ("I use fish" → "give fish commands") keeps the
user's own wording; the `category` is accepted for the classifier's call but
the wording follows the words, not the label.

The modules, in the order the steps run: `protect` (1), `cleanup` (markdown,
emoji, the language) and `filler` (2), `patterns` (subject rewrites, contractions,
rule, reason and confirmation cues) and `verbs`, used by `clauses` (3, 4, one
sentence at a time), `confirm` (5, 6), and `rewrite` (`rule_text`, which
composes the clauses, finishes and limits the result).
"""

from __future__ import annotations

from forgemem.capture.classify.rules.rewrite import rule_text

__all__ = ["rule_text"]
