"""TMA stores of host descriptors without a GPU (docs/tma.md step 3, `tilec_nvidia.tma_store`).

On the H200 a TMA store wrote the elements of a row up to the next 16-byte boundary past the
tensor's innermost extent (an fp32 block of a 90-column slice of a 96-column tensor wrote
columns 90 and 91: "wrong values") and a block starting a row before the tensor raised an
illegal instruction. The store now goes through TMA only where TMA writes exactly the
elements the mask holds (`tma_store.exact`, evaluated here on integers), else it is the masked
store; and the pieces the device cannot show wrong one by one are checked here: the buffer
offset of each element against the box whose coordinates TMA stores it with (`_box_offset`,
several boxes a row and a dimension over 256), and the PTX order (writes, fence, barrier,
bulk stores predicated on their box starting inside the tensor, commit, wait, barrier).
The GPU runs these kernels in test_tma_gpu.py (`-k stores`)."""

from __future__ import annotations

import itertools
import math
import operator
import re

import pytest
from llvmlite import ir
from test_tma_compile import store_block

import tilec
from tilec_nvidia import tensor_map, tma_lowering, tma_store
from tilec_nvidia.codegen import find_ptxas

COMPARISONS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
               "==": operator.eq, "!=": operator.ne}  # fmt: skip


class Ints:
    """The few `ir.IRBuilder` methods `exact` and `_box_offset` call, on Python integers (i32
    constants are read as their value; comparisons give bools): their arithmetic, checked
    without a device."""

    @staticmethod
    def _v(x):
        return x.constant if isinstance(x, ir.Constant) else x

    def add(self, a, b):
        return self._v(a) + self._v(b)

    def sub(self, a, b):
        return self._v(a) - self._v(b)

    def mul(self, a, b):
        return self._v(a) * self._v(b)

    def udiv(self, a, b):
        return self._v(a) // self._v(b)

    def urem(self, a, b):
        return self._v(a) % self._v(b)

    def and_(self, a, b):
        return self._v(a) & self._v(b)

    def or_(self, a, b):
        return self._v(a) | self._v(b)

    def icmp_signed(self, op, a, b):
        return int(COMPARISONS[op](self._v(a), self._v(b)))

    icmp_unsigned = icmp_signed


def _exact(offsets, sizes, block, size):
    return bool(tma_store.exact(Ints(), offsets, sizes, block, size))


