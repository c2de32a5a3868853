"""Native fast launches: a fast launch's guards, packing and driver call as machine code.

`tilec.runtime.hot_path` writes, per kernel and call shape, a Python function that checks that a
launch is like an earlier one and launches it. Its bytecode costs about 2 us a launch on the H100
host, half of what the driver call itself costs (benchmarks/RESULTS.md). Where the backend's
runner describes its driver call (`tilec.driver.NativeLaunch`: a `cuLaunchKernel`-shaped entry
point and its fixed arguments) and every argument of the shape is of a kind handled here (tensors
with `dtype`, `get_device()` and `data_ptr()`, Python ints and floats), `build` writes the same
checks in LLVM IR, JIT-compiles them for the host with llvmlite, and makes the result a CPython
builtin function (`METH_FASTCALL`, through `PyCFunction_NewEx`) with the Python fast launch's
signature, `fast(grid, args, meta)`.

It is tried before the Python fast launch of the same shape and returns `MISS` wherever that one
has something to decide: `backend=` given, a `stream=` other than an int handle, a grid that is
not a tuple of ints inside the device's limits, several devices in use, any guard that does not
hold or raises, a failed driver call. The Python path then launches or reports the error, so a launch behaves the same
either way. The native function packs the arguments into its own stack frame (no shared buffer,
no lock) and releases the GIL around the driver call.

Everything it reads from Python goes through exported C API functions (their addresses from
`ctypes.pythonapi`); the one layout it relies on, an object's type at offset 8, is checked on the
live objects before anything is compiled. Interpreters where that does not hold (debug builds,
free-threaded builds) keep the Python fast path.
"""

from __future__ import annotations

import ctypes
import functools
import itertools
import sys
import sysconfig
import threading
from collections.abc import Callable, Sequence
from typing import Any

from llvmlite import ir

from tilec.driver import NativeLaunch, grid_sizes
from tilec.runtime.native_shape import CallShape
from tilec.runtime.specialization import I32

enabled = True
"""Whether fast launches are compiled to native code where they can be (set False to keep every
launch on the Python fast path)."""

PTR = ir.PointerType()
I8, I32_T, I64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)
F32, F64 = ir.FloatType(), ir.DoubleType()
VOID = ir.VoidType()
METH_FASTCALL = 0x0080
PY_EQ = 2
TYPE_OFFSET = 8
"""Bytes from an object's address to its type pointer (`ob_type` after `ob_refcnt`)."""

_C_API = {
    "PyObject_GetAttr": (PTR, [PTR, PTR]),
    "PyObject_VectorcallMethod": (PTR, [PTR, PTR.as_pointer(), I64, PTR]),
    "PyObject_Call": (PTR, [PTR, PTR, PTR]),
    "PyLong_AsLongLong": (I64, [PTR]),
    "PyLong_AsUnsignedLongLong": (I64, [PTR]),
    "PyFloat_AsDouble": (F64, [PTR]),
    "PyErr_Occurred": (PTR, []),
    "PyErr_Clear": (VOID, []),
    "Py_IncRef": (VOID, [PTR]),
    "Py_DecRef": (VOID, [PTR]),
    "PyObject_IsTrue": (I32_T, [PTR]),
    "PyObject_RichCompareBool": (I32_T, [PTR, PTR, I32_T]),
    "PyDict_GetItemWithError": (PTR, [PTR, PTR]),
    "PyDict_Size": (I64, [PTR]),
    "PyTuple_Size": (I64, [PTR]),
    "PyTuple_GetItem": (PTR, [PTR, I64]),
    "PyList_GetItem": (PTR, [PTR, I64]),
    "PyEval_SaveThread": (PTR, []),
    "PyEval_RestoreThread": (VOID, [PTR]),
}
_LIBC = {"getenv": (PTR, [PTR]), "strcmp": (I32_T, [PTR, PTR])}
_ENTRY = (I32_T, [PTR, I32_T, I32_T, I32_T, I32_T, I32_T, I32_T, I32_T, PTR, I64.as_pointer(), PTR])
"""`cuLaunchKernel` and `hipModuleLaunchKernel`: function, grid, block, shared bytes, stream,
kernelParams, extra."""

_SYMBOL_PREFIX = "tilec_native_"


class _MethodDef(ctypes.Structure):
    _fields_ = [
        ("ml_name", ctypes.c_char_p),
        ("ml_meth", ctypes.c_void_p),
        ("ml_flags", ctypes.c_int),
        ("ml_doc", ctypes.c_char_p),
    ]


