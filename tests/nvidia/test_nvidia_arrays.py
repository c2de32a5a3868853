"""Array arguments (`tilec.interop`) on the NVIDIA backend, with host memory standing in for
device memory."""

from __future__ import annotations

import ctypes
import gc

import numpy as np
import pytest
from fake_cuda import HostDriver

import tilec
from tilec.interop import device_array
from tilec.interop.copies import finish_arguments, prepare_arguments, run_kernel
from tilec.interop.device_array import empty, to_device
from tilec.interop.dlpack import DLManagedTensor, DLManagedTensorVersioned, read_dlpack_capsule
from tilec.interop.pointers import arg_signature_type, device_pointer
from tilec_nvidia import driver as cuda
from tilec_nvidia.driver import CudaKernel, Packer


@pytest.fixture(autouse=True)
def host_driver():
    driver = HostDriver()
    cuda.reset_driver(driver)
    yield driver
    cuda.reset_driver(None)


def host_view(address: int, count: int, dtype=np.float32) -> np.ndarray:
    """The `count` elements at `address` ("device" memory is host memory here)."""
    buffer = (ctypes.c_char * (count * np.dtype(dtype).itemsize)).from_address(address)
    return np.frombuffer(buffer, dtype=dtype)


# DeviceArray -----------------------------------------------------------------------------------


def test_to_device_and_back(host_driver, rng):
    host = rng.standard_normal((3, 5)).astype(np.float32)
    device = to_device(host_driver, host)
    assert device.shape == (3, 5) and device.dtype == np.float32
    assert device.size == 15 and device.nbytes == 60 and len(device) == 3 and device.ndim == 2
    assert device.strides == host.strides
    np.testing.assert_array_equal(device.numpy(), host)
    np.testing.assert_array_equal(host_view(device.ptr, 15).reshape(3, 5), host)


def test_cuda_array_interface(host_driver):
    device = empty(host_driver, (4, 2), np.int16)
    interface = device.__cuda_array_interface__
    assert interface == {
        "shape": (4, 2),
        "typestr": "<i2",
        "data": (device.ptr, False),
        "version": 3,
        "strides": None,
    }


def test_copy_from_checks_the_shape(host_driver, rng):
    device = empty(host_driver, 8, np.float64)
    values = rng.standard_normal(8)
    assert device.copy_from(values) is device
    np.testing.assert_array_equal(device.numpy(), values)
    with pytest.raises(ValueError, match=r"shape \(9,\) != \(8,\)"):
        device.copy_from(np.zeros(9))


def test_device_array_is_freed(host_driver):
    device = empty(host_driver, 1000)
    address = device.ptr
    assert address in host_driver.live
    del device
    gc.collect()
    assert address not in host_driver.live
    explicit = empty(host_driver, 10)
    explicit.free()
    explicit.free()  # twice is fine
    with pytest.raises(ValueError, match="freed"):
        explicit.numpy()


def test_a_freed_device_array_refuses_every_use_of_its_address(host_driver):
    """A FreedArrayError (a ValueError, as before) for its copies, its interface (what CuPy or
    torch would read), a host copy for check=True and the pointer getters, each naming the use;
    nothing reaches the driver."""
    array = to_device(host_driver, np.arange(10, dtype=np.float32))
    array.free()
    assert array.ptr is None
    assert repr(array) == "DeviceArray(shape=(10,), dtype=float32, freed, nvidia)"
    freed = "the DeviceArray of shape (10,) and dtype float32 was freed (DeviceArray.free())"
    uses = [
        ("DeviceArray.numpy(): ", array.numpy),
        ("DeviceArray.copy_from(): ", lambda: array.copy_from(np.zeros(10))),
        ("", lambda: array.__cuda_array_interface__),
        ("DeviceArray.numpy(): ", lambda: device_array.to_host(host_driver, array)),
        ("argument 'x' of k: ", lambda: device_pointer(host_driver, array, "x", "k")),
        ("argument 'y' of k: ", lambda: arg_signature_type(host_driver, array, "y", "k")),
    ]
    syncs = host_driver.syncs
    for use, call in uses:
        with pytest.raises(tilec.FreedArrayError) as info:
            call()
        assert isinstance(info.value, ValueError) and isinstance(info.value, tilec.TilecError)
        assert str(info.value).startswith(use + freed), str(info.value)
        assert "make a new one (tilec.to_device)" in str(info.value)
    assert host_driver.syncs == syncs


