"""How a new memory relates to its nearest existing ones: a small trained decision by subject.

A change of mind is a supersession whatever the words: "we moved off poetry,
it's uv now", "scratch that, uv instead of poetry", "use uv" over *Use poetry
for dependency management.* all make the poetry memory stale. Cosine
similarity alone cannot tell that apart from a refinement ("and pin uv in CI")
or from a hard negative that shares words ("the poetry anthology page lists
authors alphabetically"); change-of-mind wording alone cannot either ("we
switched our alerts channel"). So each (new memory, candidate) pair is
described by a few signals, all cheap and offline:

* **names**: tools, products, versions, paths and code spans in both texts
  (`_names`): shared ones, swapped ones (old name gone, new name in), an old
  name negated in what was said ("moved off poetry", "poetry is gone", "not
  npm", "von MySQL auf …"), a changed number ("Node 18" → "Node 22", "two
  approvals" → "one");
* **subject**: what the rule is about — a small lexicon of tool families and
  subject words (`_LEXICON`): poetry, uv and "deps" are all *Python
  dependencies*, so "use uv" and "poetry is gone" share a subject with the
  poetry memory even with no word in common; plus the overlap of the other
  content words with the names masked;
* **change language** in what was said and in the new text (English,
  German, Spanish, French), and refinement cues ("and …", "also …",
  "except …");
* the cosine similarity and whether both are in the same scope.

The category is not a signal: every supersession in the capture corpus keeps its
category, so it would be learned as a shortcut, while a classifier files a change
of mind under a category of its own ("going forward use uv" as a coding
preference over a project convention); left out, cross-validation did as well.

A multinomial logistic regression over these (weights in
`relate_weights.json`, fitted by `benchmarks/train_relate.py` on the capture
corpus's training split and this project's extra pairs) scores four classes:
supersedes, refines, other-scope (the same subject said for the other scope:
both stay), unrelated. The decision over all candidates:

1. **duplicate**: the nearest candidate, same scope, cosine ≥ DUPLICATE_AT,
   and nothing changed or added — no change language (not even "now"), no name
   or number swapped or turned down, no flip between a positive and a negative
   rule, no new name or number: the same rule said again;
2. **supersedes** the same-scope candidate the model most believes superseded
   (a supersession never crosses scopes);
3. **refines** the same-scope candidate it most believes refined;
4. **relates-to** a candidate the model puts on the same subject in the other
   scope, or the nearest one at cosine ≥ RELATED_AT;
5. otherwise **new**.

Measured in `benchmarks/bench_relate.py`.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

WEIGHTS = Path(__file__).with_name("relate_weights.json")
CLASSES = ("supersedes", "refines", "other-scope", "unrelated")
DUPLICATE_AT = 0.86
RELATED_AT = 0.55


@dataclass(frozen=True)
class Candidate:
    text: str  # an existing memory's text
    category: str
    scope: str  # repo | user
    similarity: float  # cosine of all-MiniLM-L6-v2 embeddings of the candidate and the new memory text
    id: str = ""


# --------------------------------------------------------------------------- lexicon

#: family | subject | names (aliases as alias=canonical). A family groups tools that
#: replace one another; its subject is what a rule about them is about.
_LEXICON = """
python-deps | deps | pip, pipenv, poetry, uv, conda, mamba, pdm, hatch, pip-tools, requirements.txt, poetry.lock, uv.lock, virtualenv
js-deps | deps | npm, yarn, pnpm, bun, npm workspaces, yarn.lock, pnpm-lock.yaml, package-lock.json
ios-deps | deps | cocoapods, swift package manager, spm=swift package manager, carthage, podfile
jvm-build | build | maven, gradle, sbt, ant, bazel
gradle-dsl | build | kotlin dsl, groovy
python-tests | tests | pytest, unittest, nose, nose2, testcase, unittest.testcase
js-tests | tests | jest, vitest, mocha, jasmine, ava, karma, tap
e2e-tests | tests | cypress, playwright, selenium, puppeteer, webdriverio, testcafe, selenium grid
other-tests | tests | rspec, minitest, junit, testng, xctest, catch2, googletest, gtest
python-formatter | format | black, ruff, ruff format, yapf, autopep8
python-linter | format | ruff, ruff check, flake8, pylint, pyflakes, pycodestyle, isort
python-types | format | mypy, pyright, pyre, pytype
js-formatter | format | prettier, biome, dprint
js-linter | format | eslint, biome, standard, tslint, rome, oxlint
other-format | format | rubocop, gofmt, goimports, golangci-lint, rustfmt, clang-format, ktlint, detekt, swiftlint, swiftformat, stylelint
ci | ci | jenkins, jenkinsfile, travis, travis ci, circleci, github actions, gitlab ci, .gitlab-ci.yml, buildkite, drone, teamcity, azure pipelines, bitbucket pipelines, woodpecker
git-hooks | hooks | pre-commit, husky, lefthook, overcommit
hosting | deploy | heroku, netlify, vercel, render, fly.io, fly, cloudflare pages, cloudflare workers, github pages, app engine, elastic beanstalk, digitalocean, hetzner, kamal, capistrano, railway, firebase hosting, read the docs, aws ecs, ecs, eks, gke, aks, nomad, kubernetes, k8s=kubernetes, lambda, cloud run
object-storage | storage | s3, r2, gcs, azure blob, minio, local disk
database | database | mysql, postgres, postgresql=postgres, sqlite, mongodb, mongo=mongodb, dynamodb, cassandra, clickhouse, mariadb, oracle, sql server, cockroachdb, firestore, supabase, bigquery, snowflake, redshift, timescaledb, influxdb
search | search | elasticsearch, opensearch, meilisearch, algolia, typesense, solr
cache | cache | redis, memcached, varnish, valkey, keydb
broker | jobs | kafka, rabbitmq, rabbit=rabbitmq, nats, sqs, sns, pubsub, kinesis, activemq, redis
job-runner | jobs | celery, dramatiq, sidekiq, rq, bullmq, resque, huey, temporal
bundler | bundle | webpack, vite, parcel, rollup, esbuild, turbopack, create react app, cra=create react app, gulp, grunt, snowpack, rspack, browserify
web-framework | frontend | react, angular, vue, svelte, solid, ember, next.js, nuxt, remix, astro, htmx, jquery, backbone
backend-framework | backend | django, flask, fastapi, rails, express, nestjs, spring, spring boot, laravel, phoenix, gin, echo, actix, axum
state | state | redux, redux toolkit, zustand, mobx, recoil, jotai, react query, tanstack query, pinia, vuex, xstate
styling | style | sass, scss, less, tailwind, styled-components, emotion, css modules, bootstrap, bulma, vanilla-extract, stylus
logging | logging | logrus, zap, zerolog, slog=log/slog, log/slog, log4j, logback, winston, pino, bunyan, loguru, structlog, glog
error-tracking | monitoring | sentry, honeycomb, rollbar, bugsnag, datadog, new relic, airbrake
metrics | monitoring | grafana, prometheus, datadog, new relic, opentelemetry, jaeger, splunk, elk
experiments | experiments | weights & biases, wandb=weights & biases, mlflow, tensorboard, comet, neptune, aim, clearml
iac | infra | terraform, opentofu, pulumi, cloudformation, cdk, crossplane
config-management | infra | ansible, chef, puppet, saltstack, cloud-init
local-env | local-dev | docker compose, docker-compose=docker compose, podman, vagrant, tilt, kind, minikube, skaffold, devcontainer, devcontainers, nix, k3d
charts | deploy | helm, tiller, kustomize, argocd, flux, helmfile
autoscaling | scaling | cluster-autoscaler, karpenter, keda
tracker | tracker | jira, linear, trello, asana, youtrack, github issues, shortcut, clickup
wiki | docs | confluence, notion, gitbook
docs-site | docs | sphinx, mkdocs, docusaurus, vitepress, hugo, jekyll, read the docs, github pages
editor | editor | vim, neovim, emacs, vs code, vscode=vs code, intellij, intellij idea, pycharm, sublime, sublime text, zed, atom, xcode, android studio, webstorm, helix, goland, rider, cursor
os | os | windows, macos, mac=macos, macbook=macos, linux, ubuntu, fedora, arch, debian, wsl, chromebook
shell | shell | bash, zsh, fish, powershell, nushell, oh-my-zsh
http-client | http | requests, httpx, aiohttp, urllib3, axios, got, superagent, okhttp, retrofit, ky
dates | dates | moment, moment.js=moment, date-fns, dayjs, luxon, arrow, pendulum
orm | orm | sqlalchemy, prisma, typeorm, sequelize, knex, kysely, drizzle, gorm, diesel, activerecord, peewee, hibernate, room
migrations | migrations | alembic, flyway, liquibase, goose, atlas, autogenerate
api-style | api | rest, graphql, grpc, soap, trpc, json-rpc, websockets
api-spec | api | openapi, swagger, raml
auth | auth | jwt, jwts=jwt, oauth, saml, session tokens, sessions, cookies, keycloak, auth0, cognito
android-ui | ui | jetpack compose, compose, xml layouts, viewbinding, databinding
apple-ui | ui | swiftui, uikit, appkit
cross-platform | ui | flutter, react native, xamarin, ionic, capacitor, electron, tauri, qt
game-engine | engine | unity, unreal, godot
game-architecture | engine | dots, ecs, monobehaviours
rtos | firmware | freertos, zephyr, rtems, threadx, embedded linux, arduino, mbed
mcu | firmware | stm32f4, stm32g4, stm32, esp32, nrf52, rp2040, atmega
secrets | secrets | vault, doppler, .env, sops, external secrets, externalsecrets, 1password, secrets manager, infisical
flags | flags | launchdarkly, unleash, flagsmith, growthbook, config/flags.yaml
proxy | proxy | nginx, traefik, haproxy, caddy, envoy, apache
push | notifications | firebase, firebase cloud messaging, fcm, onesignal, apns, pusher
dataframes | data | pandas, polars, dask, spark, pyspark, duckdb, vaex, modin, polars lazy frames
optimizer | training | adam, adamw, sgd, lion, adafactor
precision | training | bf16, fp16, fp32, fp8
release | release | release-please, semantic-release, changesets, goreleaser
notebooks | notebooks | nbstripout, jupytext
language | language | english, german, spanish, french, italian, portuguese, japanese, british english, american english
runtime | runtime | node, python, java, ruby, php, go, rust, dotnet, kotlin, swift, typescript, javascript, c#, c++, gdscript
version-file | runtime | .nvmrc, .python-version, .terraform-version, .tool-versions
"""

#: subject words: what a rule is about when it names no tool (lemma -> subject)
_SUBJECT_WORDS = {
    "deps": "deps dependency dependencies package packages lockfile lock install installs installed "
    "virtualenv venv venvs environment environments",
    "tests": "test tests testing spec specs suite e2e end-to-end coverage",
    "format": "format formatter formatting formatted lint linter linters linting style quote quotes semicolons",
    "ci": "ci pipeline pipelines builds workflow workflows",
    "deploy": "deploy deploys deployed deployment deployments host hosted hosting ship ships release releases",
    "database": "database databases db dbs datastore",
    "storage": "storage bucket buckets upload uploads uploaded assets",
    "cache": "cache caching cached",
    "jobs": "job jobs queue queues broker worker workers background event events",
    "bundle": "bundle bundler bundling bundled",
    "state": "state store stores",
    "style": "css styling stylesheet stylesheets styles",
    "logging": "log logs logging logger",
    "monitoring": "monitoring observability tracking alerting errors",
    "experiments": "experiment experiments run runs tracked",
    "infra": "provision provisioning infrastructure servers",
    "local-dev": "local dev development",
    "tracker": "issue issues ticket tickets tracker",
    "docs": "docs documentation doc wiki page pages",
    "editor": "editor ide",
    "os": "os laptop machine operating",
    "shell": "shell terminal commands",
    "http": "http client calls",
    "dates": "date dates datetime time",
    "api": "api apis endpoint endpoints",
    "auth": "auth authentication login",
    "ui": "ui screen screens layout layouts view views",
    "firmware": "firmware board mcu rtos",
    "secrets": "secret secrets credentials",
    "flags": "flag flags",
    "notifications": "notification notifications push",
    "training": "training optimizer decay weight learning precision",
    "indent": "indent indentation indented tab tabs spaces space",
    "line-length": "line length wrap wrapping characters chars",
    "branch": "branch branches",
    "commit": "commit commits",
    "review": "review reviews approval approvals pr prs pull request requests merge merged merging",
    "naming": "name names naming case kebab-case camelcase snake_case pascalcase",
    "language": "language reply replies answer answers",
    "answers": "answer answers explanation explanations explain summary verbose concise short detailed",
    "location": "timezone based lives live city time zone",
    "version": "version versions minimum floor",
    "tenancy": "tenant tenants tenancy multi-tenancy",
    "performance": "fps performance target framerate",
}

_STOP = set(
    """a an the and or but of to in on for with without by at as from into onto via per than then this that these those it its
    is are was were be been being do does did done has have had having will would should must can could may might shall
    use uses used using run runs keep keeps make makes go goes put always never only all every each any some no not
    new old now here there our we us you your i my me they them their he she his her user user's prefers prefer wants want
    likes like needs need also too just very more most less so such same other own one ones way thing things
    repo repository repositories project projects codebase code team rule rules please instead
    which what when where who whom whose how why if else there's it's that's don't doesn't isn't aren't""".split()
)

