"""Kernels for the Triton 3.6 behaviours of test_compat_dtype_queries.py and its siblings
(issue 20's smaller causes), written here to the pattern Triton's language tests use."""

import tilec
import tilec.language as tl


@tilec.jit
def float_layout_kernel(x_ptr, out_ptr):
    """Stores the dtype's mantissa width, exponent bias and bit width, read in the kernel."""
    x = tl.load(x_ptr)
    dtype = x.dtype
    tl.store(out_ptr, dtype.fp_mantissa_width)
    tl.store(out_ptr + 1, dtype.exponent_bias)
    tl.store(out_ptr + 2, dtype.primitive_bitwidth - dtype.fp_mantissa_width - 1)
    tl.store(out_ptr + 3, dtype.itemsize)


@tilec.jit
def triton_error_texts(x_ptr, WHICH: tl.constexpr):
    """One of the mistakes whose error text Triton's tests read (`__cause__` of the error)."""
    offs = tl.arange(0, 4)
    x = tl.load(x_ptr + offs)
    if WHICH == "program_id":
        x += tl.program_id(20)
    elif WHICH == "axis_low":
        x = tl.sum(tl.expand_dims(x, -3), axis=None)
    elif WHICH == "axis_high":
        x = tl.sum(tl.expand_dims(x, 2), axis=None)
    elif WHICH == "axis_of_scalar":
        x += tl.sum(tl.expand_dims(tl.sum(x), 1))
    elif WHICH == "axes_repeated":
        x = tl.sum(tl.expand_dims(x, (0, -3)), axis=None)
    elif WHICH == "scalar_overflow":
        huge: tl.constexpr = 0xFFFFFFFFFFFFFF
        x = x + huge
    tl.store(x_ptr + offs, x)


@tilec.jit
def full_of_runtime_value(out_ptr, val, SHAPE: tl.constexpr, DTYPE: tl.constexpr):
    """`tl.full(SHAPE, val, DTYPE)` of a runtime scalar `val`, stored to 4 elements."""
    a = tl.full(SHAPE, val, DTYPE)
    tl.static_assert(a.shape == SHAPE)
    tl.store(out_ptr + tl.arange(0, 4), a)


@tilec.jit
def full_of_a_block(out_ptr, x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 4))
    tl.store(out_ptr + tl.arange(0, 4), tl.full([4], x, tl.float32))


@tilec.jit
def getattr_kernel(a_ptr, b_ptr, out_ptr, FUNC: tl.constexpr, NAN: tl.constexpr):
    """`getattr(tl, FUNC)(..., propagate_nan=getattr(tl.PropagateNan, NAN))`, as Triton's
    test_propagate_nan builds its call; `hasattr` and a `getattr` default beside it."""
    a, b = tl.load(a_ptr), tl.load(b_ptr)
    nan = getattr(tl.PropagateNan, NAN)
    if FUNC == "clamp":
        out = getattr(tl, FUNC)(a, -b, b, propagate_nan=nan)
    else:
        out = getattr(tl, FUNC)(a, b, propagate_nan=nan)
    tl.static_assert(hasattr(a, "dtype") and not hasattr(a, "no_such_attribute"))
    tl.static_assert(getattr(a, "no_such_attribute", 3) == 3)
    tl.store(out_ptr, out.to(getattr(a, "dtype")))  # noqa: B009 - getattr is the test


@tilec.jit
def number_names_kernel(out_ptr, lo, hi):
    """Names a plain assignment binds to a number are scalar tensors in Triton (`acc = 0` has
    `acc.to(...)`, `one = 1` has `one.dtype`); `x: tl.constexpr = 1` stays a constant."""
    acc = 0
    acc = acc.to(tl.int64)
    for i in range(lo, hi, 3):
        acc += i
    tl.store(out_ptr, acc)
    one = 1
    tl.static_assert(one.dtype == tl.int32 and one.type == tl.int32)
    half = 0.5
    tl.static_assert(getattr(half, "dtype") == tl.float32)  # noqa: B009 - the test
    flag = True
    tl.static_assert(flag.dtype == tl.int1)
    fixed: tl.constexpr = 7
    tl.static_assert(fixed.type == tl.constexpr_type(7))
    tl.store(out_ptr + 1, tl.full([4], one, one.dtype).to(tl.int64).sum())


@tilec.jit
def constexpr_types_kernel(out_ptr, LITERAL: tl.constexpr, TENSOR_TYPE: tl.constexpr):
    """As Triton's test_constexpr_assignment: a constexpr parameter (and a name annotated
    tl.constexpr) has a constexpr type; a plain assignment of it is a tensor of its type."""
    tl.static_assert(LITERAL.type == tl.constexpr_type(LITERAL))
    kept: tl.constexpr = LITERAL
    tl.static_assert(kept.type == tl.constexpr_type(LITERAL))
    if TENSOR_TYPE is not None:
        variable = LITERAL
        tl.static_assert(variable.type == TENSOR_TYPE)
    tl.store(out_ptr, 1)


def make_closure_kernel(value):
    """A kernel that reads a variable of its enclosing function (its closure), as Triton's
    kernels defined in tests read their test's locals."""

    @tilec.jit
    def closure_kernel(out_ptr):
        tl.store(out_ptr, tl.full([1], VALUE, tl.int32).sum())

    VALUE = value
    return closure_kernel


def specialization_name(specialization):
    """Triton's test_value_specialization's repr: the type of value1 and the parameters equal
    to 1."""
    value_type = specialization.signature["value1"]
    ones = "_".join(k for k, v in specialization.constants.items() if v == 1)
    return f"kernel_{value_type}_{ones}"


@tilec.jit(repr=specialization_name)
def named_kernel(value1, is_one, x_ptr):
    tl.store(x_ptr, value1 + is_one)


@tilec.jit(repr=lambda specialization: "not a name")
def badly_named_kernel(x_ptr):
    tl.store(x_ptr, 1)


@tilec.jit
def random_module_kernel(x_ptr, out_ptr, N: tl.constexpr):
    """`tl.random.uint_to_uniform_float`, as Triton's test_rand_limits calls it."""
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, tl.random.uint_to_uniform_float(tl.load(x_ptr + offs)))


@tilec.jit
def descriptor_block_kernel(ptr, COLUMNS: tl.constexpr):
    """Stores zeros through a descriptor whose block has COLUMNS elements a row."""
    desc = tl.make_tensor_descriptor(ptr, [16, 16], [16, 1], [8, COLUMNS])
    desc.store([0, 0], tl.zeros([8, COLUMNS], dtype=ptr.dtype.element_ty))


@tilec.jit
def gather_kernel(src_ptr, idx_ptr, out_ptr, AXIS: tl.constexpr, S0: tl.constexpr,
                  S1: tl.constexpr, I0: tl.constexpr, I1: tl.constexpr):  # fmt: skip
    """`tl.gather` of a row-major [S0, S1] source by a row-major [I0, I1] index along AXIS."""
    src = tl.load(src_ptr + tl.arange(0, S0)[:, None] * S1 + tl.arange(0, S1)[None, :])
    offs = tl.arange(0, I0)[:, None] * I1 + tl.arange(0, I1)[None, :]
    tl.store(out_ptr + offs, tl.gather(src, tl.load(idx_ptr + offs), AXIS))