def test_device_array_rejects_bad_dtypes_and_shapes(host_driver):
    with pytest.raises(TypeError, match="unsupported dtype"):
        empty(host_driver, 3, np.complex64)
    with pytest.raises(ValueError, match="negative"):
        empty(host_driver, (2, -1))
    with pytest.raises(TypeError, match="0-d"):
        len(empty(host_driver, ()))


# Pointers and signature types ------------------------------------------------------------------


class CaiArray:
    def __init__(self, address: int, typestr: str = "<f4"):
        self.__cuda_array_interface__ = {
            "shape": (4,),
            "typestr": typestr,
            "data": (address, False),
            "version": 3,
        }


def test_device_pointers(host_driver):
    device = empty(host_driver, 4)
    assert device_pointer(host_driver, device, "x") == device.ptr
    assert device_pointer(host_driver, CaiArray(0x1000), "x") == 0x1000
    assert device_pointer(host_driver, 0x2000, "x") == 0x2000
    assert device_pointer(host_driver, None, "x") == 0
    with pytest.raises(TypeError, match="argument 'x' of k: cannot pass a str"):
        device_pointer(host_driver, "nope", "x", "k")
    with pytest.raises(TypeError, match="cannot pass a bool"):
        device_pointer(host_driver, True, "x")


def test_arg_signature_types(host_driver):
    assert arg_signature_type(host_driver, np.zeros(4, np.float32)) == ("*fp32", True)
    assert arg_signature_type(host_driver, np.zeros(4, np.bool_))[0] == "*i1"
    assert arg_signature_type(host_driver, empty(host_driver, 4, np.uint8)) == ("*u8", True)
    assert arg_signature_type(host_driver, CaiArray(0x1000, "<f2")) == ("*fp16", True)
    assert arg_signature_type(host_driver, CaiArray(0x1004, "<i8")) == ("*i64", False)
    with pytest.raises(TypeError, match=r"argument 'p'.*not an array"):
        arg_signature_type(host_driver, 3, "p")


# DLPack ----------------------------------------------------------------------------------------

_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_capsule_new.restype = ctypes.py_object


class FakeProducer:
    """A CUDA array that speaks only DLPack, built with ctypes (its capsules own nothing)."""

    def __init__(self, data, *, device=(2, 0), code=2, bits=32, offset=0, versioned=True):
        self.shape = (ctypes.c_int64 * 2)(3, 4)
        self.strides = (ctypes.c_int64 * 2)(4, 1)
        self.device = device
        self.versioned = versioned
        self.managed = DLManagedTensor()
        self.managed_versioned = DLManagedTensorVersioned()
        self.managed_versioned.version.major = 1
        self.managed_versioned.flags = 1  # read-only
        for tensor in (self.managed.dl_tensor, self.managed_versioned.dl_tensor):
            tensor.data = data
            tensor.device.device_type, tensor.device.device_id = device
            tensor.ndim = 2
            tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes = code, bits, 1
            tensor.shape = self.shape
            tensor.strides = self.strides
            tensor.byte_offset = offset
        self.requests = []

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, *, stream=None, max_version=None):
        self.requests.append((stream, max_version))
        if max_version is not None and self.versioned:
            address = ctypes.addressof(self.managed_versioned)
            return _capsule_new(address, b"dltensor_versioned", None)
        return _capsule_new(ctypes.addressof(self.managed), b"dltensor", None)


class OldProducer(FakeProducer):
    def __dlpack__(self, *, stream=None):  # before DLPack 1.0: no max_version
        return super().__dlpack__(stream=stream)