_host_lock = threading.Lock()


def _host() -> Any:
    """The JIT (one MCJIT engine, a module added per native launch) and the symbols it calls, or
    None where this interpreter cannot take native launches; made once, by one thread (builds
    run on threads of their own: `tilec.runtime.hot_path`)."""
    with _host_lock:
        return _make_host()


@functools.cache
def _make_host() -> Any:
    if sysconfig.get_config_var("Py_GIL_DISABLED") or hasattr(sys, "gettotalrefcount"):
        return None  # free-threaded or debug build: other object layouts
    probe = object()
    if ctypes.c_void_p.from_address(id(probe) + TYPE_OFFSET).value != id(object):
        return None
    from llvmlite import binding as llvm  # deferred: the JIT only where a launch needs it

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    libc = _libc()
    for name in _C_API:
        llvm.add_symbol(
            _SYMBOL_PREFIX + name,
            ctypes.cast(getattr(ctypes.pythonapi, name), ctypes.c_void_p).value,
        )
    for name in _LIBC:
        llvm.add_symbol(
            _SYMBOL_PREFIX + name, ctypes.cast(getattr(libc, name), ctypes.c_void_p).value
        )
    target = llvm.Target.from_triple(llvm.get_process_triple()).create_target_machine(opt=2)
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), target)
    # a prototype of its own: setting restype on ctypes.pythonapi's would change it for everyone
    new_function = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.py_object,
                                     ctypes.c_void_p)(("PyCFunction_NewEx", ctypes.pythonapi))  # fmt: skip
    return llvm, engine, new_function, threading.Lock()


_names = itertools.count()


def build(
    native: NativeLaunch | None, shape: CallShape, *, miss: Any, compiled: Any
) -> Callable[[Any, tuple, dict], Any] | None:
    """A native `fast(grid, args, meta)` for launches of `shape` that return `compiled`, or `miss`
    where a guard does not hold; None where one cannot be made."""
    host = _host() if enabled else None
    if host is None or native is None:
        return None
    if any(entry[0] == "runtime" and entry[1] is None for entry in shape.positional):
        return None
    if not all(type(ns) is dict for ns, _, _ in shape.globals_read):
        return None
    llvm, engine, new_function, lock = host
    emitter = _Emitter(native, miss, compiled)
    source = emitter.function(shape)
    name = emitter.name
    with lock:
        llvm.add_symbol(entry_symbol(native.entry), native.entry)
        module = llvm.parse_assembly(source)
        module.verify()
        engine.add_module(module)
        engine.finalize_object()
        address = engine.get_function_address(name)
    method = _MethodDef(name.encode(), address, METH_FASTCALL, None)
    keep = (method, tuple(emitter.objects))
    return new_function(ctypes.addressof(method), keep, None)


@functools.cache
def _libc() -> Any:
    """The C library's functions as the process has them loaded (`dlopen(NULL)`: no
    `ctypes.util.find_library`, whose import of `subprocess` cost a second launch 3-8 ms)."""
    return ctypes.CDLL(None)


