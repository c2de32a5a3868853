"""Naming values that share a name hint is linear in their number (issue 22, item 5: printing
8k `x = x + 1` statements took 3.3 s, quadratic in the statements)."""

import tilec.ir.printer as printer_module
from tilec.ir.parser import parse_module
from tilec.ir.printer import print_module


def chain(n: int, hint: str = "x"):
    """A function of `n` additions whose results all have the name hint `hint`."""
    lines = ["func.func @k(%a: i32) -> i32 {", "  %c = arith.constant {value = 1 : i32} : i32"]
    lines.append("  %v0 = arith.addi %a, %c : i32")
    lines += [f"  %v{i} = arith.addi %v{i - 1}, %c : i32" for i in range(1, n)]
    lines += [f"  tile.return %v{n - 1}", "}"]
    module = parse_module("\n".join(lines))
    for op in module.walk():
        for result in op.results:
            if result.name_hint.startswith("v"):
                result.name_hint = hint
    return module


class CountingSet(set):
    """The printer's set of used names, counting the lookups in it."""

    lookups = 0

    def __contains__(self, item: object) -> bool:
        CountingSet.lookups += 1
        return super().__contains__(item)


def test_naming_values_of_one_hint_takes_a_few_lookups_each(monkeypatch):
    n = 4000
    module = chain(n)
    monkeypatch.setattr(printer_module, "set", CountingSet, raising=False)
    CountingSet.lookups = 0
    text = print_module(module)
    assert f"tile.return %x_{n - 1}" in text
    # linear: a few lookups a value (quadratic was n * n / 2 = 8,000,000)
    assert CountingSet.lookups < 3 * n, CountingSet.lookups


def test_names_stay_the_smallest_free_suffix():
    module = chain(4)
    values = [r for op in module.walk() for r in op.results if r.name_hint == "x"]
    values[2].name_hint = "x_1"  # the second `x` took that name: this one is suffixed
    text = print_module(module)
    assert [line.split(" = ")[0].strip() for line in text.splitlines()[2:6]] == [
        "%x",
        "%x_1",
        "%x_1_1",
        "%x_2",
    ]
    assert print_module(parse_module(text)) == text