_NUMBER_WORDS = {
    "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
    "seven": "7", "eight": "8", "nine": "9", "ten": "10", "twelve": "12", "single": "1",
}

#: capitalised words that are not names of a choice
_NOT_NAMES = set(
    """i the a an ci cd pr prs api apis ui ux url urls http https json yaml yml csv sql os id ids cpu gpu ram
    readme todo ok eu us uk utc mb gb kb tb ms sdk cli ide ssh tls ssl dns ip tcp udp html css js ts py md
    no yes not never always new please it we our use run""".split()
)


def _build_lexicon() -> tuple[dict[str, str], dict[str, set[tuple[str, str]]], re.Pattern[str]]:
    alias: dict[str, str] = {}
    family: dict[str, set[tuple[str, str]]] = {}
    for line in _LEXICON.strip().splitlines():
        fam, subject, names = (part.strip() for part in line.split("|"))
        for entry in names.split(","):
            entry = entry.strip().lower()
            name, _, canonical = entry.partition("=")
            canonical = canonical or name
            alias[name] = canonical
            family.setdefault(canonical, set()).add((fam, subject))
    ordered = sorted(alias, key=len, reverse=True)  # longest first: "docker compose" before "compose"
    pattern = re.compile(
        r"(?<![\w.@/-])(?:" + "|".join(re.escape(n) for n in ordered) + r")(?![\w@-]|\.\w)", re.I
    )
    return alias, family, pattern