class _Emitter:
    """Writes one native fast launch (see `build`)."""

    def __init__(self, native: NativeLaunch, miss: Any, compiled: Any):
        self.native = native
        self.name = f"tilec_fast_launch_{next(_names)}"
        self.module = ir.Module(name=self.name)
        self.objects: list[Any] = [miss, compiled]
        self.functions: dict[str, ir.Function] = {}
        self.miss = miss
        self.compiled = compiled
        self.strings = 0

    # ------------------------------------------------------------------ helpers
    def api(self, name: str) -> ir.Function:
        if name not in self.functions:
            ret, params = _C_API.get(name) or _LIBC[name]
            self.functions[name] = ir.Function(
                self.module, ir.FunctionType(ret, params), _SYMBOL_PREFIX + name
            )
        return self.functions[name]

    def call(self, name: str, *args: ir.Value) -> ir.Value:
        return self.b.call(self.api(name), list(args))

    def obj(self, value: Any) -> ir.Value:
        """A pointer to `value`, kept alive by the builtin's `self`."""
        self.objects.append(value)
        return ir.Constant(I64, id(value)).inttoptr(PTR)

    def cstring(self, text: bytes) -> ir.Value:
        data = bytearray(text + b"\0")
        constant = ir.Constant(ir.ArrayType(I8, len(data)), data)
        variable = ir.GlobalVariable(self.module, constant.type, f"s{self.strings}")
        self.strings += 1
        variable.global_constant = True
        variable.initializer = constant
        variable.linkage = "internal"
        return variable

    def check(self, ok: ir.Value) -> None:
        """Go on where `ok` holds, else MISS."""
        go = self.b.append_basic_block()
        self.b.cbranch(ok, go, self.miss_block)
        self.b.position_at_end(go)

    def not_null(self, value: ir.Value) -> None:
        self.check(self.b.icmp_unsigned("!=", value, ir.Constant(PTR, None)))

    def new_ref_value(self, result: ir.Value, convert: str) -> ir.Value:
        """`convert` of `result` (a new reference, NULL on error), then the reference dropped;
        MISS on NULL or a conversion error (-1 with an exception set)."""
        self.not_null(result)
        value = self.call(convert, result)
        self.call("Py_DecRef", result)
        self.no_error()
        return value

    def no_error(self) -> None:
        """MISS where a conversion just failed (it returned -1 and set an exception)."""
        error = self.b.icmp_unsigned("!=", self.call("PyErr_Occurred"), ir.Constant(PTR, None))
        self.check(self.b.not_(error))

    def attribute_is(self, owner: ir.Value, name: str, expected: Any) -> None:
        """MISS unless `owner.name` is the very object `expected`."""
        result = self.call("PyObject_GetAttr", owner, self.obj(name))
        self.not_null(result)
        same = self.b.icmp_unsigned("==", result, self.obj(expected))
        self.call("Py_DecRef", result)
        self.check(same)

    def type_is(self, value: ir.Value, kind: type) -> ir.Value:
        slot = self.b.gep(value, [I64(TYPE_OFFSET)], source_etype=I8)
        return self.b.icmp_unsigned("==", self.b.load(slot, typ=PTR), self.obj(kind))

    def equal(self, value: ir.Value, expected: Any) -> None:
        result = self.call("PyObject_RichCompareBool", value, self.obj(expected), I32_T(PY_EQ))
        self.check(self.b.icmp_signed("==", result, I32_T(1)))

    def method(self, value: ir.Value, name: str, convert: str) -> ir.Value:
        self.b.store(value, self.self_slot)
        result = self.call("PyObject_VectorcallMethod", self.obj(name), self.self_slot, I64(1),
                           ir.Constant(PTR, None))  # fmt: skip
        return self.new_ref_value(result, convert)

    # ----------------------------------------------------------------- function
    def function(self, shape: CallShape) -> str:
        positional, slots, options = shape.positional, shape.slots, shape.options
        fn = ir.Function(self.module, ir.FunctionType(PTR, [PTR, PTR, I64]), self.name)
        _self, vector, count = fn.args
        entry = fn.append_basic_block("entry")
        self.miss_block = fn.append_basic_block("miss")
        self.b = b = ir.IRBuilder(entry)
        slot_array = b.alloca(I64, size=I64(max(slots, 1)))
        pointers = b.alloca(I64, size=I64(max(slots, 1)))  # kernelParams: the slots' addresses
        self.self_slot = b.alloca(PTR)
        self.check(b.icmp_signed("==", count, I64(3)))
        grid_value, args_value, meta = (
            b.load(b.gep(vector, [I64(i)], source_etype=PTR), typ=PTR) for i in range(3)
        )
        self.state_guards(shape.state, shape.globals_read)
        # the keywords: exactly the recorded ones, with equal values
        size = self.call("PyDict_Size", meta)
        has_stream = b.icmp_signed("==", size, I64(len(options) + 1))  # `stream=` besides
        self.check(b.or_(b.icmp_signed("==", size, I64(len(options))), has_stream))
        for key, expected in options.items():
            item = self.call("PyDict_GetItemWithError", meta, self.obj(key))
            self.not_null(item)
            self.equal(item, expected)
        # the positional arguments
        self.check(b.icmp_signed("==", self.call("PyTuple_Size", args_value), I64(len(positional))))
        for i, described in enumerate(positional):
            item = self.call("PyTuple_GetItem", args_value, I64(i))
            self.not_null(item)
            if described[0] == "constexpr":
                self.equal(item, described[1])
                continue
            if described[0] == "is":
                self.check(b.icmp_unsigned("==", item, self.obj(described[1])))
                continue
            _, kind, slot = described
            value = self.argument(item, kind)
            if slot is None:
                continue
            at = b.gep(slot_array, [I64(slot)])
            b.store(value, at)
            b.store(b.ptrtoint(at, I64), b.gep(pointers, [I64(slot)]))
        x, y, z = self.grid(grid_value, shape.grid)
        stream = self.stream(meta, has_stream)
        self.launch(x, y, z, stream, pointers)
        self.call("Py_IncRef", self.obj(self.compiled))
        b.ret(self.obj(self.compiled))
        b.position_at_end(self.miss_block)
        self.call("PyErr_Clear")
        self.call("Py_IncRef", self.obj(self.miss))
        b.ret(self.obj(self.miss))
        return str(self.module)

    def state_guards(
        self, state: dict[str, Any], globals_read: Sequence[tuple[dict, str, Any]]
    ) -> None:
        """What the Python fast path checks of tilec's state: the module attributes in
        `state["attributes"]` ((module, name, value): the same object, or for ints an equal
        value), `state["false"]` ((module, name): falsy), the environment variable
        `state["env"]` (name, the C `getenv` value at build time or None), and the globals
        the kernel's cache key read (the very objects)."""
        for module, name, value in state["attributes"]:
            if type(value) is not int:
                self.attribute_is(self.obj(module), name, value)
                continue
            result = self.call("PyObject_GetAttr", self.obj(module), self.obj(name))
            number = self.new_ref_value(result, "PyLong_AsLongLong")
            self.check(self.b.icmp_signed("==", number, I64(value)))
        for module, name in state["false"]:
            result = self.call("PyObject_GetAttr", self.obj(module), self.obj(name))
            truth = self.new_ref_value(result, "PyObject_IsTrue")
            self.check(self.b.icmp_signed("==", truth, I32_T(0)))
        variable, value = state["env"]
        current = self.call("getenv", self.cstring(variable.encode()))
        if value is None:
            self.check(self.b.icmp_unsigned("==", current, ir.Constant(PTR, None)))
        else:
            self.not_null(current)
            same = self.call("strcmp", current, self.cstring(value))
            self.check(self.b.icmp_signed("==", same, I32_T(0)))
        for namespace, name, value in globals_read:
            item = self.call("PyDict_GetItemWithError", self.obj(namespace), self.obj(name))
            self.check(self.b.icmp_unsigned("==", item, self.obj(value)))

    def argument(self, item: ir.Value, kind: tuple) -> ir.Value:
        """The checked value of a runtime argument, as the i64 of its 8-byte slot."""
        b = self.b
        if kind[0] == "tensor":
            _, tensor_type, dtype, device, aligned = kind
            self.check(self.type_is(item, tensor_type))
            self.attribute_is(item, "dtype", dtype)
            index = self.method(item, "get_device", "PyLong_AsLongLong")
            self.check(b.icmp_signed("==", index, I64(device)))
            address = self.method(item, "data_ptr", "PyLong_AsUnsignedLongLong")
            low = b.and_(address, I64(15))
            self.check(b.icmp_unsigned("==" if aligned else "!=", low, I64(0)))
            return address
        if kind[0] == "int":
            _, is_one, multiple_of_16, in_i32 = kind
            self.check(self.type_is(item, int))
            value = self.call("PyLong_AsLongLong", item)
            self.no_error()
            one = b.icmp_signed("==", value, I64(1))
            self.check(one if is_one else b.not_(one))
            if not is_one:
                low = b.icmp_unsigned("==", b.and_(value, I64(15)), I64(0))
                self.check(low if multiple_of_16 else b.not_(low))
            inside = b.and_(
                b.icmp_signed(">=", value, I64(I32[0])), b.icmp_signed("<=", value, I64(I32[1]))
            )
            self.check(inside if in_i32 else b.not_(inside))
            return value
        _, precision = kind
        self.check(self.type_is(item, float))
        value = self.call("PyFloat_AsDouble", item)
        self.no_error()
        if precision == "fp64":
            return b.bitcast(value, I64)
        return b.zext(b.bitcast(b.fptrunc(value, F32), I32_T), I64)

    def grid(self, value: ir.Value, recorded: Any) -> tuple[ir.Value, ir.Value, ir.Value]:
        """The grid's three sizes: constants where `value` is the recorded tuple, else read from
        a tuple of 1 to 3 ints inside the device's limits (MISS otherwise)."""
        b = self.b
        limits = self.native.max_grid
        sizes = grid_sizes(recorded, limits)
        fast = b.append_basic_block("grid_recorded")
        read = b.append_basic_block("grid_read")
        done = b.append_basic_block("grid_done")
        if sizes is not None:
            b.cbranch(b.icmp_unsigned("==", value, self.obj(recorded)), fast, read)
        else:
            b.branch(read)
        b.position_at_end(fast)
        b.branch(done)
        b.position_at_end(read)
        self.check(self.type_is(value, tuple))
        length = self.call("PyTuple_Size", value)
        self.check(b.and_(b.icmp_signed(">=", length, I64(1)), b.icmp_signed("<=", length, I64(3))))
        read_sizes = []
        for d, limit in enumerate(limits):
            with b.if_else(b.icmp_signed(">", length, I64(d))) as (then, otherwise):
                with then:
                    item = self.call("PyTuple_GetItem", value, I64(d))
                    self.not_null(item)
                    self.check(self.type_is(item, int))
                    size = self.call("PyLong_AsLongLong", item)
                    self.no_error()
                    self.check(b.and_(b.icmp_signed(">", size, I64(0)),
                                      b.icmp_signed("<=", size, I64(limit))))  # fmt: skip
                    then_block = b.block
                with otherwise:
                    other_block = b.block
            merged = b.phi(I64)
            merged.add_incoming(size, then_block)
            merged.add_incoming(I64(1), other_block)
            read_sizes.append(b.trunc(merged, I32_T))
        read_end = b.block
        b.branch(done)
        b.position_at_end(done)
        result = []
        for d in range(3):
            phi = b.phi(I32_T)
            phi.add_incoming(I32_T(sizes[d] if sizes else 1), fast)
            phi.add_incoming(read_sizes[d], read_end)
            result.append(phi)
        return result[0], result[1], result[2]

    def stream(self, meta: ir.Value, has_stream: ir.Value) -> ir.Value:
        """The launch's stream handle: `stream=` where `meta` has it besides the recorded
        keywords (an int there, else MISS: the Python path reads other stream objects), else
        torch's current stream of the device."""
        native, b = self.native, self.b
        with b.if_else(has_stream) as (given, current):
            with given:
                item = self.call("PyDict_GetItemWithError", meta, self.obj("stream"))
                self.not_null(item)
                self.check(self.type_is(item, int))
                handle = self.call("PyLong_AsUnsignedLongLong", item)
                self.no_error()
                given_block = b.block
            with current:
                result = self.call("PyObject_Call", self.obj(native.current_stream),
                                   self.obj((native.ordinal,)), ir.Constant(PTR, None))  # fmt: skip
                torch_handle = self.new_ref_value(result, "PyLong_AsUnsignedLongLong")
                current_block = b.block
        merged = b.phi(I64)
        merged.add_incoming(handle, given_block)
        merged.add_incoming(torch_handle, current_block)
        return b.inttoptr(merged, PTR)

    def launch(
        self, x: ir.Value, y: ir.Value, z: ir.Value, stream: ir.Value, params: ir.Value
    ) -> None:
        """Several devices in use: MISS (the Python path enters the device's context). Else the
        driver's entry point, the GIL released around it; a failed call is a MISS, and the
        Python path launches again and reports the error."""
        native, b = self.native, self.b
        flag = self.call("PyList_GetItem", self.obj(native.several_devices), I64(0))
        self.not_null(flag)
        self.check(b.icmp_signed("==", self.call("PyObject_IsTrue", flag), I32_T(0)))
        entry = ir.Function(self.module, ir.FunctionType(*_ENTRY), entry_symbol(native.entry))
        saved = self.call("PyEval_SaveThread")
        bx, by, bz = native.block
        function = ir.Constant(I64, native.function)
        if native.one_wave_function:  # the one-wave kernel where the grid fits it
            programs = b.mul(b.mul(b.zext(x, I64), b.zext(y, I64)), b.zext(z, I64))
            fits = b.icmp_unsigned("<=", programs, I64(native.one_wave_programs))
            function = b.select(fits, I64(native.one_wave_function), function)
        args = [b.inttoptr(function, PTR), x, y, z, I32_T(bx), I32_T(by), I32_T(bz),
                I32_T(native.shared), stream, params, ir.Constant(PTR, None)]  # fmt: skip
        result = b.call(entry, args)
        self.call("PyEval_RestoreThread", saved)
        self.check(b.icmp_signed("==", result, I32_T(0)))


def entry_symbol(address: int) -> str:
    """The JIT's name for a driver entry point (added to its symbols by `build`)."""
    return f"{_SYMBOL_PREFIX}entry_{address:x}"
