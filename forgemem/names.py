"""Names and subjects in a text: the tool lexicon, names, numbers, subject words.

Capture's relation decision reads them (a new statement replaces a memory about the same subject: `relate`), and so
does the index (a memory naming `uv` is found by "which package manager": `index.database.lexical_text`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

# --------------------------------------------------------------------------- lexicon

#: family | subject | names (aliases as alias=canonical). A family groups tools that
#: replace one another; its subject is what a rule about them is about.
_LEXICON = """
python-deps | deps | pip, pipenv, poetry, uv, conda, mamba, pdm, hatch, pip-tools, requirements.txt, poetry.lock, uv.lock, virtualenv
js-deps | deps | npm, yarn, pnpm, bun, npm workspaces, yarn.lock, pnpm-lock.yaml, package-lock.json, bun.lockb=bun, bun.lock=bun
ios-deps | deps | cocoapods, swift package manager, spm=swift package manager, carthage, podfile
ios-project | build | xcodegen, tuist, project.swift=tuist
jvm-build | build | maven, gradle, sbt, ant, bazel
gradle-dsl | build | kotlin dsl, groovy
python-tests | tests | pytest, unittest, nose, nose2, testcase, unittest.testcase
js-tests | tests | jest, vitest, mocha, jasmine, ava, karma, tap
e2e-tests | tests | cypress, playwright, selenium, puppeteer, webdriverio, testcafe, selenium grid
other-tests | tests | rspec, minitest, junit, testng, xctest, catch2, googletest, gtest, doctest, swift testing, boost.test
python-formatter | format | black, ruff, ruff format, yapf, autopep8
python-linter | format | ruff, ruff check, flake8, pylint, pyflakes, pycodestyle, isort
python-types | format | mypy, pyright, pyre, pytype
js-formatter | format | prettier, biome, dprint
js-linter | format | eslint, biome, standard, tslint, rome, oxlint
other-format | format | rubocop, gofmt, goimports, golangci-lint, rustfmt, clang-format, ktlint, detekt, swiftlint, swiftformat, stylelint
ci | ci | jenkins, jenkinsfile, travis, travis ci, circleci, github actions, gitlab ci, .gitlab-ci.yml, buildkite, drone, teamcity, azure pipelines, bitbucket pipelines, woodpecker, fastlane, bitrise, codemagic, eas build, app center
git-hooks | hooks | pre-commit, husky, lefthook, overcommit
hosting | deploy | heroku, netlify, vercel, render, fly.io, fly, azure app service, app service, azure container apps, container apps, cloudflare pages, cloudflare workers, github pages, app engine, elastic beanstalk, digitalocean, hetzner, kamal, capistrano, railway, firebase hosting, read the docs, aws ecs, ecs, eks, gke, aks, nomad, kubernetes, k8s=kubernetes, lambda, cloud run
object-storage | storage | s3, r2, gcs, azure blob, minio, local disk
database | database | mysql, postgres, postgresql=postgres, sqlite, mongodb, mongo=mongodb, dynamodb, cassandra, clickhouse, mariadb, oracle, sql server, cockroachdb, firestore, supabase, bigquery, snowflake, redshift, timescaledb, influxdb
search | search | elasticsearch, opensearch, meilisearch, algolia, typesense, solr
cache | cache | redis, memcached, varnish, valkey, keydb
broker | jobs | kafka, rabbitmq, rabbit=rabbitmq, nats, sqs, sns, pubsub, kinesis, activemq, redis
python-jobs | jobs | celery, dramatiq, rq, huey, arq
ruby-jobs | jobs | sidekiq, resque, solid_queue, good_job, delayed_job
other-jobs | jobs | bullmq, oban, hangfire, asynq, temporal
bundler | bundle | webpack, vite, parcel, rollup, esbuild, turbopack, create react app, cra=create react app, gulp, grunt, snowpack, rspack, browserify
web-framework | frontend | react, angular, vue, svelte, solid, ember, next.js, nuxt, remix, astro, htmx, jquery, backbone
backend-framework | backend | django, flask, fastapi, rails, express, nestjs, spring, spring boot, laravel, phoenix, gin, echo, actix, axum, chi, fiber, gorilla/mux, httprouter, symfony, cakephp, codeigniter, hono, koa, fastify, hapi, sinatra, hanami, micronaut, quarkus, http4s, tapir, akka http, pekko http, play framework, asp.net core, minimal apis
vue-api | components | options api, composition api, script setup=composition api, <script setup=composition api
react-components | components | class components, function components, functional components=function components
state | state | redux, redux toolkit, zustand, mobx, recoil, jotai, react query, tanstack query, pinia, vuex, xstate
styling | style | sass, scss, less, tailwind, styled-components, emotion, css modules, bootstrap, bulma, vanilla-extract, stylus
go-logging | logging | logrus, zap, zerolog, slog=log/slog, log/slog, glog
jvm-logging | logging | log4j, logback
js-logging | logging | winston, pino, bunyan
python-logging | logging | loguru, structlog, python-json-logger
error-tracking | monitoring | sentry, honeycomb, rollbar, bugsnag, datadog, new relic, airbrake
metrics | monitoring | grafana, prometheus, datadog, new relic, opentelemetry, jaeger, splunk, elk
experiments | experiments | weights & biases, wandb=weights & biases, mlflow, tensorboard, comet, neptune, aim, clearml
iac | infra | terraform, opentofu, pulumi, cloudformation, cdk, crossplane
config-management | infra | ansible, chef, puppet, saltstack, cloud-init
container-registry | deploy | docker hub, dockerhub=docker hub, ghcr, ghcr.io=ghcr, github container registry=ghcr, ecr, amazon ecr=ecr, aws ecr=ecr, gcr, gcr.io=gcr, google container registry=gcr, artifact registry, google artifact registry=artifact registry, acr, azure container registry=acr, quay, quay.io=quay, harbor, gitlab container registry
local-env | local-dev | docker compose, docker-compose=docker compose, podman, vagrant, tilt, kind, minikube, skaffold, devcontainer, devcontainers, nix, k3d
charts | deploy | helm, tiller, kustomize, argocd, flux, helmfile
autoscaling | scaling | cluster-autoscaler, karpenter, keda
tracker | tracker | jira, linear, trello, asana, youtrack, github issues, shortcut, clickup
wiki | docs | confluence, notion, gitbook
docs-site | docs | sphinx, mkdocs, docusaurus, vitepress, hugo, jekyll, read the docs, github pages
editor | editor | vim, neovim, emacs, vs code, vscode=vs code, intellij, intellij idea, pycharm, sublime, sublime text, zed, atom, xcode, android studio, webstorm, helix, goland, rider, cursor, visual studio
os | os | windows, macos, mac=macos, macbook=macos, linux, ubuntu, fedora, arch, debian, wsl, chromebook
shell | shell | bash, zsh, fish, powershell, nushell, oh-my-zsh
python-http | http | requests, httpx, aiohttp, urllib3
js-http | http | axios, got, superagent, ky, ofetch
jvm-http | http | okhttp, retrofit, ktor client, resttemplate, webclient, restclient, feign, openfeign=feign, apache httpclient
js-dates | dates | moment, moment.js=moment, date-fns, dayjs, luxon
python-dates | dates | arrow, pendulum
python-orm | orm | sqlalchemy, peewee, sqlmodel, django orm, tortoise
js-orm | orm | prisma, typeorm, sequelize, knex, kysely, drizzle, mikro-orm
go-orm | orm | gorm, sqlc
other-orm | orm | diesel, activerecord, hibernate, room, ecto, entity framework, dapper, sqlx, sea-orm, ef core=entity framework, efcore=entity framework, nhibernate
migrations | migrations | alembic, flyway, liquibase, goose, atlas, autogenerate, golang-migrate, dbmate, sqitch
api-style | api | rest, graphql, grpc, soap, trpc, json-rpc, websockets
api-spec | api | openapi, swagger, raml
auth | auth | jwt, jwts=jwt, oauth, saml, session tokens, sessions, cookies, keycloak, auth0, cognito, clerk, okta, nextauth, auth.js, lucia, supabase auth, firebase auth, devise
android-ui | ui | jetpack compose, compose, xml layouts, viewbinding, databinding
apple-ui | ui | swiftui, uikit, appkit
cross-platform | ui | flutter, react native, xamarin, ionic, capacitor, electron, tauri, qt
game-engine | engine | unity, unreal, godot
game-architecture | engine | dots, ecs, monobehaviours
render-pipeline | rendering | urp, hdrp, built-in render pipeline, built-in rp=built-in render pipeline, universal render pipeline=urp
godot-tests | tests | gut, gdunit4, gdunit=gdunit4
rtos | firmware | freertos, zephyr, rtems, threadx, embedded linux, arduino, mbed
mcu | firmware | stm32f4, stm32g4, stm32, esp32, nrf52, rp2040, atmega
secrets | secrets | vault, doppler, .env, sops, external secrets, external-secrets=external secrets, externalsecrets=external secrets, sealed secrets, sealed-secrets=sealed secrets, aws secrets manager=secrets manager, azure key vault, key vault=azure key vault, gcp secret manager, secret manager=gcp secret manager, 1password, secrets manager, infisical
flags | flags | launchdarkly, unleash, flagsmith, growthbook, config/flags.yaml
proxy | proxy | nginx, traefik, haproxy, caddy, envoy, apache
push | notifications | firebase, firebase cloud messaging, fcm, onesignal, apns, pusher
dataframes | data | pandas, polars, dask, spark, pyspark, duckdb, vaex, modin, polars lazy frames
optimizer | training | adam, adamw, sgd, lion, adafactor
precision | training | bf16, fp16, fp32, fp8
release | release | release-please, semantic-release, changesets, goreleaser, release-plz, cargo-release, cargo release, standard-version
notebooks | notebooks | nbstripout, jupytext
language | language | english, german, spanish, french, italian, portuguese, japanese, british english, american english
runtime | runtime | node, python, java, ruby, php, go, rust, dotnet, kotlin, swift, typescript, javascript, c#, c++, gdscript, deno
version-file | runtime | .nvmrc, .python-version, .terraform-version, .tool-versions
rust-errors | errors | anyhow, thiserror, color-eyre, eyre, snafu, miette, failure
dependency-injection | di | hilt, dagger, koin, kodein, guice, spring di, dig, wire, inversify, tsyringe
snapshots | tests | insta, syrupy, snapshottest, jest snapshots, approvaltests
ruby-style | format | rubocop, standardrb, standard, rufo
spark-platform | compute | emr, databricks, dataproc, aws glue, synapse, hdinsight
cmake-generator | build | ninja, ninja multi-config, unix makefiles, makefiles, visual studio, xcode
js-validation | validation | zod, valibot, yup, joi, ajv, superstruct, arktype, typebox, io-ts
python-validation | validation | pydantic, marshmallow, cerberus, voluptuous
rails-json | serialization | jbuilder, alba, active_model_serializers, blueprinter, jsonapi-serializer, panko
dart-http | http | dio, chopper
flash-tool | firmware | nrfjprog, nrfutil, openocd, st-flash, esptool, pyocd, probe-rs, jlink
dev-shell | local-dev | direnv, devenv, devbox, flox
class-names | style | clsx, classnames, tailwind-merge
task-runner | build | make, makefile, just, justfile, task, taskfile, taskfile.yml, go-task, mage, rake, invoke, nox, tox, npm scripts
json-libs | serialization | circe, jsoniter-scala, jsoniter=jsoniter-scala, zio-json, play-json, jackson, gson, moshi
go-assert | tests | testify, go-cmp, gomega, ginkgo, quicktest
js-test-utils | tests | testing-library, react testing library, enzyme
js-mocking | mocking | msw, nock, sinon, miragejs
python-mocking | mocking | respx, vcrpy, pytest-mock, unittest.mock
dotnet-tests | tests | xunit, nunit, mstest
php-tests | tests | phpunit, pest, codeception, phpspec
go-pg-driver | database | lib/pq, pgx, pgxpool=pgx, go-pg
base-image | image | alpine, distroless, debian-slim, chainguard, wolfi, scratch, busybox
go-config | config | viper, envconfig, koanf, cleanenv
python-config | config | dynaconf, pydantic-settings, python-decouple, environs, python-dotenv
js-forms | forms | react-hook-form, formik, final-form, tanstack form
dotnet-logging | logging | serilog, nlog, log4net
dotnet-validation | validation | fluentvalidation, dataannotations, data annotations=dataannotations
object-mapping | mapping | automapper, mapster, mapstruct, modelmapper
php-analysis | format | phpstan, psalm, phan, larastan
php-format | format | php-cs-fixer, pint, phpcs
orchestration | orchestration | airflow, dagster, prefect, luigi, argo workflows, kestra
data-transform | data | dbt, sqlmesh, dataform
js-charts | charts | recharts, chart.js, d3, echarts, visx, nivo, highcharts
python-plotting | charts | matplotlib, seaborn, plotly, altair, bokeh, plotnine
ml-framework | ml | pytorch, torch=pytorch, tensorflow, jax, keras, flax
training-loop | ml | pytorch lightning, lightning, accelerate, deepspeed
cpp-build | build | cmake, meson, autotools, premake, scons, xmake
cpp-deps | deps | conan, vcpkg
apple-http | http | alamofire, urlsession
flutter-state | state | riverpod, provider, bloc, getx
payments | payments | stripe, paddle, braintree, adyen, lemon squeezy
email | email | sendgrid, mailgun, postmark, amazon ses, ses, resend, mailjet
analytics | analytics | segment, mixpanel, amplitude, posthog, google analytics, plausible
i18n | i18n | i18next, react-intl, formatjs, lingui, vue-i18n, gettext
key-type | ids | uuid, uuids=uuid, uuidv7=uuid, bigint, bigserial, serial, ulid, ulids=ulid, autoincrement, auto-increment=autoincrement
monorepo | build | nx, turborepo, turbo=turborepo, lerna, rush, pants, moon
python-build | build | setuptools, hatchling, flit, poetry-core, maturin, scikit-build
python-server | server | gunicorn, uvicorn, hypercorn, daphne, waitress
image-build | build | kaniko, buildah, buildkit, jib, ko
graphql-client | api | apollo, apollo client, urql, relay
rust-async | runtime | tokio, async-std, smol
"""

#: subject words: what a rule is about when it names no tool (lemma -> subject)
_SUBJECT_WORDS = {
    "deps": "deps dependency dependencies package packages lockfile lock install installs installed "
    "virtualenv venv venvs environment environments",
    "tests": "test tests testing spec specs suite e2e end-to-end coverage",
    "format": "format formatter formatting formatted lint linter linters linting style quote quotes semicolons line-length line-lengths",
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
    "ids": "pk pks primary key keys id ids identifier identifiers",
    "dates": "date dates datetime time",
    "errors": "error errors error-handling",
    "di": "di injection dependency-injection",
    "api": "api apis endpoint endpoints",
    "auth": "auth authentication login",
    "ui": "ui screen screens layout layouts view views",
    "firmware": "firmware board mcu rtos",
    "secrets": "secret secrets credentials",
    "flags": "flag flags",
    "notifications": "notification notifications push",
    "training": "training optimizer decay weight learning precision",
    "indent": "indent indentation indented tab tabs spaces space",
    "line-length": "line length wrap wrapping characters chars col cols max_width",
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
    unreal mamba conda pip hpa keda kinesis huey rq neptune clearml grafana pydantic make just task invoke
    chi fiber pest scratch provider bloc segment amplitude plausible lightning accelerate rush turbo moon pants apollo
    relay resend passport clerk lucia prefect luigi torch flax pint psalm ko jib flit smol paddle hono d3 altair
    tapir nock harbor quay gut moment yup dig""".split()
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
    # letters of any language: "déployer", "règle" and "Geschäftslogik" are words, not "ployer", "gle", "ftslogik"
    return [w.lower() for w in re.findall(r"[^\W\d_][^\W\d_'-]*(?:['-][^\W\d_]+)*", text)]


