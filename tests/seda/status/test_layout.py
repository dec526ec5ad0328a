"""The stage graph's layered layout: boxes apart, labels clear of boxes, edges around boxes,
crossings reduced, cycles drawn."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given, settings
from hypothesis import strategies as st

from seda.status.layout import Layout, layout, point

APPS = ["haboob.app0:/app", "haboob.app1:/api", "haboob.app2:/admin", "haboob.app3:/bad"]
#: Haboob's graph with four applications and the workers' status sharing, as it was while
#: routing was a stage of its own (haboob.recv): 15 stages, cycles (responses go back to
#: http), long edges and a self-loop. A layout case, kept for its shape.
STAGES = [*APPS, "haboob.status", "haboob.status.share", "haboob.close", "haboob.miss",
          "haboob.cache", "haboob.recv", "haboob.log", "http", "seda.io.read", "seda.io.write",
          "seda.io.listen"]
EDGES = [*((a, "http") for a in APPS), *(("haboob.recv", a) for a in APPS),
         ("haboob.cache", "haboob.miss"), ("haboob.miss", "haboob.cache"),
         ("haboob.miss", "http"), ("haboob.recv", "haboob.cache"), ("haboob.recv", "haboob.status"),
         ("haboob.status", "haboob.log"), ("haboob.status", "seda.io.write"),
         ("haboob.status", "haboob.status.share"), ("haboob.status.share", "haboob.status"),
         ("http", "haboob.log"), ("http", "haboob.recv"), ("http", "seda.io.write"),
         ("seda.io.listen", "http"), ("seda.io.read", "http"), ("seda.io.write", "haboob.close"),
         ("seda.io.write", "http"), ("http", "http")]
LABEL = (28.0, 15.0)


def sizes(names):
    return {n: (len(n) * 7.44 + 20, 36.0) for n in names}


def check_clean(drawn: Layout, edges) -> None:
    """What 'reads cleanly' means, checked: no two boxes overlap, no label is over a box or
    another label, no edge passes through a box, and every edge runs from its source's box to
    its destination's."""
    boxes = list(drawn.boxes.items())
    for k, (a, box) in enumerate(boxes):
        for b, other in boxes[k + 1:]:
            assert box.overlap(other) == 0, (a, b)
    labels = [r.label for r in drawn.routes]
    for k, label in enumerate(labels):
        assert all(label.overlap(box) == 0 for box in drawn.boxes.values()), label
        assert all(label.overlap(other) == 0 for other in labels[k + 1:]), label
    assert sorted((r.src, r.dst) for r in drawn.routes) == sorted(edges)
    for route in drawn.routes:
        for curve in route.curves:
            for t in range(51):
                p = point(curve, t / 50)
                assert not any(inside(box, p) for box in drawn.boxes.values()), (route, p)
        src, dst = drawn.boxes[route.src], drawn.boxes[route.dst]
        assert on_border(src, route.curves[0][0]) and on_border(dst, route.curves[-1][3])


def inside(box, p) -> bool:
    """Strictly: edges end on a box's border."""
    return box.x < p[0] < box.x + box.w and box.y < p[1] < box.y + box.h


def crossings(drawn: Layout) -> int:
    """Pairs of curves of different edges that meet, counted on the drawing itself: each curve
    a polyline of 24 segments, compared when their bounding boxes meet."""
    def polyline(curve):
        return [point(curve, t / 24) for t in range(25)]

    def bounds(line):
        xs, ys = [p[0] for p in line], [p[1] for p in line]
        return min(xs), min(ys), max(xs), max(ys)

    def side(a, b, c):
        return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])

    def meet(p, q, r, s):
        return side(p, q, r) * side(p, q, s) <= 0 and side(r, s, p) * side(r, s, q) <= 0

    lines = [(k, line, bounds(line)) for k, route in enumerate(drawn.routes)
             for line in map(polyline, route.curves)]
    count = 0
    for i, (a, first, (ax0, ay0, ax1, ay1)) in enumerate(lines):
        for b, second, (bx0, by0, bx1, by1) in lines[i + 1:]:
            if a != b and ax0 <= bx1 and bx0 <= ax1 and ay0 <= by1 and by0 <= ay1:
                count += any(meet(p, q, r, s) for p, q in pairwise(first)
                             for r, s in pairwise(second))
    return count


