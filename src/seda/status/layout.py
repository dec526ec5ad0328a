"""A layered drawing of a directed graph (Sugiyama, Tagawa and Toda, 1981), for the stage graph
on /_seda/. A stage graph has cycles (responses flow back to the HTTP stage) and a dozen or
more stages; boxes placed in plain columns cross arrows and hide labels.

1. Cycles: the edges that close a cycle in a depth-first search from the sources are reversed.
2. Layers: each node goes one layer below the longest path that reaches it.
3. An edge that spans layers gets a dummy node in each layer between, its lane past the boxes.
4. Order in each layer: barycenter sweeps down and up; the order with fewest crossings wins.
5. Positions: each node as near the mean of its neighbours as order and spacing allow (a
   weighted isotonic regression, exact in one pass; dummies weigh more, so long edges run
   straight).
6. Edges are curves in the gaps between layers and straight lines down their dummy lanes, so
   none passes through a box; each label sits on its edge in a gap, where no box is, clear of
   the labels placed before it.

Top to bottom: stage names are wide, so layers are rows. Pure geometry; ``page`` draws it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

Point = tuple[float, float]
Curve = tuple[Point, Point, Point, Point]      # a cubic Bézier: start, two controls, end
Size = tuple[float, float]
Ports = dict[tuple[int, str], float]     # (edge, node) -> x where the edge meets the node

MARGIN = 12.0
GAP_X = 28.0            # between two boxes of a layer
LANE = 10.0             # the width of a dummy node: a long edge's lane through a layer
GAP_Y = 64.0            # between layers: room for curves and labels
LOOP = 24.0             # how far a self-loop reaches right of its box
ROW = 6                 # stages with no edges yet, laid out at most this many to a row
SWEEPS = 24             # barycenter sweeps (alternately down and up)
PLACEMENTS = 12         # position sweeps
DUMMY_WEIGHT = 4.0      # how much straighter a long edge is kept than a box is centred
GROWTH = 16             # times a gap may grow to make room for its labels
_CLEAR = 10.0           # a label keeps this far from the gap's edges (arrowheads are there)


@dataclass(frozen=True)
class Rect:
    x: float
    y: float
    w: float
    h: float

    def overlap(self, other: Rect) -> float:
        """The area the two rectangles share (0 if they only touch)."""
        w = min(self.x + self.w, other.x + other.w) - max(self.x, other.x)
        h = min(self.y + self.h, other.y + other.h) - max(self.y, other.y)
        return w * h if w > 0 and h > 0 else 0.0


@dataclass(frozen=True)
class Route:
    """An input edge as drawn: curves from its source's box to its destination's, in that
    direction (the arrowhead goes at the end), and the rectangle for its label."""

    index: int          # its position in the edges given to ``layout``
    src: str
    dst: str
    curves: list[Curve]
    label: Rect


@dataclass(frozen=True)
class Layout:
    width: float
    height: float
    boxes: dict[str, Rect]
    routes: list[Route]


def layout(sizes: dict[str, Size], edges: Sequence[tuple[str, str, Size]], *,
           sweeps: int = SWEEPS) -> Layout:
    """Boxes of ``sizes`` (name -> width, height, in input order) and ``edges`` (source,
    destination, the size of its label) laid out. Edges to unknown nodes are left out; at
    most one self-loop per node is expected. ``sweeps=0`` keeps the order in which the
    depth-first search found the nodes."""
    names = list(sizes)
    links = [(i, s, d) for i, (s, d, _) in enumerate(edges) if s in sizes and d in sizes]
    loops = {s: i for i, s, d in links if s == d}
    links = [link for link in links if link[1] != link[2]]
    back, found = _back_edges(names, [(s, d) for _, s, d in links])
    down = [(i, d, s, True) if (s, d) in back else (i, s, d, False) for i, s, d in links]
    rank = _longest_path(found, [(u, v) for _, u, v, _ in down])
    connected = {n for _, u, v, _ in down for n in (u, v)}
    last = max((rank[n] for n in connected), default=-1)
    for k, name in enumerate(n for n in names if n not in connected):
        rank[name] = last + 1 + k // ROW
    rows: list[list[str]] = [[] for _ in range(max(rank.values(), default=-1) + 1)]
    for name in sorted(found, key=lambda n: n not in connected):
        rows[rank[name]].append(name)

    chains: list[tuple[int, bool, list[str]]] = []     # (edge, reversed, nodes top to bottom)
    for i, u, v, flipped in down:
        chain = [u]
        for r in range(rank[u] + 1, rank[v]):
            dummy = f"\0{i}:{r}"                        # no stage name starts with NUL
            rank[dummy] = r
            rows[r].append(dummy)
            chain.append(dummy)
        chains.append((i, flipped, [*chain, v]))
    above: dict[str, list[str]] = {n: [] for row in rows for n in row}
    below: dict[str, list[str]] = {n: [] for row in rows for n in row}
    for _, _, chain in chains:
        for a, b in pairwise(chain):
            below[a].append(b)
            above[b].append(a)

    rows = _order(rows, above, below, sweeps)
    width = {n: (sizes[n][0] + (LOOP + 4 + edges[loops[n]][2][0] + 2 if n in loops else 0))
             if n in sizes else LANE for n in above}
    x = _place(rows, width, above, below)
    left = min((x[n] - width[n] / 2 for n in x), default=0.0)
    x = {n: v - left + MARGIN for n, v in x.items()}

    grow = [0.0] * len(rows)            # room added below a row whose labels did not fit
    for _ in range(GROWTH):
        tops, bottoms, y = [], [], MARGIN
        for row, more in zip(rows, grow, strict=True):
            tops.append(y)              # every row has a box: a dummy's lies between two
            bottoms.append(y + max(sizes[n][1] for n in row if n in sizes))
            y = bottoms[-1] + GAP_Y + more
        boxes = {n: Rect(x[n] - width[n] / 2, tops[rank[n]], *sizes[n]) for n in names}
        routes, crowded = _route(chains, edges, boxes, x, rank, tops, bottoms)
        for r in crowded:
            grow[r] += max(size[1] for _, _, size in edges) + 2
        if not crowded:
            break
    routes += [_self_loop(i, name, boxes[name], edges[i][2]) for name, i in loops.items()]
    routes.sort(key=lambda r: r.index)

    corners = [(r.x + r.w, r.y + r.h) for r in (*boxes.values(), *(r.label for r in routes))]
    corners += [p for r in routes for curve in r.curves for p in curve]   # a curve's hull
    return Layout(max((cx for cx, _ in corners), default=0.0) + MARGIN,
                  max((cy for _, cy in corners), default=0.0) + MARGIN, boxes, routes)


def point(curve: Curve, t: float) -> Point:
    """The point at parameter ``t`` (0..1) of a cubic Bézier."""
    (ax, ay), (bx, by), (cx, cy), (dx, dy) = curve
    s = 1 - t
    a, b, c, d = s * s * s, 3 * s * s * t, 3 * s * t * t, t * t * t
    return a * ax + b * bx + c * cx + d * dx, a * ay + b * by + c * cy + d * dy


def _back_edges(names: list[str], pairs: list[tuple[str, str]]
                ) -> tuple[set[tuple[str, str]], list[str]]:
    """The edges that close a cycle in a depth-first search begun at the sources (then at
    whatever is left, in input order), and the order in which the search found the nodes.
    Reversing them leaves no cycle."""
    succ: dict[str, list[str]] = {n: [] for n in names}
    fed = set()
    for s, d in pairs:
        succ[s].append(d)
        fed.add(d)
    state: dict[str, bool] = {}           # True while on the search path, False when finished
    back, found = set(), []
    for root in sorted(names, key=lambda n: n in fed):
        if root in state:
            continue
        state[root] = True
        found.append(root)
        path = [(root, iter(succ[root]))]
        while path:
            node, todo = path[-1]
            for nxt in todo:
                if nxt not in state:
                    state[nxt] = True
                    found.append(nxt)
                    path.append((nxt, iter(succ[nxt])))
                    break
                if state[nxt]:
                    back.add((node, nxt))
            else:
                state[node] = False
                path.pop()
    return back, found


def _longest_path(names: list[str], pairs: list[tuple[str, str]]) -> dict[str, int]:
    """Each node's layer: one more than its deepest predecessor's (Kahn's topological order;
    ``pairs`` has no cycle)."""
    succ: dict[str, list[str]] = {n: [] for n in names}
    waiting = dict.fromkeys(names, 0)
    for u, v in pairs:
        succ[u].append(v)
        waiting[v] += 1
    rank = dict.fromkeys(names, 0)
    ready = [n for n in names if waiting[n] == 0]
    for u in ready:                       # grows as the loop runs: every node once
        for v in succ[u]:
            rank[v] = max(rank[v], rank[u] + 1)
            waiting[v] -= 1
            if waiting[v] == 0:
                ready.append(v)
    return rank


def _order(rows: list[list[str]], above: dict[str, list[str]], below: dict[str, list[str]],
           sweeps: int) -> list[list[str]]:
    """Barycenter sweeps, alternately down (by the row above) and up (by the row below);
    the order with the fewest crossings seen."""
    def total(rs: list[list[str]]) -> int:
        return sum(_row_crossings(a, b, below) for a, b in pairwise(rs))

    rows = [row[:] for row in rows]
    best, fewest = [row[:] for row in rows], total(rows)
    for sweep in range(sweeps):
        if fewest == 0:
            break
        if sweep % 2 == 0:
            for i in range(1, len(rows)):
                rows[i] = _by_barycenter(rows[i], rows[i - 1], above)
        else:
            for i in range(len(rows) - 2, -1, -1):
                rows[i] = _by_barycenter(rows[i], rows[i + 1], below)
        now = total(rows)
        if now < fewest:
            best, fewest = [row[:] for row in rows], now
    return best


def _by_barycenter(row: list[str], fixed: list[str], links: dict[str, list[str]]) -> list[str]:
    """``row`` sorted by the mean position of each node's neighbours in ``fixed``; nodes
    with no neighbour there keep their places."""
    pos = {n: k for k, n in enumerate(fixed)}
    movable = sorted((n for n in row if links[n]),
                     key=lambda n: sum(pos[m] for m in links[n]) / len(links[n]))
    it = iter(movable)
    return [next(it) if links[n] else n for n in row]


def _row_crossings(upper: list[str], lower: list[str], below: dict[str, list[str]]) -> int:
    pos = {n: k for k, n in enumerate(lower)}
    return _inversions([(k, pos[m]) for k, n in enumerate(upper) for m in below[n]])


def _inversions(pairs: list[tuple[float, float]]) -> int:
    """Pairs of segments whose ends are in strictly opposite orders (small graphs: n²)."""
    return sum(1 for k, (a0, a1) in enumerate(pairs) for b0, b1 in pairs[k + 1:]
               if (a0 - b0) * (a1 - b1) < 0)


def _place(rows: list[list[str]], width: dict[str, float], above: dict[str, list[str]],
           below: dict[str, list[str]]) -> dict[str, float]:
    """Centres: rows packed, then swept down, up, and finally both ways, each node pulled
    to the mean of its neighbours' centres as far as order and spacing let it."""
    x: dict[str, float] = {}
    for row in rows:
        edge = 0.0
        for k, n in enumerate(row):
            edge += _gap(row[k - 1], n) if k else 0.0
            x[n] = edge + width[n] / 2
            edge += width[n]
    for sweep in range(PLACEMENTS + 1):
        final = sweep == PLACEMENTS
        order = rows if sweep % 2 == 0 else rows[::-1]
        for row in order:
            targets = []
            for n in row:
                near = (above[n] + below[n] if final else
                        above[n] if sweep % 2 == 0 else below[n])
                targets.append(sum(x[m] for m in near) / len(near) if near else x[n])
            weights = [DUMMY_WEIGHT if n.startswith("\0") else 1.0 for n in row]
            spacing = [(width[a] + width[b]) / 2 + _gap(a, b)
                       for a, b in pairwise(row)]
            x.update(zip(row, _isotonic(targets, weights, spacing), strict=True))
    return x