def _writes(offset, extent, block, size):
    """The columns a TMA store of a row writes (the H200's behaviour: whole 16-byte chunks of
    the row, clipped at the chunk holding the extent's end), against the mask's."""
    written = {c for c in range(offset, offset + block) if c >= 0}
    end = -(-extent * size // 16) * 16 // size  # the extent rounded up to whole chunks
    return {c for c in written if c < end}, {c for c in written if c < extent}


# element bytes, row offset, column offset, sizes, block, TMA exact?
DECISIONS = [
    (4, 0, 64, (70, 90), (32, 64), False),  # the H200's fp32 case: 360-byte rows, block crosses
    (4, 0, 0, (70, 90), (32, 64), True),  # the same tensor, a block inside it
    (4, 64, 0, (70, 90), (32, 64), True),  # rows past the end: TMA clips them exactly
    (1, -1, 0, (33, 300), (16, 128), False),  # the H200's int8 case: a row before the tensor
    (1, 15, 256, (33, 300), (16, 128), False),  # 300-byte rows, block crosses them
    (1, 15, 128, (33, 300), (16, 128), True),
    (2, 0, 64, (100, 72), (64, 64), True),  # 144-byte rows: crossing them is exact
    (2, 0, 4, (100, 72), (64, 64), False),  # the innermost coordinate 8 bytes into a chunk
    (2, 0, 8, (100, 200), (64, 64), True),
    (4, 0, 0, (8, 40), (8, 64), True),  # a block wider than the tensor, 160-byte rows
    (4, 0, 0, (8, 42), (8, 64), False),
    (8, 0, 16, (9, 30), (8, 16), True),  # fp64: 240-byte rows
    (8, 0, 1, (9, 32), (8, 16), False),
    (2, -64, 0, (100, 72), (64, 64), False),  # wholly before the tensor
]


@pytest.mark.parametrize(("size", "row", "column", "sizes", "block", "expected"), DECISIONS)
def test_tma_stores_only_where_it_writes_what_the_mask_holds(size, row, column, sizes, block,
                                                             expected):  # fmt: skip
    assert _exact([row, column], list(sizes), block, size) == expected
    if expected:  # then TMA's 16-byte writes are the mask's, row for row
        chunks, mask = _writes(column, sizes[1], block[1], size)
        assert chunks == mask and row >= 0 and column * size % 16 == 0


def test_every_block_tma_takes_writes_what_the_mask_holds():
    """Exhaustively over small shapes: `exact` never lets TMA write a column the mask does
    not hold (the H200's 16-byte rule), and takes every aligned block inside whole rows."""
    for size in (1, 2, 4, 8):
        for extent in range(1, 70):
            for column in range(-8, 80):
                block = 64 // size
                ok = _exact([0, column], [1, extent], (1, block), size)
                chunks, mask = _writes(column, extent, block, size)
                if ok:
                    assert chunks == mask and column >= 0 and column * size % 16 == 0, (
                        size,
                        extent,
                        column,
                    )
                if column >= 0 and column * size % 16 == 0 and column + block <= extent:
                    assert ok, (size, extent, column)


def _model_offset(coords, block, box, size):
    """Where TMA puts the element at `coords` of box `k` (`_box_origins`' order) in the
    buffer: box k at k box sizes, row-major within it."""
    origins = tma_lowering._box_origins(block, box)
    for k, origin in enumerate(origins):
        if all(o <= c < o + b for c, o, b in zip(coords, origin, box, strict=True)):
            within = 0
            for c, o, b in zip(coords, origin, box, strict=True):
                within = within * b + (c - o)
            return (k * math.prod(box) + within) * size
    raise AssertionError(coords)


@pytest.mark.parametrize(("block", "size"), [
    ((32, 64), 4),  # the fp32 case: two 32-column boxes a row
    ((16, 128), 1), ((64, 64), 2), ((8, 16), 8),
    ((64, 128), 2),  # two 64-column boxes a row of halves
    ((4, 2, 64), 4),  # rank 3, two boxes a row
    ((512, 8), 4),  # 512 rows: two boxes of 256
])  # fmt: skip
def test_each_element_lies_where_its_box_is_stored_from(block, size):
    """`_box_offset` (where the threads write an element, unswizzled) agrees with the box whose
    coordinates `_Block.boxes` stores from that place: box k at k box sizes, row-major."""
    swizzle = tensor_map.swizzle_bytes(block[-1] * size)
    box = tensor_map.box_shape(block, size, swizzle)
    counts = [extent // part for extent, part in zip(block, box, strict=True)]
    box_bytes = math.prod(box) * size
    assert len(tma_lowering._box_origins(block, box)) == math.prod(counts)
    for coords in itertools.product(*(range(n) for n in block)):
        got = tma_lowering._box_offset(Ints(), list(coords), box, counts, box_bytes, size)
        assert got == _model_offset(coords, block, box, size), coords


def _store_ptx(element, block):
    signature = {"x_ptr": f"*{element}", "y_desc": f"tensordesc<{element}[{block[0]}, "
                 f"{block[1]}]>", "N": "i32"}  # fmt: skip
    compiled = tilec.compile(store_block, signature, constexprs={"BM": block[0], "BN": block[1]},
                             backend="nvidia", target="sm_90a")  # fmt: skip
    if find_ptxas() is not None:
        assert compiled.asm["cubin"]
    return compiled


BULK = re.compile(r"@(%p\d+) cp\.async\.bulk\.tensor\.2d\.global\.shared::cta\.bulk_group "
                  r"\[%rd\d+, \{(%r\d+), (%r\d+)\}\], \[(%rd\d+)\];")  # fmt: skip


def test_the_bulk_stores_follow_the_fence_and_wait_for_their_group(tma_stores_on):
    compiled = _store_ptx("fp32", (32, 64))
    assert compiled.metadata["tensor_maps"][0]["swizzle"] == 128
    lines = [line.strip() for line in compiled.asm["ptx"].splitlines()]
    stores = [i for i, line in enumerate(lines) if BULK.search(line)]
    assert len(stores) == 2  # two boxes of 32 fp32 columns
    writes = [i for i, line in enumerate(lines) if line.startswith("st.shared")]
    fence = lines.index("fence.proxy.async.shared::cta;")
    assert max(writes) < fence < stores[0]  # every write, then the fence, then the copies
    assert any(line.startswith("bar.sync") for line in lines[fence : stores[0]])
    commit = next(i for i, line in enumerate(lines) if "cp.async.bulk.commit_group" in line)
    wait = next(i for i, line in enumerate(lines) if "cp.async.bulk.wait_group 0" in line)
    assert stores[-1] < commit < wait
    assert any("bar.sync" in line for line in lines[wait:])  # the buffer free after the wait
    assert "mbarrier" not in compiled.asm["ptx"]


def test_a_box_is_stored_from_its_place_only_if_it_starts_inside_the_tensor(tma_stores_on):
    """Box 1 of a 32x64 fp32 block comes from the buffer's 4096th byte (32 x 32 x 4) with
    column coordinate + 32, each copy predicated on its coordinates being below the sizes."""
    ptx = _store_ptx("fp32", (32, 64)).asm["ptx"]
    (p0, c0, r0, s0), (p1, c1, r1, s1) = (m.groups() for m in BULK.finditer(ptx))
    assert r0 == r1
    assert re.search(rf"add\.s64\s+{s1}, {s0}, 4096;", ptx)
    assert re.search(rf"or\.b32\s+{c1}, {c0}, 32;|add\.s32\s+{c1}, {c0}, 32;", ptx)
    assert re.search(r"and\.b64\s+%rd\d+, %rd\d+, -1024;", ptx)  # the buffer 1024-aligned
    for predicate, column in ((p0, c0), (p1, c1)):
        inside = re.search(rf"and\.pred\s+{predicate}, (%p\d+), (%p\d+);", ptx)
        assert inside, predicate
        assert re.search(rf"setp\.lt\.s32\s+{inside.group(2)}, {column}, %r\d+;", ptx)


def test_the_masked_store_stands_where_tma_would_not_write_exactly(tma_stores_on):
    """Both paths, chosen by one uniform branch: the TMA stores and the masked st.global."""
    ptx = _store_ptx("i8", (16, 128)).asm["ptx"]
    assert len(BULK.findall(ptx)) == 1
    assert re.search(r"@%p\d+ st\.global", ptx)
    assert re.search(r"@%p\d+ bra", ptx)


@pytest.mark.parametrize(("block", "claimed"), [((8, 64), True), ((4, 64), False), ((4, 32), True)])
def test_a_block_of_several_boxes_is_claimed_only_where_each_box_is_swizzle_aligned(
    tma_stores_on, block, claimed
):
    """fp32 rows of 64 are two 128-byte-swizzled boxes: of 8 rows each box is 1024 bytes (the
    swizzle's pattern), of 4 the second would start 512 bytes in; one box of 4 rows starts at
    the buffer's (1024-aligned) start."""
    assert bool(_store_ptx("fp32", block).metadata.get("tensor_maps")) == claimed
    assert tma_lowering.box_alignment(128) == 1024 and tma_lowering.box_alignment(0) == 128