def on_border(box, p) -> bool:
    x, y = p
    e = 1e-6
    inside_x, inside_y = box.x - e <= x <= box.x + box.w + e, box.y - e <= y <= box.y + box.h + e
    return ((inside_x and (abs(y - box.y) < e or abs(y - box.y - box.h) < e))
            or (inside_y and (abs(x - box.x) < e or abs(x - box.x - box.w) < e)))


def test_a_fifteen_stage_graph_reads_cleanly():
    drawn = layout(sizes(STAGES), [(s, d, LABEL) for s, d in EDGES])
    check_clean(drawn, EDGES)
    boxes = drawn.boxes
    assert boxes["seda.io.read"].y < boxes["http"].y < boxes["haboob.recv"].y \
        < boxes["haboob.cache"].y < boxes["haboob.miss"].y        # sources on top, in order
    naive = layout(sizes(STAGES), [(s, d, LABEL) for s, d in EDGES], sweeps=0)
    assert crossings(drawn) <= 3 < crossings(naive)


def test_barycenter_untangles_a_known_graph():
    # in the order the search finds them, c -> e crosses both edges into d; b, a, c over d, e
    # crosses nothing
    edges = [("c", "e", LABEL), ("a", "e", LABEL), ("a", "d", LABEL), ("b", "d", LABEL)]
    assert crossings(layout(sizes("abcde"), edges, sweeps=0)) == 2
    drawn = layout(sizes("abcde"), edges)
    assert crossings(drawn) == 0
    assert [n for n, _ in sorted(drawn.boxes.items(), key=lambda b: (b[1].y, b[1].x))] == [
        "b", "a", "c", "d", "e"]


def test_a_cycle_is_drawn_with_its_back_edge_pointing_up():
    edges = [("a", "b"), ("b", "c"), ("c", "a")]
    drawn = layout(sizes("abc"), [(s, d, LABEL) for s, d in edges])
    check_clean(drawn, edges)
    a, b, c = (drawn.boxes[n] for n in "abc")
    assert a.y < b.y < c.y
    back = next(r for r in drawn.routes if r.src == "c")
    assert back.curves[-1][3][1] == a.y + a.h          # into a's bottom, from below


def test_a_long_edge_goes_around_the_boxes_between():
    edges = [("a", "b"), ("b", "c"), ("c", "d"), ("a", "d")]
    drawn = layout(sizes("abcd"), [(s, d, LABEL) for s, d in edges])
    check_clean(drawn, edges)
    long = next(r for r in drawn.routes if (r.src, r.dst) == ("a", "d"))
    assert len(long.curves) == 5                       # three gaps, two lanes


def test_stages_without_edges_wrap_into_rows():
    names = [f"stage{i}" for i in range(14)]
    drawn = layout(sizes(names), [])
    check_clean(drawn, [])
    assert len({box.y for box in drawn.boxes.values()}) == 3


def test_a_self_loop_and_edges_to_unknown_stages():
    drawn = layout(sizes(["a", "b"]), [("a", "a", LABEL), ("a", "b", LABEL),
                                       ("a", "gone", LABEL)])
    check_clean(drawn, [("a", "a"), ("a", "b")])
    loop = next(r for r in drawn.routes if r.src == r.dst)
    assert loop.label.x > drawn.boxes["a"].x + drawn.boxes["a"].w
    assert [r.index for r in drawn.routes] == [0, 1]


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 15).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)),
                         max_size=2 * n, unique=True))))
def test_any_graph_reads_cleanly(graph):
    n, pairs = graph
    names = [f"stage.{i}" * (1 + i % 3) for i in range(n)]
    edges = [(names[s], names[d]) for s, d in pairs]
    check_clean(layout(sizes(names), [(s, d, LABEL) for s, d in edges]), edges)