def _gap(a: str, b: str) -> float:
    """Space between neighbours: a box's width apart, lanes closer."""
    return GAP_X if not (a.startswith("\0") or b.startswith("\0")) else GAP_X / 2


def _isotonic(targets: list[float], weights: list[float], spacing: list[float]) -> list[float]:
    """Positions in order, each at least ``spacing`` after the one before, as close as can be
    to ``targets`` (least weighted squares): shifted by the spacing, this is isotonic
    regression, solved by pooling adjacent violators."""
    offsets = [0.0]
    for s in spacing:
        offsets.append(offsets[-1] + s)
    blocks: list[list[float]] = []        # [weighted sum, weight, members]
    for t, o, w in zip(targets, offsets, weights, strict=True):
        blocks.append([w * (t - o), w, 1])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            s, w2, m = blocks.pop()
            blocks[-1][0] += s
            blocks[-1][1] += w2
            blocks[-1][2] += m
    out = []
    for s, w, m in blocks:
        out += [s / w] * int(m)
    return [z + o for z, o in zip(out, offsets, strict=True)]


def _ports(chains: list[tuple[int, bool, list[str]]], boxes: dict[str, Rect],
           x: dict[str, float]) -> tuple[Ports, Ports]:
    """Where each edge leaves a box's bottom and enters a box's top: spread along the side in
    the order of the nodes at the other ends, so edges of one box do not cross at it."""
    leaving: dict[str, list[tuple[float, int]]] = {}
    entering: dict[str, list[tuple[float, int]]] = {}
    for i, _, chain in chains:
        for a, b in pairwise(chain):
            leaving.setdefault(a, []).append((x[b], i))
            entering.setdefault(b, []).append((x[a], i))
    ports: tuple[Ports, Ports] = ({}, {})
    for side, ends in zip(ports, (leaving, entering), strict=True):
        for n, others in ends.items():
            box = boxes.get(n)
            for k, (_, i) in enumerate(sorted(others)):
                side[i, n] = x[n] if box is None else box.x + box.w * (k + 1) / (len(others) + 1)
    return ports


