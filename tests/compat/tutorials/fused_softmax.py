"""Tutorial 02: fused softmax, one persistent program per group of rows (`tl.range` with a
`num_stages` hint, `tl.num_programs`). On a GPU the host code sizes the grid from the device's
properties and the compiled kernel's registers and shared memory, as the tutorial does; the
interpreter has no such properties (`driver.active.utils.get_device_properties` says so), so
there the grid is one program per row."""

import torch

import tilec as triton
import tilec.language as tl
from tilec.runtime import driver

DEVICE = triton.runtime.driver.active.get_active_torch_device()


@triton.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                   BLOCK_SIZE: tl.constexpr, num_stages: tl.constexpr):  # fmt: skip
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in tl.range(row_start, n_rows, row_step, num_stages=num_stages):
        row_start_ptr = input_ptr + row_idx * input_row_stride
        col_offsets = tl.arange(0, BLOCK_SIZE)
        input_ptrs = row_start_ptr + col_offsets
        mask = col_offsets < n_cols
        row = tl.load(input_ptrs, mask=mask, other=-float("inf"))
        row_minus_max = row - tl.max(row, axis=0)
        numerator = tl.exp(row_minus_max)
        denominator = tl.sum(numerator, axis=0)
        softmax_output = numerator / denominator
        output_row_start_ptr = output_ptr + row_idx * output_row_stride
        output_ptrs = output_row_start_ptr + col_offsets
        tl.store(output_ptrs, softmax_output, mask=mask)


def is_gpu():
    return driver.active.get_current_target().backend in ("cuda", "hip")


def softmax(x: torch.Tensor):
    n_rows, n_cols = x.shape
    BLOCK_SIZE = triton.next_power_of_2(n_cols)
    num_warps = 8
    num_stages = 2
    y = torch.empty_like(x)
    kernel = softmax_kernel.warmup(y, x, x.stride(0), y.stride(0), n_rows, n_cols,
                                   BLOCK_SIZE=BLOCK_SIZE, num_stages=num_stages,
                                   num_warps=num_warps, grid=(1,))  # fmt: skip
    kernel._init_handles()
    num_programs = n_rows
    if is_gpu():
        properties = driver.active.utils.get_device_properties(DEVICE.index)
        NUM_SM = properties["multiprocessor_count"]
        NUM_REGS = properties["max_num_regs"]
        SIZE_SMEM = properties["max_shared_mem"]
        WARP_SIZE = properties["warpSize"]
        n_regs = kernel.n_regs
        size_smem = kernel.metadata.shared
        occupancy = NUM_REGS // (n_regs * WARP_SIZE * num_warps)
        if size_smem:
            occupancy = min(occupancy, SIZE_SMEM // size_smem)
        num_programs = min(NUM_SM * max(occupancy, 1), n_rows)
    kernel[(num_programs, 1, 1)](y, x, x.stride(0), y.stride(0), n_rows, n_cols, BLOCK_SIZE,
                                 num_stages)  # fmt: skip
    return y
