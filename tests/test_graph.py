"""The graph of typed edges: heads, history, forks, cycles, conflicts, neighbours."""

from __future__ import annotations

from forgemem.store.graph import MemoryGraph

from .conftest import make_memory


def chain(*bodies):
    """Memories v1..vn, each superseding the one before."""
    result = []
    for i, body in enumerate(bodies):
        result.append(
            make_memory(body=body, version=i + 1, supersedes=(result[-1].id,) if result else ())
        )
    return result


def test_heads_and_history_of_a_chain():
    v1, v2, v3 = chain("one", "two", "three")
    other = make_memory(body="unrelated")
    g = MemoryGraph([v3, other, v1, v2])
    assert {m.id for m in g.heads()} == {v3.id, other.id}
    for m in (v1, v2, v3):
        assert g.head_of(m.id) == [v3.id]
        assert [x.id for x in g.history(m.id)] == [v1.id, v2.id, v3.id]
    assert g.chains() == [[v1, v2, v3]]


def test_merge_history_includes_both_branches():
    a, b = make_memory(body="a"), make_memory(body="b")
    merged = make_memory(body="a and b", version=2, supersedes=(a.id, b.id))
    g = MemoryGraph([a, b, merged])
    assert g.head_of(a.id) == g.head_of(b.id) == [merged.id]
    assert {m.id for m in g.history(a.id)} == {a.id, b.id, merged.id}
    assert g.forks() == {}


def test_fork_is_found_and_a_merge_resolves_it():
    old = make_memory(body="old")
    left = make_memory(body="left", version=2, supersedes=old.id)
    right = make_memory(body="right", version=2, supersedes=old.id)
    g = MemoryGraph([old, left, right])
    assert g.forks() == {old.id: sorted([left.id, right.id])}
    assert g.head_of(old.id) == sorted([left.id, right.id])
    merged = make_memory(body="merged", version=3, supersedes=(left.id, right.id))
    assert MemoryGraph([old, left, right, merged]).forks() == {}


def test_cycles_and_dangling_edges():
    a, b = make_memory(body="a"), make_memory(body="b")
    a.supersedes, b.supersedes = (b.id,), (a.id,)
    missing = "mem_00000000-0000-4000-8000-0000000000ff"
    c = make_memory(body="c", related=[(missing, "refines")])
    g = MemoryGraph([a, b, c])
    assert g.cycles() == [sorted([a.id, b.id])]
    assert [(e.source, e.target, e.type) for e in g.dangling] == [(c.id, missing, "refines")]
    # a cycle has no head, and walking it terminates
    assert g.head_of(a.id) == []
    assert {m.id for m in g.history(a.id)} == {a.id}


def test_contradictions_are_unresolved_until_a_new_version_settles_them():
    a = make_memory(body="admin pages use HTMX")
    b = make_memory(body="admin pages use React", related=[(a.id, "contradicts")])
    g = MemoryGraph([a, b])
    assert [(e.source, e.target) for e in g.contradictions()] == [(b.id, a.id)]
    settled = make_memory(body="admin pages: React from now on", version=2, supersedes=(a.id,))
    g = MemoryGraph([a, b, settled])
    assert g.contradictions() == []
    assert len(g.contradictions(unresolved_only=False)) == 1


def test_neighbours_by_hops_and_type_with_paths():
    a = make_memory(body="a")
    b = make_memory(body="b", related=[(a.id, "refines")])
    c = make_memory(body="c", related=[(b.id, "relates-to")])
    d = make_memory(body="d", related=[(c.id, "contradicts")])
    g = MemoryGraph([a, b, c, d])
    one = g.neighbours(a.id, hops=1)
    assert set(one) == {b.id}
    assert one[b.id][0].reverse and one[b.id][0].type == "refines"
    two = g.neighbours(a.id, hops=2)
    assert set(two) == {b.id, c.id}
    assert [s.type for s in two[c.id]] == ["refines", "relates-to"]
    assert set(g.neighbours(a.id, hops=3)) == {b.id, c.id, d.id}
    assert set(g.neighbours(a.id, hops=3, types=["refines"])) == {b.id}
    assert g.neighbours(a.id, hops=0) == {}