@pytest.mark.parametrize("versioned", [True, False])
def test_dlpack_capsule_is_read(versioned):
    producer = FakeProducer(0x10000, code=4, bits=16, offset=64, versioned=versioned)
    tensor = read_dlpack_capsule(producer.__dlpack__(max_version=(1, 0)))
    assert tensor.data == 0x10000 + 64
    assert (tensor.device_type, tensor.device_id) == (2, 0)
    assert tensor.shape == (3, 4) and tensor.strides == (4, 1)
    assert tensor.element_type == "bf16"
    assert tensor.read_only is versioned


def test_dlpack_pointer_and_type(host_driver):
    producer = FakeProducer(0x20000)
    assert device_pointer(host_driver, producer, "x", "k", stream=0) == 0x20000
    assert producer.requests[-1] == (1, (1, 0))  # the default stream is 1 in DLPack
    assert arg_signature_type(host_driver, producer) == ("*fp32", True)
    assert arg_signature_type(host_driver, FakeProducer(0x20000, code=4, bits=16)) == (
        "*bf16",
        True,
    )
    old = OldProducer(0x30008)
    assert device_pointer(host_driver, old, "x") == 0x30008
    assert arg_signature_type(host_driver, old) == ("*fp32", False)


@pytest.mark.parametrize(
    ("device", "where"), [((1, 0), "cpu:0"), ((2, 1), "cuda:1"), ((10, 0), "rocm:0")]
)
def test_dlpack_on_another_device_names_param_and_device(host_driver, device, where):
    producer = FakeProducer(0x20000, device=device)
    with pytest.raises(TypeError, match=f"argument 'x' of k lives on {where}"):
        device_pointer(host_driver, producer, "x", "k")


class NumpyOverDlpack:
    """Only the DLPack side of a NumPy array: a real producer (on the CPU)."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def test_numpy_capsules_are_read_without_being_consumed(host_driver, rng):
    array = rng.standard_normal((2, 3)).astype(np.float32)
    for capsule in (array.__dlpack__(), array.__dlpack__(max_version=(1, 0))):
        tensor = read_dlpack_capsule(capsule)
        assert tensor.data == array.ctypes.data
        assert tensor.device_type == 1 and tensor.shape == (2, 3)
        assert tensor.element_type == "fp32"
        read_dlpack_capsule(capsule)  # still unconsumed: the producer's destructor frees it
        del capsule
    with pytest.raises(TypeError, match="argument 'a' of k lives on cpu:0"):
        device_pointer(host_driver, NumpyOverDlpack(array), "a", "k")


def test_consumed_capsules_are_refused():
    with pytest.raises(TypeError, match="not an unconsumed DLPack capsule"):
        read_dlpack_capsule(object())


# NumPy arguments: copy in, copy back, pool -------------------------------------------------------

SIGNATURE = ("*fp32", "*fp32", "*fp32", "i32")
NAMES = ("x", "y", "out", "n")


def test_numpy_arrays_are_copied_in_and_written_ones_back(host_driver, rng):
    x, y = rng.standard_normal(64).astype(np.float32), rng.standard_normal(64).astype(np.float32)
    out = np.zeros(64, np.float32)
    x_before = x.copy()
    prepared = prepare_arguments(host_driver, "k", NAMES, SIGNATURE, [x, y, out, 64], written={2})
    px, py, pout, n = prepared.values
    assert n == 64
    np.testing.assert_array_equal(host_view(px, 64), x)
    host_view(pout, 64)[:] = host_view(px, 64) + host_view(py, 64)  # the "kernel"
    host_view(px, 64)[:] = 0  # a store to a parameter not declared written: not copied back
    finish_arguments(host_driver, prepared)
    np.testing.assert_array_equal(out, x + y)
    np.testing.assert_array_equal(x, x_before)
    assert host_driver.syncs >= 1


def test_device_buffers_are_pooled(host_driver):
    x = np.ones(100, np.float32)
    first = prepare_arguments(host_driver, "k", ("x",), ("*fp32",), [x])
    finish_arguments(host_driver, first)
    allocations = host_driver.allocations
    second = prepare_arguments(host_driver, "k", ("x",), ("*fp32",), [np.ones(120, np.float32)])
    assert second.values[0] == first.values[0]  # same size class: reused
    finish_arguments(host_driver, second)
    assert host_driver.allocations == allocations


@pytest.mark.parametrize("step", [2, -2])
def test_strided_numpy_views_are_copied_with_their_span_and_written_back(host_driver, step):
    """The kernel gets the address of element (0, 0) in a copy of the memory the view spans and
    addresses it with the view's real strides; the span is copied back (issue 11)."""
    base = np.arange(64, dtype=np.float32).reshape(8, 8)
    view = base[:, ::step]
    expected = base.copy()
    expected[:, ::step][2, 1] = -1.0
    prepared = prepare_arguments(host_driver, "k", ("y",), ("*fp32",), [view], written={0})
    (address,) = prepared.values
    row, col = view.strides[0] // 4, view.strides[1] // 4
    np.testing.assert_array_equal(host_view(address, 1), view[0, 0])
    np.testing.assert_array_equal(host_view(address + (3 * row + 3 * col) * 4, 1), view[3, 3])
    host_view(address + (2 * row + 1 * col) * 4, 1)[:] = -1.0  # the "kernel": view[2, 1] = -1
    finish_arguments(host_driver, prepared)
    np.testing.assert_array_equal(base, expected)