def _route(chains: list[tuple[int, bool, list[str]]], edges: Sequence[tuple[str, str, Size]],
           boxes: dict[str, Rect], x: dict[str, float], rank: dict[str, int],
           tops: list[float], bottoms: list[float]) -> tuple[list[Route], set[int]]:
    """Each edge's curves and label, and the gaps (by the row above them) where a label
    found no spot clear of the others."""
    out_port, in_port = _ports(chains, boxes, x)
    routes: list[Route] = []
    placed: list[Rect] = []
    crowded: set[int] = set()
    for i, flipped, chain in chains:
        curves: list[Curve] = []
        gaps: list[tuple[int, int]] = []          # (curve, the row above it)
        u = chain[0]
        start = (out_port[i, u], boxes[u].y + boxes[u].h)
        if start[1] < bottoms[rank[u]]:           # a box shorter than its row: down to its foot
            curves.append(_line(start, (start[0], bottoms[rank[u]])))
            start = curves[-1][3]
        for a, n in pairwise(chain):
            end = (in_port[i, n], tops[rank[n]])
            gaps.append((len(curves), rank[a]))
            curves.append(_curve(start, end))
            if n not in boxes:                    # a dummy: straight down its lane
                curves.append(_line(end, (end[0], bottoms[rank[n]])))
                start = curves[-1][3]
        at, row = gaps[-1] if flipped else gaps[0]     # the gap next to the real source
        label = _label_spot(curves[at], edges[i][2], placed)
        if any(label.overlap(other) for other in placed):
            crowded.add(row)
        placed.append(label)
        if flipped:
            curves = [(d, c2, c1, a) for a, c1, c2, d in reversed(curves)]
        routes.append(Route(i, edges[i][0], edges[i][1], curves, label))
    return routes, crowded