def _names(text: str) -> set[str]:
    """Tools, products, versions, paths and code spans named in `text` (canonical, lower case)."""
    found: set[str] = set()
    for span in _CODE.findall(text):
        found.add(span.strip().lower())
    found |= _tools_named(text)
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
    # an import path alias: "its @/ now not ~/"
    found.update(m.group(0) for m in _PATH_ALIAS.finditer(masked))
    return found


def _tools_named(text: str, strict: bool = False) -> set[str]:
    """The lexicon's tools `text` names (canonical); a name that is also an ordinary word only where it is used as a
    name (`_is_a_name`; `strict`: only in code, beside a word of its subject, or after a verb that takes a tool —
    not after "to", nor vouched for by another ordinary word of its family: "I'm off to go swimming", "just make")."""
    matches = list(_LEXICON_RE.finditer(text))
    if not matches:
        return set()
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
    found = set()
    for match in matches:
        written = match.group(0)
        canonical = _ALIAS[written.lower()]
        if written.lower() in _AMBIGUOUS and not (
                _used_as_a_name(text, match, canonical, words, code) if strict
                else _is_a_name(text, match, canonical, families, words, code)):
            continue
        found.add(canonical)
    return found


#: verbs a tool follows when it is named as one ("use uv", "switched to pnpm" is read by its subject words instead)
_TAKES_A_TOOL = set("""use uses using used with via install installed adopt adopted prefer prefers switch switched
    replace replaced migrate migrated run runs""".split())