def _stem(word: str) -> str:
    """A rough English stem: commits, committed, committing -> commit; fixes -> fix; policies -> policy."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and re.search(r"(?:x|ss|ch|sh|z)es$", word):
        return word[:-2]
    for suffix in ("ing", "ed", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix) and not word.endswith("ss"):
            stem = word[: -len(suffix)]
            if len(stem) > 3 and stem[-1] == stem[-2] and stem[-1] not in "aeiouls":
                stem = stem[:-1]
            return stem
    return word


_ALIAS, _FAMILY, _LEXICON_RE = _build_lexicon()

#: names that are also ordinary words ("pull requests", "the rest", "a graph node", "poetry"
#: the literature): a name only in a code span, title-cased mid-sentence, with a version,
#: right after a tool verb ("use uv", "off poetry"), or beside a word of its subject or
#: another tool of its family
_AMBIGUOUS = set(
    """requests rest got room compose fly render standard less emotion arrow tap echo express spring phoenix
    go node python java ruby rust swift mac arch lion adam aim comet flux kind nix atom helix cursor rome tiller
    ant drone chef puppet atlas goose hugo shortcut linear spark dots ecs sessions cookies notebooks temporal
    apache vault lambda poetry black hatch bun mocha chai jasmine karma nose hypothesis sphinx jekyll zed sublime
    fish zap react remix solid ember backbone gin tilt notion windows salt saltstack caddy envoy pusher ky uv
    spm cra doppler unity jupyter lock rider storage english german spanish french italian portuguese japanese
    unreal mamba conda pip hpa keda kinesis huey rq neptune clearml grafana""".split()
)
_TOOL_VERBS = set(
    """use uses using used with via to off from onto through by over on switch switched moved migrate migrated
    install installed run runs adopt adopted try chose pick picked prefer prefers instead replace replaced
    ditch ditched drop dropped kein keine von auf usamos usa utiliser utilise""".split()
)
_SUBJECT_OF = {word: subject for subject, words in _SUBJECT_WORDS.items() for word in words.split()}
_SUBJECT_OF.update({_stem(w): subject for w, subject in list(_SUBJECT_OF.items()) if _stem(w) not in _SUBJECT_OF})

_CODE = re.compile(r"`([^`]+)`")
_TOKEN = re.compile(r"[A-Za-z0-9_#.+/<>@-]*[A-Za-z0-9_#+>]|[A-Za-z0-9]")
_NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)*)(?:\s*(%|k|ms|s|px|fps|rpm|h|gb|mb))?(?![\w])", re.I)
_SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s+|\n|[-–—]\s+|\(\s*)$")


def _words(text: str) -> list[str]:
    return [w.lower() for w in re.findall(r"[A-Za-z][A-Za-z'-]*", text)]


def _names(text: str) -> set[str]:
    """Tools, products, versions, paths and code spans named in `text` (canonical, lower case)."""
    found: set[str] = set()
    for span in _CODE.findall(text):
        found.add(span.strip().lower())
    masked = text
    matches = list(_LEXICON_RE.finditer(text))
    # family -> the distinct names of it in the text: two tools of one kind vouch for each other ("uv instead of poetry")
    named: dict[str, set[str]] = {}
    for m in matches:
        for fam, _ in _FAMILY[_ALIAS[m.group(0).lower()]]:
            named.setdefault(fam, set()).add(_ALIAS[m.group(0).lower()])
    families = {
        fam for fam, names in named.items()
        if len(names) > 1 or any(m.group(0).lower() not in _AMBIGUOUS and _ALIAS[m.group(0).lower()] in names for m in matches)
    }
    words = set(_words(text))
    code = " ".join(_CODE.findall(text)).lower()
    for match in matches:
        written = match.group(0)
        canonical = _ALIAS[written.lower()]
        if written.lower() in _AMBIGUOUS and not _is_a_name(text, match, canonical, families, words, code):
            continue
        found.add(canonical)
    masked = _LEXICON_RE.sub(" ", text)
    masked = _CODE.sub(" ", masked)
    for match in _TOKEN.finditer(masked):
        token = match.group(0).strip(".-/")
        if len(token) < 2 or token.lower() in _NOT_NAMES or token.lower() in _STOP:
            continue
        if token.isdigit() or re.fullmatch(r"\d+(?:-[a-z]+)+", token):
            continue  # numbers ("4", "4-space") are compared on their own (`_numbers`)
        lower = token.lower()
        looks_like_name = (
            any(c.isdigit() for c in token)
            or any(c in token for c in "._/#+<>@")
            or (token[0].isupper() and not _SENTENCE_START.search(masked[: match.start()]))
            or any(c.isupper() for c in token[1:])
        )
        if looks_like_name:
            found.add(lower)
    return found


def _is_a_name(text: str, match: re.Match[str], canonical: str, families: set[str], words: set[str], code: str) -> bool:
    written = match.group(0)
    kinds = _FAMILY[canonical]
    before = re.findall(r"[\w']+", text[: match.start()].lower())
    mid_sentence = not _SENTENCE_START.search(text[: match.start()])
    return (
        written.lower() in code
        or (written[0].isupper() and not written.isupper() and mid_sentence)
        or bool(re.match(r"\s*v?\d", text[match.end() :]))
        or bool(before and before[-1] in _TOOL_VERBS)
        or any(fam in families for fam, _ in kinds)
        or any(_subject_of(w) == subject for w in words for _, subject in kinds)
    )


def _numbers(text: str) -> set[str]:
    found = {m.group(1) + (m.group(2) or "").lower() for m in _NUMBER.finditer(_CODE.sub(" ", text))}
    found |= {m.group(1) for m in _NUMBER.finditer(text)}
    for word in _words(text):
        if word in _NUMBER_WORDS:
            found.add(_NUMBER_WORDS[word])
    return {n for n in found if not re.fullmatch(r"\d{4}", n) or n.startswith("0")}  # years are dates


def _subjects(text: str, names: set[str]) -> set[str]:
    subjects = set()
    for name in names:
        for fam, subject in _FAMILY.get(name, ()):
            subjects.add(fam)
            subjects.add(subject)
    for word in _words(text):
        if subject := _subject_of(word):
            subjects.add(subject)
    return subjects


def _families(names) -> set[str]:
    return {fam for name in names for fam, _ in _FAMILY.get(name, ())}


def _subject_of(word: str) -> str | None:
    return _SUBJECT_OF.get(word) or _SUBJECT_OF.get(_stem(word))


def _content(text: str, names: set[str]) -> set[str]:
    masked = _LEXICON_RE.sub(" ", _CODE.sub(" ", text))
    return {
        _stem(w)
        for w in _words(masked)
        if len(w) > 2 and w not in _STOP and w not in names and w not in _NUMBER_WORDS
    }


# --------------------------------------------------------------------------- language

def _any(*patterns: str) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in patterns), re.I)


#: a change of mind, in English, German, Spanish and French
_CHANGE = _any(
    r"\bno longer\b", r"\bnot\b[^.;]{0,40}\bany ?more\b", r"\bany ?more\b", r"\binstead\b", r"\brather than\b",
    r"\bswitch(?:ed|ing)?\b", r"\bmov(?:e|ed|ing) (?:to|off|from|away|over|up|down)\b", r"\bmoved\b",
    r"\bmigrat(?:e|ed|ing)\b", r"\bport(?:ed|ing)\b", r"\bchanged? (?:my|our) mind\b", r"\bchange of plans?\b",
    r"\bscratch (?:that|the)\b", r"\bscrap\b", r"\bforget (?:what|the|about|that|it)\b", r"\bi was wrong\b",
    r"\bwas wrong\b", r"\bwas a mistake\b", r"\bwere a mistake\b", r"\bfrom now on\b", r"\bgoing forward\b",
    r"\bfrom here on\b", r"\bfrom this \w+ on\b", r"\bthese days\b", r"\bnew rule\b", r"\bno more\b",
    r"\breplac(?:e|ed|es|ing)\b", r"\bditch(?:ed|ing)?\b", r"\bdropp(?:ed|ing)\b", r"\bdrop\b",
    r"\b(?:is|are|'s|'re) (?:gone|out|dead|history|legacy|deprecated|archived|frozen|over)\b",
    r"\bdeprecated\b", r"\brip(?:ped|ping)? out\b", r"\bgot rid of\b", r"\bstopp?(?:ed)? (?:using|doing|committing)\b",
    r"\bstopped\b", r"\bupgraded\b", r"\bbump(?:ed)?\b", r"\blower(?:ed)?\b", r"\braised\b", r"\bcut (?:it )?down\b",
    r"\bcome around\b", r"\bused to\b", r"\bretired\b", r"\babandon(?:ed)?\b", r"\bshut down\b", r"\bleft\b",
    r"\bdone with\b", r"\bdidn't work out\b", r"\brenamed\b", r"\brelocated\b", r"\bunsupported\b",
    r"\bend of life\b", r"\bwe(?:'re| are) (?:now )?on\b", r"\bsince (?:the|last|yesterday|march|january)\b",
    # German
    r"\bnicht mehr\b", r"\bkein\w*\b[^.;]{0,40}\bmehr\b", r"\bumgestiegen\b", r"\bgewechselt\b",
    r"\bstattdessen\b", r"\bab (?:jetzt|sofort)\b", r"\bvergiss\b", r"\bist geschichte\b", r"\babgeschaltet\b",
    r"\bnur noch\b", r"\bumgestellt\b", r"\bersetzt\b",
    # Spanish
    r"\bya no\b", r"\ben (?:vez|lugar) de\b", r"\ba partir de ahora\b", r"\bdejamos\b", r"\bcambiamos\b",
    r"\bolvida\b", r"\bde ahora en adelante\b",
    # French
    r"\bdésormais\b", r"\bdorénavant\b", r"\bà partir de maintenant\b", r"\bne \w+ plus\b", r"\bn'\w+ plus\b",
    r"\bplus de\b", r"\bfinalement\b", r"\bon passe à\b", r"\babandonné\b", r"\bau lieu de\b",
    r"\bc'est fini\b", r"\bj'avais tort\b",
)
_CHANGE_WEAK = _any(r"\bnow\b", r"\bactually\b", r"\bcurrently\b", r"\bjetzt\b", r"\bahora\b", r"\bmaintenant\b", r"\btoday\b")
#: an addition to what holds: "and …", "also …", "except …"
_REFINE = _any(
    r"^\s*(?:and|also|plus|but|except|though|specifically|that includes|on top of that|in addition)\b",
    r"\b(?:as well|too)\s*[.!]?\s*$", r"\bon top of\b", r"\bin addition\b", r"\bexcept\b", r"\balso\b",
)
#: before an old name: "not npm", "moved off poetry", "instead of X", "von MySQL auf"
_NEGATED_BEFORE = _any(
    r"\bno longer(?: \w+)?$", r"\bnot(?: \w+)?$", r"\bno$", r"\boff$", r"\bfrom$", r"\binstead of$", r"\bover$",
    r"\brather than$", r"\breplac\w*$", r"\bditch\w*$", r"\bdrop\w*$", r"\bleft$", r"\bleave$", r"\baway from$",
    r"\bout$", r"\bremov\w*$", r"\bforget(?: \w+)?$", r"\bscratch(?: the)?$", r"\bscrap(?: the)?$",
    r"\bwrong about$", r"\bwrong to \w+$", r"\bdone with$", r"\bstop\w* \w+$", r"\babandon\w*$", r"\bkein\w*$",
    r"\bvon$", r"\bya no \w+$", r"\bdejamos$", r"\bsin$", r"\bplus de$", r"\bau lieu de$", r"\bmit$",
    r"\bdas mit$", r"\bvergiss(?: das mit)?$", r"\babandonné$", r"\bfrom \w+$", r"\bunlike$",
)
#: after an old name: "poetry is gone", "yarn's out", "X was a mistake", "X ist Geschichte"
_NEGATED_AFTER = _any(
    r"^(?:'s|is|are|was|were|has been|have been)? ?(?:gone|out|dead|history|legacy|deprecated|archived|frozen|"
    r"unmaintained|unsupported|read-only|removed|deleted|over|too \w+|a mistake|a pain|shut down|replaced|"
    r"being (?:closed|removed)|end of life|only for|no longer|not used|didn't work)",
    r"^(?:'s|is)? ?(?:no|not) (?:longer|more|used|anymore)", r"^\w* ?(?:anymore|any more)\b",
    r"^(?:ist|wurde|sind) (?:geschichte|abgeschaltet|weg|raus)", r"^(?:c'est fini|est fini)", r"^(?:didn't|did not)",
    r"^(?:got|were|was) (?:cut|dropped|removed)", r"^\w+ (?:got cut|is gone|are gone)",
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


# --------------------------------------------------------------------------- features

FEATURES = (
    "bias",
    "similarity",
    "similarity_high",
    "same_scope",
    "change",
    "change_weak",
    "refine_cue",
    "shared_name",
    "old_name_kept",
    "old_name_negated",
    "name_swap",
    "family_swap",
    "number_change",
    "subject_shared",
    "family_shared",
    "content_overlap",
    "new_names",
    "polarity_flip",
    "change_x_subject",
    "swap_x_subject",
    "other_scope_x_subject",
)


@dataclass(frozen=True)
class _Side:
    text: str
    names: frozenset[str]
    numbers: frozenset[str]
    subjects: frozenset[str]
    content: frozenset[str]


@lru_cache(maxsize=2048)
def _side(text: str) -> _Side:
    names = _names(text)
    return _Side(
        text, frozenset(names), frozenset(_numbers(text)), frozenset(_subjects(text, names)),
        frozenset(_content(text, names)),
    )


def features(new_text: str, said: str, category: str, scope: str, candidate: Candidate) -> list[float]:
    """The signals for one (new memory, candidate) pair, in FEATURES order."""
    old = _side(candidate.text)
    spoken = f"{said}\n{new_text}" if said and said.strip() != new_text.strip() else new_text
    new = _side(spoken)
    rule = _side(new_text)
    sim = float(candidate.similarity)
    same_scope = float(candidate.scope == scope)
    shared = old.names & new.names
    negated = any(_negated(spoken, name) for name in old.names)
    kept = any(name in rule.names for name in old.names) and not negated
    added = new.names - old.names
    missing_from_rule = bool(old.names) and not (old.names & rule.names)
    name_swap = bool(added) and (missing_from_rule or negated)
    old_families = _families(old.names)
    gone = {o for o in old.names if o not in rule.names or _negated(spoken, o)}
    # a tool of the same kind comes in while the old one goes: poetry -> uv, TSLint -> ESLint
    family_swap = any(_families([n]) & _families([o]) for n in added for o in gone)
    now = rule.numbers or new.numbers
    number_change = bool(old.numbers) and bool(now) and not (old.numbers <= now)
    subjects = old.subjects & new.subjects
    families = old_families & _families(new.names)
    union = old.content | new.content
    overlap = len(old.content & new.content) / len(union) if union else 0.0
    change = bool(_CHANGE.search(spoken))
    polarity_flip = _negative(candidate.text) != _negative(new_text)
    subject = float(bool(subjects) or bool(shared) or overlap >= 0.25)
    swap = float(name_swap or family_swap or number_change or negated)
    return [
        1.0,
        sim,
        float(sim >= 0.6),
        same_scope,
        float(change),
        float(bool(_CHANGE_WEAK.search(spoken))),
        float(bool(_REFINE.search(said or new_text))),
        float(bool(shared)),
        float(kept),
        float(negated),
        float(name_swap),
        float(family_swap),
        float(number_change),
        float(bool(subjects)),
        float(bool(families)),
        overlap,
        float(bool(added)),
        float(polarity_flip),
        float(change) * subject,
        swap * subject,
        (1.0 - same_scope) * max(subject, float(sim >= 0.45)),
    ]


# --------------------------------------------------------------------------- model

@lru_cache(maxsize=1)
def _model() -> tuple[list[list[float]], list[str]]:
    data = json.loads(WEIGHTS.read_text(encoding="utf-8"))
    if tuple(data["features"]) != FEATURES or tuple(data["classes"]) != CLASSES:
        raise RuntimeError(f"{WEIGHTS.name} does not match this code's features; rerun benchmarks/train_relate.py")
    return data["weights"], data["classes"]


def probabilities(x: list[float], weights: list[list[float]] | None = None) -> dict[str, float]:
    """Class probabilities (softmax of the linear scores) for one feature vector."""
    rows = weights if weights is not None else _model()[0]
    scores = [sum(w * v for w, v in zip(row, x)) for row in rows]
    top = max(scores)
    exps = [math.exp(s - top) for s in scores]
    total = sum(exps)
    return {label: e / total for label, e in zip(CLASSES, exps)}


def _same_rule_again(new_text: str, said: str, x: list[float], candidate: Candidate, scope: str) -> bool:
    """Very close, nothing changed and nothing added: no change words (not even "now"), no name or
    number swapped or negated, no flip between a positive and a negative rule, no new name or number."""
    if candidate.scope != scope or candidate.similarity < DUPLICATE_AT:
        return False
    f = dict(zip(FEATURES, x))
    if f["change"] or f["change_weak"] or f["polarity_flip"]:
        return False
    if f["name_swap"] or f["family_swap"] or f["number_change"] or f["old_name_negated"]:
        return False
    old, rule = _side(candidate.text), _side(new_text)
    return not (rule.names - old.names) and not (rule.numbers - old.numbers)


def relate(
    new_text: str,
    said: str,
    category: str,
    scope: str,
    candidates: list[Candidate],
    *,
    weights: list[list[float]] | None = None,
) -> tuple[str, int | None, float]:
    """(relation, index of the candidate it applies to or None, score). relation is one of
    new, supersedes, refines, relates-to, duplicate. `new_text` is the rule a memory will hold,
    `said` the user's own words (change-of-mind language lives there).

    The score is the model's probability for the chosen relation (for relates-to across scopes,
    that of "not unrelated"; the cosine for a duplicate, and for relates-to and new decided by
    similarity alone). `category` is accepted for callers and not used (see the module's notes).
    `weights` replaces the shipped model (for training and cross-validation only)."""
    if not candidates:
        return "new", None, 0.0
    xs = [features(new_text, said, category, scope, c) for c in candidates]
    probs = [probabilities(x, weights) for x in xs]
    nearest = max(range(len(candidates)), key=lambda i: candidates[i].similarity)

    def top(label: str) -> int | None:
        picks = [i for i, p in enumerate(probs) if max(p, key=p.get) == label]
        if label in ("supersedes", "refines"):  # a supersession or refinement never crosses scopes
            picks = [i for i in picks if candidates[i].scope == scope]
        return max(picks, key=lambda i: probs[i][label]) if picks else None

    if _same_rule_again(new_text, said, xs[nearest], candidates[nearest], scope):
        return "duplicate", nearest, candidates[nearest].similarity
    for label in ("supersedes", "refines"):
        if (i := top(label)) is not None:
            return label, i, probs[i][label]
    # the same subject in the other scope, or a same-subject pair across scopes the model
    # would otherwise call a supersession or refinement: both stay, linked
    across = [
        i for i, p in enumerate(probs)
        if candidates[i].scope != scope and max(p, key=p.get) in ("supersedes", "refines", "other-scope")
    ]
    if across:
        i = max(across, key=lambda i: 1.0 - probs[i]["unrelated"])
        return "relates-to", i, 1.0 - probs[i]["unrelated"]
    if candidates[nearest].similarity >= RELATED_AT:
        return "relates-to", nearest, candidates[nearest].similarity
    return "new", None, candidates[nearest].similarity
