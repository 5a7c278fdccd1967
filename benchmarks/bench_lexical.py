"""What a memory's lexical row costs to make, with and without the words for what its tools are for.

    python benchmarks/bench_lexical.py

`index.database.lexical_text` adds to a memory's FTS5 row the words a question uses for what the tools it names
are for (`names.asked_as`: "use uv, not poetry" gets "package manager … dependencies install"). That reads the tool
lexicon over every memory the index writes. This times, per memory, over the seed memories of every labelled
capture set (tests/fixtures/capture_v2_*.yaml) and, when ../shared/eval/locomo/ is there, LoCoMo's turns, in the
same run: the row without those words (the text and its camelCase parts, as before), `asked_as` alone, and the
whole row. Median of 5 runs. It also prints how many of the memories get words.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from forgemem.index import database  # noqa: E402
from forgemem.names import asked_as  # noqa: E402
from forgemem.store.model import Memory  # noqa: E402

LOCOMO = ROOT.parent / "shared" / "eval" / "locomo" / "locomo_dev.json"


def texts() -> dict[str, list[str]]:
    seeds = [str(item["text"]) for path in sorted((ROOT / "tests" / "fixtures").glob("capture_v2_*.yaml"))
             for case in yaml.safe_load(path.read_text(encoding="utf-8")) for item in case.get("existing") or []]
    found = {"seed memories of the labelled capture sets": seeds}
    if LOCOMO.is_file():
        turns = [turn["text"] for conversation in json.loads(LOCOMO.read_text(encoding="utf-8"))
                 for key, session in conversation["conversation"].items()
                 if key.startswith("session_") and isinstance(session, list) for turn in session]
        found["LoCoMo turns"] = turns
    return found


def per_memory(make, memories: list[Memory]) -> float:
    runs = []
    for _ in range(5):
        start = time.perf_counter()
        for memory in memories:
            make(memory)
        runs.append((time.perf_counter() - start) / len(memories))
    return 1e6 * statistics.median(runs)


def without_words(memory: Memory) -> str:
    text = database.embed_text(memory)
    parts = [" ".join(database._CAMEL_PART.findall(name)) for name in dict.fromkeys(database._CAMEL.findall(text))]
    return f"{text}\n{' '.join(parts)}" if parts else text


def main() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    for name, bodies in texts().items():
        memories = [Memory(id=f"mem_{i:08x}-0000-4000-8000-000000000000", body=body, scope="repo",
                           category="project-conventions", created_at=now, updated_at=now)
                    for i, body in enumerate(bodies)]
        with_words = sum(1 for m in memories if asked_as(m.body))
        print(f"{name}: {len(memories)} memories, {with_words} of them get words ({with_words / len(memories):.0%})")
        print(f"  row without the words (baseline)  {per_memory(without_words, memories):7.1f} µs per memory")
        print(f"  asked_as alone                    {per_memory(lambda m: asked_as(m.body), memories):7.1f} µs")
        print(f"  the whole row (lexical_text)      {per_memory(database.lexical_text, memories):7.1f} µs")


if __name__ == "__main__":
    main()
