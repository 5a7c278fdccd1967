"""A model behind an HTTP API: OpenAI-compatible chat completions or Anthropic messages.

`classifier_model` names the provider and model: `openai:gpt-4o-mini`,
`anthropic:claude-haiku-4-5`, `ollama:llama3.1` (Ollama's OpenAI-compatible
endpoint), or `openai-compatible:<model>` with `classifier_base_url` (vLLM,
LM Studio, …). The API key is read from the environment variable named by
`classifier_api_key_env` (default OPENAI_API_KEY / ANTHROPIC_API_KEY; none
for Ollama) and never written anywhere.

`ask` sends one system prompt and one user prompt (the caller has redacted it)
and asks for JSON following the caller's schema: OpenAI's `response_format`
json_schema, Anthropic's forced tool call. Requests time out and are retried
with back-off on timeouts, connection errors, 429 and 5xx, as many times as the
caller says; anything else raises `ModelUnavailable`.
"""

from __future__ import annotations

import json
import os
import random
import socket
import time
import urllib.error
import urllib.request
from dataclasses import dataclass

from forgemem.llm import ModelUnavailable

PROVIDERS = {
    # provider: (API kind, default base URL, default key variable)
    "openai": ("openai", "https://api.openai.com/v1", "OPENAI_API_KEY"),
    "openai-compatible": ("openai", "", "OPENAI_API_KEY"),
    "ollama": ("openai", "http://localhost:11434/v1", ""),
    "anthropic": ("anthropic", "https://api.anthropic.com", "ANTHROPIC_API_KEY"),
}
ANTHROPIC_VERSION = "2023-06-01"
MAX_BACKOFF = 8.0


@dataclass(frozen=True)
class Endpoint:
    api: str  # openai | anthropic
    model: str
    base_url: str
    api_key: str | None
    timeout: float

    @property
    def label(self) -> str:
        return f"{self.api}:{self.model}"


def endpoint_from_config(config, timeout: float | None = None) -> Endpoint:
    """The endpoint `classifier_model` and its companion settings describe.

    `timeout`: seconds per request (default `classifier_timeout`).
    """
    from forgemem.errors import ConfigError

    spec = config.classifier_model.strip()
    provider, _, model = spec.partition(":")
    if not model:
        provider, model = "openai-compatible", spec
    if provider not in PROVIDERS:
        raise ConfigError(
            f"classifier_model {spec!r}: unknown provider {provider!r} "
            f"(known: {', '.join(PROVIDERS)}, claude-cli, codex-cli)"
        )
    api, default_base, default_key_env = PROVIDERS[provider]
    base = config.classifier_base_url or default_base
    if not base:
        raise ConfigError(f"classifier_model {spec!r} needs classifier_base_url")
    key_env = config.classifier_api_key_env or default_key_env
    key = os.environ.get(key_env) if key_env else None
    seconds = float(config.classifier_timeout if timeout is None else timeout)
    return Endpoint(api, model, base.rstrip("/"), key, seconds)


@dataclass(frozen=True)
class Question:
    """What to ask: the prompts and the JSON schema the answer must follow.

    `schema_name` names the schema for OpenAI's json_schema; `tool_name` and
    `tool_description` name the tool Anthropic is made to call with it.
    """

    system: str
    prompt: str
    schema: dict
    schema_name: str
    tool_name: str
    tool_description: str
    max_tokens: int = 2048


def ask(endpoint: Endpoint, question: Question, retries: int = 0, backoff: float = 0.5) -> object:
    """The model's JSON answer to `question` (not yet checked against the schema: the caller does).

    `retries`: attempts after the first on timeouts, connection errors, 429 and
    5xx; `backoff`: seconds before the first retry, doubled on each, with
    jitter. Raises ModelUnavailable.
    """
    if endpoint.api == "anthropic":
        url = f"{endpoint.base_url}/v1/messages"
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        if endpoint.api_key:
            headers["x-api-key"] = endpoint.api_key
        body: dict = {
            "model": endpoint.model,
            "max_tokens": question.max_tokens,
            "system": question.system,
            "messages": [{"role": "user", "content": question.prompt}],
            "tools": [
                {
                    "name": question.tool_name,
                    "description": question.tool_description,
                    "input_schema": question.schema,
                }
            ],
            "tool_choice": {"type": "tool", "name": question.tool_name},
        }
    else:
        url = f"{endpoint.base_url}/chat/completions"
        headers = {"Authorization": f"Bearer {endpoint.api_key}"} if endpoint.api_key else {}
        body = {
            "model": endpoint.model,
            "temperature": 0,
            "messages": [
                {"role": "system", "content": question.system},
                {"role": "user", "content": question.prompt},
            ],
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": question.schema_name, "schema": question.schema, "strict": True},
            },
        }
    reply = post_json(url, headers, body, endpoint.timeout, retries, backoff)
    return answer_from_reply(reply, endpoint.api)


def post_json(url: str, headers: dict, body: dict, timeout: float, retries: int = 0, backoff: float = 0.5):
    """POST `body` as JSON and return the JSON reply (see `ask` for the retries); raises ModelUnavailable."""
    data = json.dumps(body).encode("utf-8")
    headers = {"Content-Type": "application/json", "User-Agent": "forgemem", **headers}
    last = ""
    for attempt in range(retries + 1):
        wait = min(MAX_BACKOFF, backoff * 2**attempt) * (0.75 + random.random() / 2)
        request = urllib.request.Request(url, data=data, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                raw = response.read()
            try:
                return json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError):
                raise ModelUnavailable("the reply is not JSON") from None
        except urllib.error.HTTPError as exc:
            last = f"HTTP {exc.code}"
            if exc.code != 429 and exc.code < 500:
                raise ModelUnavailable(last) from None
            retry_after = exc.headers.get("Retry-After") if exc.headers else None
            if retry_after and retry_after.strip().isdigit():
                wait = min(MAX_BACKOFF, float(retry_after))
        except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            last = "timed out" if isinstance(reason, (socket.timeout, TimeoutError)) else f"{reason}"
        if attempt < retries:
            time.sleep(wait)
    raise ModelUnavailable(f"{last} after {retries + 1} attempts" if retries else last)


def answer_from_reply(reply, api: str):
    """The JSON answer inside an API reply (a tool call for Anthropic, message content for OpenAI)."""
    try:
        if api == "anthropic":
            for block in reply["content"]:
                if block.get("type") == "tool_use":
                    return block["input"]
            text = "".join(b.get("text", "") for b in reply["content"] if b.get("type") == "text")
        else:
            text = reply["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError, AttributeError):
        raise ModelUnavailable("the reply has no answer in it") from None
    if not isinstance(text, str):
        raise ModelUnavailable("the reply has no answer in it")
    return json_answer(text)


def json_answer(text: str):
    """The JSON value a model answered as text (a ``` fence around it is allowed)."""
    text = text.strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise ModelUnavailable("the answer is not JSON") from None
