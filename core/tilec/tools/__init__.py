"""Host-side helpers of Triton's `triton.tools` (`tilec.tools.tensor_descriptor`)."""
