"""Reasons, pieces of work that end, and tools that go, in the words of work sessions:

- "the old one is legacy" said after "X don't go in the old place" is the rule's reason, not a change of it;
- "just for this analysis", "for the board deck", "it's a throwaway" end with the work;
- "external-secrets is getting ripped out" turns the old tool down; container registries are one kind of tool, so
  "everything goes to ECR now" replaces "images go to ghcr".

Changes of mind run through the real capturer (offline classifier, MiniLM vectors, FAISS neighbours).
"""

from __future__ import annotations

import pytest

from forgemem.capture.classify.learned import never_durable
from forgemem.capture.classify.units import units
from forgemem.names import _families, _names

from .test_capture_changes import _conversation, _current, _relation
from .test_capture_gates import _store_with


def test_a_reason_that_agrees_with_the_negative_rule_before_it_keeps_the_rule(tmp_path, real_embedder):
    workspace, _ = _store_with(tmp_path, "Run the jobs with make jobs.", "repo", "project-conventions")
    written = _conversation(workspace, real_embedder,
                            ("user", "add a job that rebuilds the search index every night"),
                            ("assistant", "Created jobs/rebuild_index.py."),
                            ("user", "it's in the wrong place. jobs don't go in the top-level jobs/ folder, every "
                                     "service has its own folder: services/<name>/jobs/. the top-level one is legacy "
                                     "and the deploy only syncs the service folders, so your job would silently never "
                                     "run. please remember that"),
                            ("assistant", "Moved it to services/search/jobs/rebuild_index.py."))
    (memory,) = written  # one memory: the rule, with its reason
    assert "services/<name>/jobs/" in memory.body and "legacy" in memory.body, written


@pytest.mark.parametrize("sentence", [
    "i know we're on polars in this repo but just for this analysis keep it pandas, it's a throwaway",
    "for the board deck: theme_minimal, base font 16, no gridlines",
    "don't touch the old logger wrapper in internal/log yet, it goes once everything's migrated",
    "keep the legacy store provider for now, the cart slice still uses it until next sprint",
])
def test_a_piece_of_work_that_ends_is_no_rule(sentence):
    assert never_durable(sentence)


@pytest.mark.parametrize("sentence", [
    "for the weekly report always use the finance calendar",
    "use polars for every new notebook",
])
def test_said_of_every_time_it_still_can_be(sentence):
    assert not never_durable(sentence)


def test_container_registries_are_one_kind_of_tool():
    kinds = [_families(_names(text)) for text in ("images go to ghcr.io/acme now", "everything goes to ECR now",
                                                 "push to Docker Hub under acme/", "we mirror to quay.io")]
    assert all(kind == {"container-registry"} for kind in kinds), kinds


def test_a_registry_said_as_where_everything_goes_now_replaces_the_old_one(tmp_path, real_embedder):
    workspace, old = _store_with(tmp_path, "Images go to ghcr.io/acme-platform", "repo", "architectural-decisions")
    written = _conversation(workspace, real_embedder,
                            ("user", "pulls of private images from the cluster need a secret in every namespace. "
                                     "everything goes to ECR now: 1234.dkr.ecr.eu-west-1.amazonaws.com/<service>. "
                                     "change build.yml"),
                            ("assistant", "build.yml now logs in to ECR and pushes there."))
    assert [m.supersedes for m in written if "ECR" in m.body] == [(old.id,)], written
    assert old.id not in _current(workspace, real_embedder)


@pytest.mark.parametrize("said", [
    "the vault migration finished last month, external-secrets is getting ripped out.",
    "external-secrets is being phased out, the vault agent injector does it now",
])
def test_a_tool_getting_ripped_out_is_turned_down(real_embedder, said):
    old = "App secrets: AWS Secrets Manager, synced into k8s by external-secrets"
    assert _relation(old, said, real_embedder, "architectural-decisions") == ("supersedes", 0)


def test_stop_doing_it_and_what_to_do_instead_are_one_rule():
    from forgemem.capture.classify.fragments import _merge_fragments

    said = _merge_fragments(units("no. iterrows is slow on this size anyway. stop using iterrows — vectorise with "
                                  "np.where and assign once. there are more of these in etl/, grep for them"))
    assert "stop using iterrows; vectorise with np.where and assign once." in said, said


def test_a_decision_said_after_the_story_of_the_problem_is_written(tmp_path, real_embedder):
    workspace, _ = _store_with(tmp_path, "Run dbt with make dbt.", "repo", "project-conventions")
    written = _conversation(workspace, real_embedder,
                            ("user", "ok so long story. the tracker has been writing page views into mysql "
                                     "(events.page_views) and it's at 300M rows, backups run all night, the reports "
                                     "time out on it half the time. we talked about it in the platform sync yesterday "
                                     "and decided: page views land as parquet on gcs, partitioned by day, and mysql is "
                                     "out of the event path completely. reports read through bigquery external tables. "
                                     "mysql stays for the app only."),
                            ("assistant", "Understood. Want me to start with the writer?"))
    assert any("parquet" in m.body and m.category == "architectural-decisions" for m in written), written