def _curve(start: Point, end: Point) -> Curve:
    """An S-curve from one layer down to the next: it leaves and arrives vertically."""
    half = (end[1] - start[1]) / 2
    return start, (start[0], start[1] + half), (end[0], end[1] - half), end


def _line(start: Point, end: Point) -> Curve:
    return start, start, end, end


def _x_at(curve: Curve, y: float) -> float:
    """Where the curve is at height ``y`` (it only ever goes down: bisection)."""
    lo, hi = 0.0, 1.0
    for _ in range(24):                   # to a millionth of the curve
        mid = (lo + hi) / 2
        if point(curve, mid)[1] < y:
            lo = mid
        else:
            hi = mid
    return point(curve, lo)[0]


def _label_spot(curve: Curve, size: Size, placed: list[Rect]) -> Rect:
    """The label's rectangle, centred on the curve in the gap it crosses: at mid-gap, else a
    label's height above or below, and so on, the first spot that overlaps no label placed
    before; if none is free, the one that overlaps least."""
    w, h = size
    top, bottom = curve[0][1], curve[3][1]
    mid, room = (top + bottom) / 2, (bottom - top) / 2 - h / 2 - _CLEAR
    heights = [mid]
    for k in range(1, int(room // (h + 2)) + 1):
        heights += [mid - k * (h + 2), mid + k * (h + 2)]
    best: tuple[float, Rect] | None = None
    for y in heights:
        x = _x_at(curve, y)
        rect = Rect(x - w / 2, y - h / 2, w, h)
        clash = sum(rect.overlap(other) for other in placed)
        if clash == 0:
            return rect
        if best is None or clash < best[0]:
            best = (clash, rect)
    assert best is not None
    return best[1]


def _self_loop(i: int, name: str, box: Rect, size: Size) -> Route:
    """A loop out of the box's right side and back, its label beyond it, in the room
    ``layout`` kept there."""
    right, reach = box.x + box.w, LOOP / 0.75       # a cubic reaches 3/4 of its controls
    curve = ((right, box.y + box.h * 0.3), (right + reach, box.y - box.h * 0.2),
             (right + reach, box.y + box.h * 1.2), (right, box.y + box.h * 0.7))
    w, h = size
    label = Rect(right + LOOP + 4, box.y + (box.h - h) / 2, w, h)
    return Route(i, name, name, [curve], label)
