"""Addresses a kernel computes from integers (issue 11, the grouped-GEMM tutorial): the
interpreter reads and writes host arrays that are not arguments through their addresses
(`array.ctypes.data`, torch's `data_ptr()`), as Triton's interpreter does, and an address
outside this process's writable memory is a located error, not a crash."""

import ctypes
import mmap

import numpy as np
import pytest
from compat_helpers import run_interp

import tilec
import tilec.language as tl
from tilec_interp.host_memory import writable_mappings
from tilec_interp.memory import InterpreterError


@tilec.jit
def gather_scatter(addresses, n_ptr, BLOCK: tl.constexpr):
    """Program g doubles array g, found through its address (addresses[2g]) into the array at
    addresses[2g + 1], and counts its elements there atomically."""
    g = tl.program_id(0)
    src = tl.load(addresses + 2 * g).to(tl.pointer_type(tl.float32))
    dst = tl.load(addresses + 2 * g + 1).to(tl.pointer_type(tl.float32))
    n = tl.load(n_ptr + g)
    offs = tl.arange(0, BLOCK)
    tl.store(dst + offs, tl.load(src + offs, mask=offs < n) * 2, mask=offs < n)
    counter = tl.load(addresses + 2 * g + 1).to(tl.pointer_type(tl.int32)) + BLOCK
    tl.atomic_add(counter, n)


def test_arrays_reached_through_their_addresses_are_read_and_written():
    sizes = [5, 16, 11]
    sources = [np.arange(n, dtype=np.float32) + 10 * g for g, n in enumerate(sizes)]
    # each destination: BLOCK float32 results, then an int32 counter
    targets = [np.zeros(17, np.float32) for _ in sizes]
    for target in targets:
        target[16:].view(np.int32)[:] = 100
    addresses = np.array(
        [a.ctypes.data for pair in zip(sources, targets, strict=True) for a in pair], np.int64
    )
    run_interp(gather_scatter, {"addresses": "*i64", "n_ptr": "*i32"},
               [addresses, np.array(sizes, np.int32)], grid=(3,), BLOCK=16)  # fmt: skip
    for source, target, n in zip(sources, targets, sizes, strict=True):
        np.testing.assert_array_equal(target[:n], source * 2)
        assert not target[n:16].any()
        assert target[16:].view(np.int32)[0] == 100 + n


@pytest.mark.parametrize("address", [0, 8, -4096, 1 << 46])
def test_an_address_outside_writable_memory_is_a_located_error(address):
    source = np.zeros(16, np.float32)
    addresses = np.array([address, source.ctypes.data], np.int64)
    with pytest.raises(InterpreterError, match="belongs to no buffer") as info:
        run_interp(gather_scatter, {"addresses": "*i64", "n_ptr": "*i32"},
                   [addresses, np.array([16], np.int32)], BLOCK=16)  # fmt: skip
    assert "test_compat_host_addresses.py:" in str(info.value)


def test_an_access_past_the_end_of_its_mapping_is_a_located_error():
    """The whole access must lie in writable memory: the last bytes of a mapping that a
    read-only page follows, read as a block that runs past it, are refused. The page is made
    here: the process's first writable mapping, taken before, may run straight into another
    (the GPU machine's Python has its .bss right after its data), where the block is read."""
    page = mmap.PAGESIZE
    region = mmap.mmap(-1, 2 * page)
    start = ctypes.addressof(ctypes.c_char.from_buffer(region))
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.mprotect(ctypes.c_void_p(start + page), page, mmap.PROT_READ) == 0
    end = start + page
    assert any(low <= end - 8 and end == high for low, high in writable_mappings())
    addresses = np.array([end - 8, end - 8], np.int64)
    with pytest.raises(InterpreterError, match="belongs to no buffer"):
        run_interp(gather_scatter, {"addresses": "*i64", "n_ptr": "*i32"},
                   [addresses, np.array([16], np.int32)], BLOCK=16)  # fmt: skip