def test_a_flag_is_kept_verbatim_in_the_rule():
    from forgemem.capture.classify.offline import rule_form

    text = rule_form("im on a mac so sed -i needs the '' or just use gsed", category="user-facts", scope="user")
    assert "sed -i needs" in text and "the user needs" not in text, text


def test_a_tool_gone_with_its_successor_named_and_a_fact_after_it_are_two_memories(tmp_path, real_embedder):
    workspace, old = _store_with(tmp_path, "K8s deploys: helm charts in deploy/charts, one values-<env>.yaml per env",
                                 "repo", "architectural-decisions")
    written = _conversation(workspace, real_embedder,
                            ("user", "bump the mailer image to 3.2.0 in staging and prod"),
                            ("assistant", "Bumped in deploy/charts/mailer/values-staging.yaml and values-prod.yaml."),
                            ("user", "helm charts are gone, it's kustomize. overlays are deploy/k8s/overlays/<env>, "
                                     "just change the images: block there. and btw im on a mac so sed -i needs the '' "
                                     "or just use gsed, thats why it blew up"),
                            ("assistant", "Updated the overlays."))
    replacing = [m for m in written if m.supersedes == (old.id,)]
    assert len(replacing) == 1 and "kustomize" in replacing[0].body, written
    assert any(m.scope == "user" and "mac" in m.body and not m.supersedes for m in written), written


def test_a_bare_no_after_a_rule_is_part_of_it(tmp_path, real_embedder):
    workspace, _ = _store_with(tmp_path, "Run tofu fmt before committing.", "repo", "project-conventions")
    written = _conversation(workspace, real_embedder,
                            ("user", "the status page record is gone again"),
                            ("assistant", "Recreated the CNAME with the cli."),
                            ("user", "ok. a rule for you: from now on every dns change goes through the dns stack in "
                                     "tofu. no console, no cli."),
                            ("assistant", "Understood."))
    assert len(written) == 1 and "no console" in written[0].body.lower() and written[0].scope == "repo", written


def test_a_rule_taken_back_in_the_same_turn_leaves_nothing(tmp_path, real_embedder):
    workspace, _ = _store_with(tmp_path, "Run tofu fmt before committing.", "repo", "project-conventions")
    written = _conversation(workspace, real_embedder,
                            ("user", "write a module for the billing queues. names are team-env-service-purpose, e.g. "
                                     "bil-stg-invoices-events. oh and prefix everything with acme- ... no actually "
                                     "forget the prefix, the account already scopes it"),
                            ("assistant", "Created modules/billing-queues."))
    assert not any("prefix" in m.body.lower() for m in written), written


def test_found_by_a_new_user_trial_a_rule_said_after_a_long_paste_is_kept():
    from forgemem.capture.passes import MAX_TURN_CHARS, turn_to_json
    from forgemem.capture.transcripts import Turn

    log = "\n".join(f"2026-11-28T10:{i % 60:02d}:00Z INFO worker[{i}] processed batch {i} in 12ms" for i in range(150))
    text = f"here's the log:\n```\n{log}\n```\nanyway, in this repo always name branches feat/<ticket-id>, no exceptions"
    assert len(text) > MAX_TURN_CHARS
    kept = turn_to_json(Turn("g", 0, "user", text, None, "g", 1, 1, 0, 0))["text"]
    assert kept.startswith("here's the log:") and kept.endswith("feat/<ticket-id>, no exceptions"), kept[-200:]
    assert len(kept) <= MAX_TURN_CHARS + 10


def test_a_long_turn_is_cut_between_sentences_never_through_one(tmp_path, real_embedder):
    """A cut through a sentence left "Always use pnpm inst …" and "… d of npm, never yarn; …" as memories."""
    from forgemem.capture.passes import MAX_TURN_CHARS, turn_to_json
    from forgemem.capture.transcripts import Turn

    text = ". ".join(f"step {i}: always use pnpm instead of npm, never yarn" for i in range(120))
    kept = turn_to_json(Turn("g", 0, "user", text, None, "g", 1, 1, 0, 0))["text"]
    assert len(kept) <= MAX_TURN_CHARS
    head, gap, tail = kept.partition("\n…\n")
    assert gap and head.endswith("never yarn.") and tail.startswith("step "), (head[-40:], tail[:40])

    workspace, _ = _store_with(tmp_path, "Run the tests with make test.", "repo", "project-conventions")
    said = ". ".join("always use pnpm instead of npm, never yarn" for _ in range(100))
    stored = turn_to_json(Turn("g", 0, "user", said, None, "g", 1, 1, 0, 0))["text"]  # as the observer keeps it
    written = _conversation(workspace, real_embedder, ("user", stored), ("assistant", "Okay."))
    assert all(m.body.lower().count("pnpm") == 1 and "…" not in m.body for m in written), written