def _used_as_a_name(text: str, match: re.Match[str], canonical: str, words: set[str], code: str) -> bool:
    before = re.findall(r"[\w']+", text[: match.start()].lower())
    return (match.group(0).lower() in code or bool(before and before[-1] in _TAKES_A_TOOL)
            or any(_subject_of(w) == subject for w in words for _, subject in _FAMILY[canonical]))


_PATH_ALIAS = re.compile(r"(?<![\w/.~@#$])[~@#$][\w-]*/(?![\w/])")


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
        if said := _subject_of(word):
            subjects.add(said)
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


#: a count of things: "mean ± std over 3 seeds", "two approvals"
_COUNT = re.compile(r"(?<![\w.])(\d+|one|two|three|four|five|six|seven|eight|nine|ten)\s+([a-z]{3,})\b", re.I)


def measure_moved(old: str, said: str) -> bool:
    """Whether a measure or a count of the old memory is given another value in the same unit, the old value not said
    again ("sessions in redis, TTL 1h" … "we settled on 8h for sessions"; "timeout 30s" … "lowering it to 10s"; "over 3
    seeds" … "bump it to 5 seeds")."""
    def measures(text: str) -> dict[str, set[str]]:
        found: dict[str, set[str]] = {}
        for m in _NUMBER.finditer(text):
            if m.group(2):
                found.setdefault(m.group(2).lower(), set()).add(m.group(1))
        for m in _COUNT.finditer(text):
            found.setdefault(_stem(m.group(2).lower()), set()).add(m.group(1).lower())
        return found

    before, now = measures(old), measures(said)
    return any(not before[unit] & now[unit] for unit in before.keys() & now.keys())


