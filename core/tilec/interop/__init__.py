"""Array interop and the launch path shared by the GPU drivers, vendor-neutral.

A vendor supplies primitives (`device.DeviceRuntime`: allocate, free, copy in and out,
synchronize, launch, the device's ordinal) and data (`device.DeviceKind`: its DLPack device types,
its name for errors); everything else is here, once:

- `dlpack`: reading DLPack capsules (`DLManagedTensor` and the versioned form) without consuming
  them (loaded when a capsule is read); `dlpack_devices`: DLPack's device types;
- `pointers`: launch arguments as device addresses (`DeviceArray`, torch tensors,
  `__cuda_array_interface__`, `__dlpack__`, ints, None) and their signature types;
- `copies`: NumPy arguments copied in and back (through a buffer pool), those that share host
  memory into one device buffer (`host_span` finds the memory each spans), and `run_kernel`;
- `device_array`: `DeviceArray` (`tilec.to_device`) and `to_host`;
- `gpu_driver`: `GpuDriver`, the `tilec.driver.Driver` of the GPU backends.
- `timing`: the timers of `tilec.testing.do_bench` (the host clock, and `EventTimer`, the base
  of a vendor runtime's device events);
- `torch_graphs`: timing through torch's graphs (`tilec.testing.do_bench_cudagraph`).

Nothing here imports a vendor library, and `import tilec` imports none of these modules.
"""
