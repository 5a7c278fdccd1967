"""Capture in the words of security and platform work (read off development set 37; each case failed on 0d492b7):

- one-offs tied to a batch, a run or a release ("for this batch nosemgrep with a reason on each"), a German task
  ("ich muss das Bicep-Template … anpassen"), what a system never does ("breakpoints in IntakeBlobTrigger never hit")
  and praise of the last answer said alone are no rules;
- "that explanation was exactly the level i need. keep doing that for anything azure networking" is one rule about
  how to answer the person;
- a measure moved, said close in meaning ("it's wednesdays 14:00–16:00 utc now" where "Prod deploys only Tue/Thu
  10:00-12:00 UTC" held), replaces the old rule.
"""

from __future__ import annotations

import pytest

from forgemem.capture.classify.learned import never_durable
from forgemem.capture.classify.relate import Candidate, relate

from .test_capture_changes import _conversation, _current
from .test_capture_gates import _store_with


@pytest.mark.parametrize("sentence, never", [
    ("for this batch nosemgrep with a reason on each, i'll bring the rule tuning up with appsec next week", True),
    ("for this release skip the e2e suite", True),
    ("Ich muss das Bicep-Template für den neuen Storage Account in rg-dataplat-weu anpassen", True),
    ("breakpoints in IntakeBlobTrigger never hit", True),
    ("the cron job never fires on sundays", True),
    ("that explanation was exactly the level i need", True),
    ("migrations never run automatically in prod", False),
    ("for every release attach the SBOM", False),
])
def test_one_offs_reports_and_praise_are_no_rules(sentence, never):
    assert never_durable(sentence) is never


def test_keep_doing_that_after_praise_is_how_to_answer_the_person(tmp_path, real_embedder):
    workspace, _ = _store_with(tmp_path, "Deploy with the release pipeline only.", "repo", "project-conventions")
    written = _conversation(workspace, real_embedder,
                            ("user", "pods in ns payments stuck in ContainerCreating since the redeploy"),
                            ("assistant", "The CSI driver can't reach the vault: the private endpoint's DNS zone isn't "
                                          "linked to the cluster VNet. Here is what each piece does: …"),
                            ("user", "yes, that explanation was exactly the level i need. keep doing that for anything "
                                     "azure networking"),
                            ("assistant", "Will do."))
    (memory,) = written
    assert "networking" in memory.body and memory.scope == "user" and memory.category == "user-facts", written


def test_a_measure_moved_said_close_in_meaning_replaces_the_old_rule():
    old = Candidate("Prod deploys only Tue/Thu 10:00-12:00 UTC.", "project-conventions", "repo", 0.42)
    said = "ah wait the window changed this month it's wednesdays 14:00–16:00 utc now, only that day."
    assert relate(said, said, "project-conventions", "repo", [old])[:2] == ("supersedes", 0)
    far = Candidate("Prod deploys only Tue/Thu 10:00-12:00 UTC.", "project-conventions", "repo", 0.2)
    assert relate(said, said, "project-conventions", "repo", [far])[0] == "new"


def test_a_change_taken_back_in_the_next_turn_writes_nothing_and_keeps_the_stored_rule(tmp_path, real_embedder):
    """"hmm wait, no. … keep conventional commits, forget what i said" takes back the turn before it; its words of
    taking back were read as taking back the stored rule, which a garbled memory then replaced."""
    workspace, old = _store_with(tmp_path, "Commit messages follow Conventional Commits.", "repo", "project-conventions")
    written = _conversation(workspace, real_embedder,
                            ("user", "commit the cert report changes. actually you know what, lets stop doing "
                                     "conventional commits, nobody reads the prefixes anyway"),
                            ("assistant", "Committed as 'Add cert expiry report'."),
                            ("user", "hmm wait, no. release-please builds the changelog and the version bump from those "
                                     "prefixes. keep conventional commits, forget what i said. amend it as "
                                     "feat(reports): ..."),
                            ("assistant", "Amended: feat(reports): add cert expiry report."))
    assert written == []
    assert old.id in _current(workspace, real_embedder)


def test_a_rule_said_again_is_not_a_new_version(tmp_path, real_embedder):
    """Found by a new-user trial: "reminder: we use pnpm in this repo" wrote a second, unlinked pnpm rule, and "again,
    use pnpm here, not npm" a new version that lost the hand-written reason of the one the store held."""
    workspace, old = _store_with(tmp_path, "Use pnpm for everything in this repository (bun broke the lockfile in CI).",
                                 "repo", "project-conventions")
    written = _conversation(workspace, real_embedder,
                            ("user", "reminder: we use pnpm in this repo"), ("assistant", "Noted."),
                            ("user", "add a date picker to the settings page"), ("assistant", "Done."),
                            ("user", "again, use pnpm here, not npm"), ("assistant", "Sorry, reinstalled with pnpm."))
    assert written == []
    assert _current(workspace, real_embedder) == {old.id}
