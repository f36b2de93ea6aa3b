"""What an evaluation may cost, worked out before it runs.

The CEL library cannot be interrupted once an evaluation starts (it holds the
interpreter lock throughout) and its only limit counts comprehension iterations, not
what each one costs: ``list.map`` copies its growing result on every iteration, so its
time grows with the square of the list's length, and an iteration that concatenates two
strings allocates both again. What it has not started, though, it cannot overrun: this
module bounds an evaluation's time and memory from the expression's checked syntax tree
(``Node``, built once at load time) and the sizes of the values it is given, and an
evaluation whose bound exceeds the budget is refused instead of run.

A value's size is a ``Shape``: for each level of nesting (the value itself, its
elements, their elements...) the largest length (items, keys or characters) and the
largest mass (approximate bytes) found there. Every rule below gives an upper bound of
the shapes and costs of its results from those of its operands, so the estimate never
says "cheap" of an expensive evaluation; it may say "expensive" of one that would stop
early (``exists`` finding its first match at once is charged for every item).

Costs are in nanoseconds of a reference machine (``bench/evaluation_budget.py`` measures
the ratio to the real time): only their order of magnitude matters.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

# Comprehension iterations the library allows one evaluation (its fixed budget).
ITERATION_BUDGET = 10_000
# The budget of one evaluation: estimated time, and the largest value it may build.
COST_LIMIT_NS = 20_000_000  # 20 ms
MEMORY_LIMIT_BYTES = 16 * 1024 * 1024

# What one operation costs the library, in nanoseconds, measured on a busy 2-core machine
# (bench/evaluation_budget.py compares estimates with measured times).
_CALL = 100  # any call or literal
_ITERATION = 1000  # one comprehension iteration's bookkeeping
_ELEMENT = 200  # one list element copied (list concatenation, what `map` does each step)
_BYTE = 3  # one byte copied or compared
_CONVERT = 25  # one byte of an input converted into the library's values
_SCALAR = 16  # the mass of a number, bool or null

Level = tuple[int, int]  # (largest length, largest mass) at one depth
Shape = tuple[Level, ...]

SCALAR: Shape = ((1, _SCALAR),)
_MAX_DEPTH = 32


@dataclass(frozen=True, slots=True)
class Node:
    """One node of a checked expression, as far as costs need it.

    ``kind``: const ident select call list map compr. ``name``: the identifier, field or
    function. ``args``: a call's target (if any) then its arguments; a list's elements; a
    map literal's keys and values in turn; a select's operand; a comprehension's range,
    initial accumulator, condition, step and result. ``size``: a string constant's
    length. ``iter_var`` and ``accu_var``: a comprehension's variables. ``test_only``: a
    select inside ``has()``. ``node_id``: the checker's id, which the overloads it chose
    for a call are keyed by.
    """

    kind: str
    name: str = ""
    args: tuple[Node, ...] = ()
    size: int = 0
    iter_var: str = ""
    accu_var: str = ""
    test_only: bool = False
    node_id: int = 0


@dataclass(frozen=True, slots=True)
class Estimate:
    time_ns: int
    memory_bytes: int

    def exceeded(self) -> str | None:
        """Which budget the estimate is over ("time", "memory"), or None."""
        if self.memory_bytes > MEMORY_LIMIT_BYTES:
            return "memory"
        if self.time_ns > COST_LIMIT_NS:
            return "time"
        return None


def needs_estimate(node: Node) -> bool:
    """Whether an evaluation of ``node`` can cost more than its inputs' size suggests:
    without comprehensions, every value it builds is at most the sum of its inputs
    times its own size, which the limits on inputs keep small."""
    if node.kind == "compr":
        return True
    return any(needs_estimate(arg) for arg in node.args)


def shape_of(value: object) -> Shape:
    """The shape of a plain (JSON-like) value.

    Measuring walks the value, which for a large list costs about what the library's own
    conversion of it does; the shapes of large values are remembered by identity (the
    engine never changes a value in place: a step that sets a field makes a new one), so
    a value measured once is not walked again by the next evaluation or step.
    """
    if isinstance(value, list | tuple | Mapping) and len(value) > _REMEMBER_FROM:
        key = id(value)
        found = _remembered.get(key)
        if found is not None and found[0] is value:
            _remembered.move_to_end(key)
            return found[1]
        shape = _shape(value)
        _remembered[key] = (value, shape)  # holding the value keeps its id unique
        if len(_remembered) > _REMEMBERED:
            _remembered.popitem(last=False)
        return shape
    return _shape(value)


_REMEMBER_FROM = 64  # smaller values are measured again: it costs less than looking up
_REMEMBERED = 256
_remembered: OrderedDict[int, tuple[object, Shape]] = OrderedDict()


def _shape(value: object) -> Shape:
    levels: list[list[int]] = []
    _measure(value, 0, levels)
    return tuple((n, m) for n, m in levels)


_SCALAR_TYPES = frozenset({int, float, bool, type(None)})


def _measure(value: object, depth: int, levels: list[list[int]]) -> int:
    if depth == len(levels):
        levels.append([0, 0])
    kind = type(value)
    if kind is dict or (kind is not list and isinstance(value, Mapping)):
        mapping: Mapping[object, object] = value  # type: ignore[assignment]
        length = len(mapping)
        mass = _SCALAR + _measure_items(list(mapping), depth + 1, levels)
        mass += _measure_items(list(mapping.values()), depth + 1, levels)
    elif kind is list or kind is tuple:
        items: list[object] = value  # type: ignore[assignment]
        length = len(items)
        mass = _SCALAR + _measure_items(items, depth + 1, levels)
    elif kind is str or kind is bytes:
        length = len(value)  # type: ignore[arg-type]
        mass = _SCALAR + length
    else:
        length, mass = 1, _SCALAR
    level = levels[depth]
    level[0] = max(level[0], length)
    level[1] = max(level[1], mass)
    return mass


def _measure_items(items: list[object], depth: int, levels: list[list[int]]) -> int:
    """The mass of ``items`` (one level down), recording their level; lists of only
    scalars or only strings, the common large ones, without a call per item."""
    if not items:
        return 0
    if depth >= _MAX_DEPTH:
        return _SCALAR * len(items)
    kinds = set(map(type, items))
    if depth == len(levels):
        levels.append([0, 0])
    level = levels[depth]
    if kinds <= _SCALAR_TYPES:
        level[0] = max(level[0], 1)
        level[1] = max(level[1], _SCALAR)
        return _SCALAR * len(items)
    if kinds == {str}:
        lengths = list(map(len, items))  # type: ignore[arg-type]
        longest = max(lengths)
        level[0] = max(level[0], longest)
        level[1] = max(level[1], _SCALAR + longest)
        return _SCALAR * len(items) + sum(lengths)
    if kinds == {dict}:
        return _measure_records(items, depth, levels)
    return sum(_measure(item, depth, levels) for item in items)


def _measure_records(records: list[object], depth: int, levels: list[list[int]]) -> int:
    """A list of maps, each measured in one pass (the usual list of records)."""
    total = 0
    widest = heaviest = 0
    below = depth + 1
    if below == len(levels):
        levels.append([0, 0])
    level = levels[below]
    scalar_types = _SCALAR_TYPES
    for record in records:
        mass = _SCALAR
        for key, item in record.items():  # type: ignore[attr-defined]
            kind = type(item)
            if kind is str:
                size = _SCALAR + len(item)
                level[0] = max(level[0], len(item))
            elif kind in scalar_types:
                size = _SCALAR
            else:
                size = _measure(item, below, levels)
            key_size = _SCALAR + len(key)
            mass += size + key_size
            level[0] = max(level[0], len(key))
            level[1] = max(level[1], size, key_size)
        widest = max(widest, len(record))  # type: ignore[arg-type]
        heaviest = max(heaviest, mass)
        total += mass
    level[0] = max(level[0], 1)
    level[1] = max(level[1], _SCALAR)
    here = levels[depth]
    here[0] = max(here[0], widest)
    here[1] = max(here[1], heaviest)
    return total


def _element(shape: Shape) -> Shape:
    if len(shape) > 1:
        return shape[1:]
    mass = shape[0][1]
    return ((mass, mass),)  # nothing known below: anything that fits in the whole


def _level(shape: Shape, depth: int) -> Level:
    if depth < len(shape):
        return shape[depth]
    mass = shape[-1][1]
    return (mass, mass)


def _widest(shapes: Iterable[Shape]) -> Shape:
    """A shape that bounds every one of ``shapes`` (they are alternatives)."""
    shapes = list(shapes)
    if not shapes:
        return SCALAR
    depth = max(len(s) for s in shapes)
    return tuple(
        (max(_level(s, d)[0] for s in shapes), max(_level(s, d)[1] for s in shapes))
        for d in range(depth)
    )


def _joined(shapes: list[Shape]) -> Shape:
    """The shape of a concatenation of ``shapes`` (strings or lists)."""
    below = _widest([_element(s) for s in shapes if len(s) > 1])
    top = (sum(s[0][0] for s in shapes), sum(s[0][1] for s in shapes))
    return (top, *below) if any(len(s) > 1 for s in shapes) else (top,)


def _container(items: list[Shape], count: int) -> Shape:
    """A list (or map) literal of ``count`` entries made of ``items``."""
    mass = _SCALAR + sum(s[0][1] for s in items)
    return ((count, mass), *_widest(items)) if items else ((0, _SCALAR),)


_NUMERIC_ADD = ("int64", "uint64", "double", "duration", "timestamp")
_COMPARISONS = frozenset(
    {"_==_", "_!=_", "_<_", "_<=_", "_>_", "_>=_", "contains", "startsWith", "endsWith"}
)
_SCALAR_RESULTS = frozenset(
    {
        "size", "_&&_", "_||_", "!_", "-_", "_-_", "_*_", "_/_", "_%_", "@not_strictly_false",
        "int", "uint", "double", "bool", "duration", "timestamp", "type",
        "getFullYear", "getMonth", "getDayOfYear", "getDayOfMonth", "getDate",
        "getDayOfWeek", "getHours", "getMinutes", "getSeconds", "getMilliseconds",
    }
)  # fmt: skip


# Nodes the estimate of one evaluation may visit. A comprehension's step is visited a few
# times (for the growth of its accumulator), so nested ones multiply: an expression
# nested deeply enough to need more than this is judged over the time budget unseen.
_MAX_VISITS = 2_000


class _TooComplex(Exception):
    pass


class _Estimator:
    def __init__(
        self, variables: Mapping[str, Shape], overloads: Mapping[int, tuple[str, ...]]
    ) -> None:
        self.variables = variables
        self.overloads = overloads
        self.peak = 0  # the largest mass of any value built
        self.visits = 0

    def built(self, shape: Shape) -> Shape:
        self.peak = max(self.peak, shape[0][1])
        return shape

    def run(self, node: Node, scope: Mapping[str, Shape]) -> tuple[Shape, int]:
        self.visits += 1
        if self.visits > _MAX_VISITS:
            raise _TooComplex
        kind = node.kind
        if kind == "const":
            return ((node.size, _SCALAR + node.size),) if node.size else SCALAR, 0
        if kind == "ident":
            found = scope.get(node.name) or self.variables.get(node.name)
            return (found or SCALAR), 0
        if kind == "select":
            operand, cost = self.run(node.args[0], scope)
            return (SCALAR if node.test_only else _element(operand)), cost + _CALL
        if kind in ("list", "map"):
            shapes, cost = self.each(node.args, scope)
            count = len(shapes) if kind == "list" else len(shapes) // 2
            shape = self.built(_container(shapes, count))
            return shape, cost + _CALL + _ELEMENT * count
        if kind == "compr":
            return self.comprehension(node, scope)
        shapes, cost = self.each(node.args, scope)
        return self.call(node, shapes, cost + _CALL)

    def each(self, nodes: tuple[Node, ...], scope: Mapping[str, Shape]) -> tuple[list[Shape], int]:
        shapes, total = [], 0
        for arg in nodes:
            shape, cost = self.run(arg, scope)
            shapes.append(shape)
            total += cost
        return shapes, total

    def call(self, node: Node, shapes: list[Shape], cost: int) -> tuple[Shape, int]:
        name = node.name
        masses = sum(s[0][1] for s in shapes)
        if name == "_+_":
            overloads = self.overloads.get(node.node_id, ())
            if overloads and all(o.endswith(_NUMERIC_ADD) for o in overloads):
                return SCALAR, cost
            joined = self.built(_joined(shapes))
            length, mass = joined[0]
            # A list's concatenation copies its elements' handles, a string's its bytes;
            # an operand of no static type may be either.
            copies = [
                _ELEMENT * length if o.endswith("list") else _BYTE * mass for o in overloads
            ] or [max(_ELEMENT * length, _BYTE * mass)]
            return joined, cost + max(copies)
        if name == "_[_]":
            return _element(shapes[0]), cost
        if name == "_?_:_":
            return _widest(shapes[1:]), cost
        if name == "dyn":
            return shapes[0], cost
        if name in ("string", "bytes"):
            mass = max(64, masses)
            return self.built(((mass, mass),)), cost + _BYTE * mass
        if name in _COMPARISONS:
            return SCALAR, cost + _BYTE * masses
        if name == "@in":
            return SCALAR, cost + _ELEMENT * shapes[-1][0][0] + _BYTE * masses
        if name == "matches":
            text, pattern = shapes[0][0][1], shapes[-1][0][1]
            return SCALAR, cost + _BYTE * text * max(1, pattern // _SCALAR)
        if name in _SCALAR_RESULTS:
            return SCALAR, cost + _BYTE * masses
        # A function this module does not know: it may build anything its inputs could.
        return self.built(((masses, masses),)), cost + _BYTE * masses

    def comprehension(self, node: Node, scope: Mapping[str, Shape]) -> tuple[Shape, int]:
        iter_range, init, condition, step, result = node.args
        over, cost = self.run(iter_range, scope)
        iterations = min(over[0][0], ITERATION_BUDGET)
        accu, init_cost = self.run(init, scope)
        cost += init_cost
        inner = dict(scope)
        inner[node.iter_var] = _element(over)
        inner[node.accu_var] = accu
        once, first_cost = self.run(step, inner)
        grows = (max(0, once[0][0] - accu[0][0]), max(0, once[0][1] - accu[0][1]))
        inner[node.accu_var] = once
        twice, _ = self.run(step, inner)
        if twice[0][0] - once[0][0] > grows[0] or twice[0][1] - once[0][1] > grows[1]:
            # Grows faster than by a constant each iteration: no standard macro does.
            return self.built(((MEMORY_LIMIT_BYTES + 1,) * 2,)), COST_LIMIT_NS + 1
        top = (accu[0][0] + iterations * grows[0], accu[0][1] + iterations * grows[1])
        final = self.built((top, *_widest([accu[1:] or SCALAR, once[1:] or SCALAR])))
        inner[node.accu_var] = final
        _, last_cost = self.run(step, inner)
        _, condition_cost = self.run(condition, inner)
        shape, result_cost = self.run(result, inner)
        per_iteration = (first_cost + last_cost) // 2 + condition_cost + _ITERATION
        return shape, cost + iterations * per_iteration + result_cost


def estimate(
    node: Node, overloads: Mapping[int, tuple[str, ...]], variables: Mapping[str, Shape]
) -> Estimate:
    """The bound of one evaluation of ``node`` given the shapes of its variables."""
    estimator = _Estimator(variables, overloads)
    try:
        _, cost = estimator.run(node, {})
    except _TooComplex:
        return Estimate(COST_LIMIT_NS + 1, 0)
    converted = sum(shape[0][1] for shape in variables.values())
    peak = max([estimator.peak, *(shape[0][1] for shape in variables.values())])
    return Estimate(cost + _CONVERT * converted, peak)
