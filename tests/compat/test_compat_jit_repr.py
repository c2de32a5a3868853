"""`@jit(repr=...)` names the compiled kernel from its specialization, as Triton's
`JITFunction.repr`: the name is `compiled.name` and the PTX entry's."""

import numpy as np
import pytest
from compat_cause_kernels import badly_named_kernel, named_kernel

import tilec


@pytest.mark.parametrize(
    ("value", "name"),
    [(5, "kernel_i32_is_one"), (1, "kernel_constexpr_value1_is_one"), (2**40, "kernel_i64_is_one")],
)
def test_repr_names_the_compiled_kernel(value, name):
    x = np.zeros(1, np.int64)
    compiled = named_kernel.warmup(value, 1, x, grid=(1,), backend="interp")
    assert compiled.name == name
    named_kernel[(1,)](value, 1, x, backend="interp")
    assert x[0] == value + 1


def test_repr_names_the_ptx_entry():
    signature = {"value1": "i32", "is_one": "i32", "x_ptr": "*i64"}
    compiled = tilec.compile(named_kernel, signature, {}, backend="nvidia", target="sm_90a")
    assert compiled.name == "kernel_i32_"
    assert ".entry kernel_i32_(" in compiled.asm["ptx"]


def test_a_repr_that_is_no_name_is_refused():
    with pytest.raises(tilec.DecoratorValueError, match="must be an identifier"):
        badly_named_kernel[(1,)](np.zeros(1, np.int32), backend="interp")


def test_repr_must_be_a_function():
    with pytest.raises(tilec.DecoratorValueError, match="takes a function of the specialization"):
        tilec.jit(repr="name")