def test_read_only_written_arrays_are_refused(host_driver):
    frozen = np.zeros(4, np.float32)
    frozen.flags.writeable = False
    prepare_arguments(host_driver, "k", ("x",), ("*fp32",), [frozen])  # read: fine
    with pytest.raises(TypeError, match="argument 'x' of k is a read-only NumPy array"):
        prepare_arguments(host_driver, "k", ("x",), ("*fp32",), [frozen], written={0})


def test_argument_count_is_checked(host_driver):
    with pytest.raises(TypeError, match="k takes 4 arguments; got 2"):
        prepare_arguments(host_driver, "k", NAMES, SIGNATURE, [1, 2])


def test_run_kernel_with_mixed_arguments(host_driver, rng):
    x = rng.standard_normal(32).astype(np.float32)
    y = to_device(host_driver, rng.standard_normal(32).astype(np.float32))
    out = np.zeros(32, np.float32)

    def vector_add(px, py, pout, n):
        host_view(pout, n)[:] = host_view(px, n) + host_view(py, n)

    host_driver.on_launch = vector_add
    kernel = CudaKernel("vector_add", None, None, 0, Packer(SIGNATURE, NAMES), 16, 1024, 0, 0)
    run_kernel(host_driver, kernel, (1,), [x, y, out, 32], num_warps=4, written={2})
    np.testing.assert_allclose(out, x + y.numpy())
    assert host_driver.launches[-1][1] == (1,)
    assert host_driver.launches[-1][3][1] == y.ptr


def test_arguments_on_different_devices_are_named_together(host_driver):
    x, y = FakeProducer(0x20000, device=(2, 0)), FakeProducer(0x30000, device=(2, 1))
    out = FakeProducer(0x40000, device=(2, 0))
    with pytest.raises(
        TypeError, match=r"k are on different devices \('x' on cuda:0, 'y' on cuda:1, 'out' on"
    ):
        prepare_arguments(host_driver, "k", NAMES, SIGNATURE, [x, y, out, 4])
    host = FakeProducer(0x20000, device=(1, 0))
    with pytest.raises(TypeError, match="argument 'x' of k lives on cpu:0"):  # its own fix
        prepare_arguments(host_driver, "k", NAMES, SIGNATURE, [host, y, y, 4])
    one = FakeProducer(0x20000, device=(2, 1))
    with pytest.raises(TypeError, match="argument 'x' of k lives on cuda:1"):  # one device
        prepare_arguments(host_driver, "k", NAMES, SIGNATURE, [one, one, one, 4])
