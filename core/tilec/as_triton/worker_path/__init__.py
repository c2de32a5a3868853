"""A folder for the `sys.path` of torch Inductor's compile workers (`tilec.as_triton.inductor`):
its `triton` package turns the alias on where a worker imports `triton`."""