# --------------------------------------------------------------------------- what a question calls them

#: subject -> the words a question uses for what the tools of that subject are for: "which package manager" asks for
#: the memory that says "use uv, not poetry", which names no package manager in those words (`asked_as`)
_ASKED_AS = {
    "deps": "package manager packages dependencies dependency install lockfile",
    "tests": "tests testing test runner", "format": "formatter formatting linter lint linting code style",
    "ci": "ci pipeline", "hooks": "git hooks", "deploy": "deploy deployment hosting", "database": "database db",
    "storage": "storage uploads files", "cache": "cache caching", "jobs": "background jobs queue workers",
    "bundle": "bundler bundling", "state": "state management", "style": "css styling", "logging": "logging logs",
    "monitoring": "monitoring errors alerting", "orm": "orm database queries", "migrations": "database migrations",
    "http": "http client requests", "api": "api", "auth": "auth authentication login", "secrets": "secrets",
    "build": "build system", "validation": "validation", "mocking": "mocking mocks", "i18n": "translations i18n",
    "email": "email", "payments": "payments billing", "analytics": "analytics", "search": "search",
    "docs": "documentation docs", "config": "configuration config settings", "dates": "dates time",
    "serialization": "serialization", "errors": "error handling", "charts": "charts plots", "notebooks": "notebooks",
    "components": "ui components", "ui": "ui framework", "infra": "infrastructure", "flags": "feature flags",
    "notifications": "notifications", "release": "releases versioning", "orchestration": "orchestration pipelines",
    "experiments": "experiment tracking", "training": "training", "editor": "editor", "shell": "shell",
}


def asked_as(text: str) -> str:
    """The words for what the tools `text` names are for ("uv" -> "package manager packages dependencies …"), each
    once, in the lexicon's order; "" when it names none (a name that is also an ordinary word counts only where the
    text uses it as one: `_names`)."""
    subjects = {subject for name in _tools_named(text, strict=True) for _, subject in _FAMILY[name]}
    words = (w for subject in _ASKED_AS if subject in subjects for w in _ASKED_AS[subject].split())
    return " ".join(dict.fromkeys(words))
